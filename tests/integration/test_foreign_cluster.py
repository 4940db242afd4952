"""The lab's roles that write to a cluster refuse one gpuop did not create, unless told.

gpuop's kwok_cluster role marks a cluster it creates: the file .gpuop-cluster-<name> beside the
kubeconfig whose current context is kwok-<name>. A copy of the test cluster's kubeconfig in another
folder has no marker beside it: as far as gpuop can tell, someone else's cluster.
"""

import os
import shutil
import subprocess

from gpuop_testlib import ROOT, ansible_env


def _kubernetes_yml(root, kubeconfig, *extra):
    argv = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "playbooks/kubernetes.yml",
            "-e", "gpuop_root=%s" % root, "-e", "gpuop_kubeconfig=%s" % kubeconfig,
            # Names no other test uses: were anything written, it would show under these.
            "-e", "gpu_pod_namespace=gpuop-foreign", "-e", "gpu_pod_runtime_class=gpuop-foreign"] + list(extra)
    return subprocess.run(argv, cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)


def _foreign_copy(lab_kubeconfig, tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    copy = folder / "kubeconfig"
    shutil.copy(lab_kubeconfig, str(copy))
    return str(copy)


def test_steps_on_a_cluster_gpuop_did_not_create_are_refused_before_any_write(lab_kubeconfig, k8s, tmp_path):
    core, _apps, _version = k8s
    theirs = _foreign_copy(lab_kubeconfig, tmp_path)
    root = tmp_path / "root"
    run = _kubernetes_yml(root, theirs)
    assert run.returncode == 2, run.stdout[-3000:]
    assert ("gpu_pod_kubeconfig=%s is of a cluster gpuop did not create (no kwok_cluster marker .gpuop-cluster-<name>"
            " beside it): this lab role writes there only with gpu_pod_allow_foreign_cluster: true" % theirs) in run.stdout, \
        run.stdout[-3000:]
    assert not root.exists(), "nothing written under gpuop_root"
    assert "gpuop-foreign" not in [ns.metadata.name for ns in core.list_namespace().items]


def test_the_kubeconfig_gpuop_wrote_beside_its_marker_is_accepted(lab_kubeconfig, tmp_path):
    run = _kubernetes_yml(tmp_path / "root", lab_kubeconfig, "--tags", "step5", "--check")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "did not create" not in run.stdout


def test_told_explicitly_the_lab_runs_on_a_foreign_cluster(lab_kubeconfig, tmp_path):
    run = _kubernetes_yml(tmp_path / "root", _foreign_copy(lab_kubeconfig, tmp_path), "-e",
                          "gpuop_allow_foreign_cluster=true", "--tags", "step5", "--check")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "did not create" not in run.stdout
