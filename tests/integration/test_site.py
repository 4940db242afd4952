"""site.yml end to end on the test cluster: a second run changes nothing and rewrites no byte."""

import hashlib
import os
import re
import stat
import subprocess

import pytest

from gpuop_testlib import ROOT, ansible_env


def _site(root, cluster):
    proc = subprocess.run(
        [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "site.yml",
         "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % cluster],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout)
    assert recap, proc.stdout[-2000:]
    return int(recap.group(2)), proc.stdout


def _snapshot(root):
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            assert stat.S_ISREG(os.lstat(path).st_mode), "%s is not a regular file (a socket left behind?)" % path
            with open(path, "rb") as handle:
                files[os.path.relpath(path, root)] = (hashlib.sha256(handle.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return files


@pytest.fixture(scope="module")
def site_root(lab_kubeconfig):
    """The test cluster's root: `make test` made the cluster there; site.yml runs the incident on it."""
    return os.path.dirname(lab_kubeconfig), os.environ.get("GPUOP_TEST_CLUSTER", "gpuop-test")


def test_second_site_run_changes_nothing(site_root):
    root, cluster = site_root
    _site(root, cluster)
    before = _snapshot(root)
    changed, out = _site(root, cluster)
    assert changed == 0, "second site.yml reported changed=%d:\n%s" % (changed, out[-4000:])
    after = _snapshot(root)
    assert after == before  # same files, same bytes, not even rewritten (same mtime)
    assert not [p for p in after if p.endswith(".tmp")], "temporary files left: %s" % sorted(after)


def test_outputs_hold_what_the_cluster_reported(site_root):
    root, _ = site_root
    out = os.path.join(root, "out")
    with open(os.path.join(out, "unscheduled.txt")) as handle:
        reason, message = handle.read().splitlines()
    assert reason == "Unschedulable"
    assert message.startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    with open(os.path.join(out, "node-gpu.txt")) as handle:
        assert [line.split() for line in handle.read().splitlines()] == [
            ["lab-node-0", "4"], ["lab-node-1", "0"], ["lab-node-2", "0"]]
    with open(os.path.join(out, "rollout.txt")) as handle:
        assert handle.read() == ("DESIRED=3\nUPDATED=1\nREADY=2\nOLD_IMAGE_PODS=2\nMAX_UNAVAILABLE=1\n"
                                 "BLOCKER=insufficient-memory\n")
    with open(os.path.join(out, "slots.txt")) as handle:
        assert handle.read() == ("PHYSICAL_GPUS=4\nREPLICAS=5\nADVERTISED=20\nVRAM_PER_GPU_GIB=40\n"
                                 "VRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=40\nISOLATION=none\n")


def test_steps_1_to_4_on_disk(site_root):
    """Steps 1-4's exact formats, read back with tomllib (never eyes)."""
    import stat
    import tomllib

    root, _ = site_root
    etc = os.path.join(root, "etc", "containerd")
    with open(os.path.join(etc, "config.toml"), "rb") as handle:
        main = tomllib.load(handle)
    assert main["version"] == 2
    assert os.path.join(etc, "conf.d", "*.toml") in main["imports"]
    cri = main["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert cri["default_runtime_name"] == "runc"
    assert cri["runtimes"]["runc"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    with open(os.path.join(etc, "conf.d", "99-nvidia.toml"), "rb") as handle:
        dropin = tomllib.load(handle)
    nvidia = dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"] == {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}
    with open(os.path.join(root, "out", "merge.txt")) as handle:
        assert handle.read() == ('MAIN_RUNTIMES=runc\nDROPIN_RUNTIMES=nvidia\nCONFLICT=yes\n'
                                 'CONFLICT_TABLE=plugins."io.containerd.grpc.v1.cri".containerd.runtimes\n'
                                 'LOADED_RUNTIMES=runc\n')
    script = os.path.join(root, "bin", "check-runtime.sh")
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o755
