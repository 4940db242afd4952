"""Bad input to the playbooks: one clear failure naming the variable, before anything is written or created.

Each run uses a fresh root and its own cluster name (fault-bad-*): the check is that the failure
comes first, so no file appears under the root and no kwok cluster of that name is created.
"""

import json
import os
import re
import shutil
import socket

import pytest
import yaml

import faultlib

# One variable of a wrong type (or value outside its choices) per role of site.yml.
WRONG_TYPES = [
    ("toolchain", {"toolchain_binaries": "etcd"}, r"toolchain_binaries"),
    ("kwok_cluster", {"kwok_cluster_wait_timeout": "soon"},
     r"argument 'kwok_cluster_wait_timeout' is of type str and we were unable to convert to int"),
    ("containerd_config", {"containerd_config_version": "two"},
     r"argument 'containerd_config_version' is of type str and we were unable to convert to int"),
    ("gpu_pod", {"gpu_pod_resource_count": "many"},
     r"argument 'gpu_pod_resource_count' is of type str and we were unable to convert to int"),
    ("node_advertisement", {"node_advertisement_quantity": "four"},
     r"argument 'node_advertisement_quantity' is of type str and we were unable to convert to int"),
    ("gpu_time_slicing", {"gpu_time_slicing_replicas": [5]},
     r"argument 'gpu_time_slicing_replicas' is of type list and we were unable to convert to int"),
    ("toolkit_rollout", {"toolkit_rollout_expect": "finished"},
     r"value of toolkit_rollout_expect must be one of: stalled, complete, got: finished"),
]


def _run_bad(fault_base, name, extra, playbook="site.yml"):
    cluster = "fault-bad-%s" % name.replace("_", "-")
    root = os.path.join(fault_base, cluster + "-root")
    faultlib.delete_cluster(cluster)
    shutil.rmtree(root, ignore_errors=True)
    try:
        one = faultlib.run(playbook, faultlib.site_vars(root, cluster, extra))
        created = os.path.isdir(os.path.join(faultlib.KWOK_HOME, cluster))
        written = sorted(os.listdir(root)) if os.path.isdir(root) else []
        return one, created, written
    finally:
        faultlib.delete_cluster(cluster)
        shutil.rmtree(root, ignore_errors=True)


def _last_error(one):
    errors = [line for line in one.lines if line.startswith("[ERROR]: ")]
    assert errors, one.tail(40)
    return errors[-1]


@pytest.mark.parametrize("role,extra,pattern", WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES])
def test_wrong_variable_type_fails_before_the_first_task(fault_base, role, extra, pattern):
    one, created, written = _run_bad(fault_base, role, extra)
    assert one.proc.returncode != 0
    error = _last_error(one)
    assert re.search(pattern, error), error
    assert "Traceback" not in one.stdout
    ran = [b[0] for b in one.banners if faultlib.role_of(b[0])]
    assert ran == [], "role tasks ran before the failure: %s" % ran
    assert not created and written == [], (created, written)
    print("%s: %s" % (json.dumps(extra), error))


@pytest.mark.parametrize("extra,pattern", [
    ({"gpuop_root": "relative/root"}, r'gpuop_root="relative/root" must be an absolute path'),
    ({"gpuop_cluster_name": "Not_A_Label"}, r'gpuop_cluster_name="Not_A_Label" is not a DNS label'),
    ({"gpuop_kubeconfig": "/nonexistent/kubeconfig"}, r'gpuop_kubeconfig="/nonexistent/kubeconfig" must be an existing file'),
], ids=["relative-root", "cluster-name", "missing-kubeconfig"])
def test_bad_lab_variables_fail_before_the_first_task(fault_base, extra, pattern):
    cluster_extra = dict(extra)
    one, created, written = _run_bad(fault_base, "lab", cluster_extra)
    assert one.proc.returncode != 0
    error = _last_error(one)
    assert re.search(pattern, error), error
    assert [b[0] for b in one.banners if faultlib.role_of(b[0])] == []
    assert not created and written == []
    assert not os.path.exists(os.path.join(faultlib.ROOT, "relative"))
    print("%s: %s" % (json.dumps(extra), error))


def test_kubeconfig_pointing_at_nothing_fails_before_steps_5_to_8_write(fault_base, tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "nowhere",
        "clusters": [{"name": "nowhere", "cluster": {"server": "https://127.0.0.1:%d" % port, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "nowhere", "user": {"token": "x"}}],
        "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nowhere"}}]}))
    one, created, written = _run_bad(fault_base, "nowhere", {"gpuop_kubeconfig": str(kubeconfig)}, "playbooks/kubernetes.yml")
    assert one.proc.returncode != 0
    error = _last_error(one)
    assert re.search(r"gpuop_kubeconfig=%s: its cluster does not answer: .*127\.0\.0\.1.*%d.*Connection refused"
                     % (re.escape(str(kubeconfig)), port), error), error
    assert [b[0] for b in one.banners if faultlib.role_of(b[0])] == []
    assert written == []
    print("kubeconfig at a closed port: %s" % error)


def test_missing_kubeconfig_fails_steps_5_to_8_before_they_write(fault_base):
    one, _, written = _run_bad(fault_base, "missing", {"gpuop_kubeconfig": "/nonexistent/kubeconfig"}, "playbooks/kubernetes.yml")
    assert one.proc.returncode != 0
    assert _last_error(one).endswith("gpuop_kubeconfig=/nonexistent/kubeconfig does not exist")
    assert written == []
