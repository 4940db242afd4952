"""The lab's steps 5-8 refuse a cluster gpuop did not create, unless told.

The test cluster was made by playbooks/cluster.yml under another gpuop_root: seen from a fresh root it
has no marker (gpuop_root/.gpuop-cluster-<name>), so it is someone else's cluster.
"""

import os
import subprocess

from gpuop_testlib import ROOT, ansible_env


def _kubernetes_yml(root, kubeconfig, *extra):
    argv = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "playbooks/kubernetes.yml",
            "-e", "gpuop_root=%s" % root, "-e", "gpuop_kubeconfig=%s" % kubeconfig,
            # Names no other test uses: were anything written, it would show under these.
            "-e", "gpu_pod_namespace=gpuop-foreign", "-e", "gpu_pod_runtime_class=gpuop-foreign"] + list(extra)
    return subprocess.run(argv, cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)


def test_steps_on_a_cluster_gpuop_did_not_create_are_refused_before_any_write(lab_kubeconfig, k8s, tmp_path):
    core, _apps, _version = k8s
    run = _kubernetes_yml(tmp_path, lab_kubeconfig)
    assert run.returncode == 2, run.stdout[-3000:]
    assert ("gpuop_kubeconfig=%s is a cluster gpuop did not create (no marker %s/.gpuop-cluster-gpuop)"
            % (lab_kubeconfig, tmp_path)) in run.stdout, run.stdout[-3000:]
    assert "-e gpuop_allow_foreign_cluster=true" in run.stdout
    assert os.listdir(str(tmp_path)) == [], "nothing written under gpuop_root"
    assert "gpuop-foreign" not in [ns.metadata.name for ns in core.list_namespace().items]


def test_told_explicitly_the_steps_run(lab_kubeconfig, tmp_path):
    run = _kubernetes_yml(tmp_path, lab_kubeconfig, "-e", "gpuop_allow_foreign_cluster=true", "--tags", "step5",
                          "--check")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "is a cluster gpuop did not create" not in run.stdout
