"""The lowest `kubernetes` package gpuop supports (requirements.txt: kubernetes>=24.2.0), for real.

The pinned venv has kubernetes 37. This test makes a side venv with kubernetes 24.2.0 (cached in
~/.cache/gpuop/venv-kubernetes-24.2.0, from PyPI the first time), and runs gpuop's cluster modules
with that interpreter (ansible_python_interpreter) against the live test cluster: a server-side
apply, a read, a wait and a report. kubernetes < 35 has no ApiClient.param_serialize; gpuop uses
only the package's kubeconfig loader and Configuration, so the same code works on both.
"""

import json
import os
import subprocess
import sys
import uuid

import pytest

from gpuop_testlib import ROOT, ansible_env, run_module
from ansible_collections.gpuop.gates.plugins.module_utils import k8s as K8S

LOWEST = "24.2.0"
VENV = os.path.join(os.path.expanduser("~"), ".cache", "gpuop", "venv-kubernetes-%s" % LOWEST)
PYTHON = os.path.join(VENV, "bin", "python")


@pytest.fixture(scope="module")
def lowest_python():
    if not os.path.isfile(os.path.join(VENV, ".installed")):
        subprocess.run([sys.executable, "-m", "venv", "--clear", VENV], check=True)
        proc = subprocess.run([PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               "kubernetes==%s" % LOWEST, "PyYAML"], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, "pip install kubernetes==%s failed:\n%s" % (LOWEST, proc.stderr[-3000:])
        open(os.path.join(VENV, ".installed"), "w").close()
    version = subprocess.run([PYTHON, "-c", "import kubernetes; print(kubernetes.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == LOWEST
    return PYTHON


def test_requirement_names_the_lowest_version_tested():
    with open(os.path.join(ROOT, "requirements.txt")) as handle:
        lines = [l.strip() for l in handle if l.strip() and not l.startswith("#")]
    assert "kubernetes>=%s" % LOWEST in lines
    assert K8S.KUBERNETES_REQUIREMENT == "kubernetes>=%s" % LOWEST


def test_cluster_modules_work_with_the_lowest_kubernetes(lab_kubeconfig, lowest_python):
    name = "gpuop-k8s-lowest-%s" % uuid.uuid4().hex[:6]
    interpreter = {"ANSIBLE_PYTHON_INTERPRETER": lowest_python}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
          "data": {"k": "v"}}
    try:
        applied = run_module("k8s_apply", {"kubeconfig": lab_kubeconfig, "objects": [cm]}, env=interpreter)
        assert not applied.get("failed"), applied
        assert applied["changed"] is True
        assert applied["objects"][0]["result"] == "created", applied
        again = run_module("k8s_apply", {"kubeconfig": lab_kubeconfig, "objects": [cm],
                                         "read": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": name, "namespace": "default"}}]},
                           env=interpreter)
        assert again["changed"] is False, again
        assert again["read"][0]["data"] == {"k": "v"}
        # A bounded wait for a pod that does not exist ends on its bound, naming the pod.
        missing = run_module("pod_wait", {"kubeconfig": lab_kubeconfig, "namespace": "default",
                                          "name": name, "phase": "Running", "timeout": 1}, env=interpreter)
        assert missing.get("failed") and name in missing["msg"], missing
        # The interpreter really was the side venv's (the module reports nothing of it: ask it directly).
        proc = subprocess.run([lowest_python, "-c", "import sys; sys.path.insert(0, %r); "
                               "from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster; "
                               "import json; c = Cluster(%r); print(json.dumps(c.get('/version')))"
                               % (os.path.join(ROOT, ".collections"), lab_kubeconfig)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["gitVersion"].startswith("v1.")
    finally:
        subprocess.run([os.path.join(ROOT, ".venv", "bin", "python"), "-c",
                        "from kubernetes import client, config; "
                        "client.CoreV1Api(config.new_client_from_config(%r)).delete_namespaced_config_map(%r, 'default')"
                        % (lab_kubeconfig, name)], capture_output=True, check=False, env=ansible_env())
