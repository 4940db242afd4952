"""--check on the whole site.yml against a fresh cluster and root: it reports, it changes nothing.

The cluster is created for real first (check mode cannot start processes); then `site.yml --check
--diff` must leave the root with only what the cluster step wrote, and the cluster without any of
the lab's objects.
"""

import os
import re
import subprocess
import uuid

import pytest
from kubernetes import client, config

from gpuop_testlib import ROOT, ansible_env


def _playbook(playbook, root, cluster, *extra):
    proc = subprocess.run(
        [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), playbook,
         "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % cluster] + list(extra),
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)", proc.stdout)
    return int(recap.group(2)), proc.stdout


def _files(root):
    found = set()
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return found


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("check-root"))
    cluster = "check-%s" % uuid.uuid4().hex[:6]
    _playbook("playbooks/cluster.yml", root, cluster)
    yield root, cluster
    _playbook("playbooks/reset.yml", root, cluster)


def test_check_mode_on_a_fresh_root_and_cluster_changes_nothing(fresh):
    root, cluster = fresh
    before_files = _files(root)
    assert before_files == {"kubeconfig", ".gpuop-cluster-%s" % cluster}
    api = config.new_client_from_config(config_file=os.path.join(root, "kubeconfig"))
    core, node_api = client.CoreV1Api(api), client.NodeV1Api(api)
    before_nodes = {n.metadata.name: (n.status.capacity, n.status.allocatable) for n in core.list_node().items}

    changed, out = _playbook("site.yml", root, cluster, "--check", "--diff")

    assert changed > 0, "check mode must report what it would change"
    # Diff mode shows file and object changes.
    assert "+version = 2" in out
    assert "nvidia-container-runtime" in out
    assert "cuda-probe" in out
    # Nothing on disk.
    assert _files(root) == before_files
    # Nothing in the cluster.
    namespaces = {ns.metadata.name for ns in core.list_namespace().items}
    assert not {"gpu-lab", "gpu-operator"} & namespaces
    assert node_api.list_runtime_class().items == []
    after_nodes = {n.metadata.name: (n.status.capacity, n.status.allocatable) for n in core.list_node().items}
    assert after_nodes == before_nodes


def test_check_mode_after_a_real_run_reports_no_change(fresh):
    root, cluster = fresh
    _playbook("site.yml", root, cluster)
    changed, out = _playbook("site.yml", root, cluster, "--check")
    assert changed == 0, out[-4000:]
