"""node_twin's pure parts: what a twin's init and containerd shim say, and the parameters it refuses."""

import subprocess

import pytest

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import node_twin as nt
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def _params(**change):
    params = {"name": "gpu-twin-1", "state": "started", "dir": "/var/tmp/twins/gpu-twin-1", "port": 2201,
              "containerd": "/usr/bin/containerd", "main_config": "", "start_containerd": True, "wait_timeout": 30.0}
    params.update(change)
    return params


@pytest.mark.parametrize("change,message", [
    ({"name": "GPU_1"}, "must be a DNS label"),
    ({"name": "-x"}, "must be a DNS label"),
    ({"dir": "relative"}, "must be an absolute path"),
    ({"dir": "/etc/twins"}, "lies under /etc, which the twin covers"),
    ({"dir": "/var/lib/twins"}, "lies under /var/lib"),
    ({"port": 22}, "port=22 must be a free TCP port"),
    ({"port": None}, "port=null must be"),
])
def test_bad_parameters_are_refused(change, message):
    with pytest.raises(GpuopError, match=message):
        nt.validate(_params(**change))


def test_a_stopped_twin_needs_no_port():
    nt.validate(_params(state="stopped", port=None))


def test_the_init_overlays_the_four_folders_then_runs_sshd_on_localhost_with_keys_only():
    script = nt.start_script("gpu-twin-1", nt.paths("/v/t"), 2201)
    for folder in ("/etc", "/opt", "/run", "/var/lib"):
        assert "-o lowerdir=%s,upperdir=/v/t/confine/" % folder in script
    assert "hostname gpu-twin-1" in script
    last = script.strip().splitlines()[-1]
    assert last.startswith("exec /usr/sbin/sshd -D -e -p 2201 -o ListenAddress=127.0.0.1 -h /v/t/key/host")
    assert "-o PasswordAuthentication=no" in last and "-o AuthorizedKeysFile=/v/t/key/authorized_keys" in last
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0


def test_the_shim_is_valid_sh_and_finds_containerd_by_its_pid_file():
    shim = nt.shim_script("/opt/my bins/containerd")
    assert "CONTAINERD='/opt/my bins/containerd'" in shim and "PIDFILE=/run/gpuop-twin/containerd.pid" in shim
    assert "pidof" not in shim and "pkill" not in shim and "killall" not in shim
    assert subprocess.run(["sh", "-n"], input=shim, text=True).returncode == 0
