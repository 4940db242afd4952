"""containerd_moment: one moment of the walk, from each daemon's answers and both checks (fakes for the daemons).

The real daemons answer in tests/integration/test_containerd_sandbox.py and the site run; here the record's
shape and the checks' rules.
"""

import os
import stat

import pytest

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_moment as cm
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

DAEMONS = [{"name": "containerd-1", "major": 1, "version": "1.6.20~ds1", "containerd": "/usr/bin/containerd",
            "ctr": "/usr/bin/ctr", "address": "/v/containerd-1/containerd.sock", "wrapper_dir": "/v/containerd-1/bin"},
           {"name": "containerd-2", "major": 2, "version": "2.4.2", "containerd": "/b/containerd", "ctr": "/b/ctr",
            "address": "/v/containerd-2/containerd.sock", "wrapper_dir": "/v/containerd-2/bin"}]
MERGE = {"main_runtimes": ["runc"], "dropin_runtimes": ["nvidia"],
         "files": [{"path": "/r/config.toml"}, {"path": "/r/conf.d/99-nvidia.toml"}],
         "predicted": {"containerd_1": {"cri_loads": False}, "containerd_2": {"cri_loads": True}}}


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _params(tmp_path, step4=True):
    return {"moment": "2. drop-in written, not restarted", "daemons_read_files_now": False, "daemons": DAEMONS,
            "config": "/r/config.toml", "cwd": "/", "crictl": "/b/crictl", "wait_timeout": 5.0, "probe_handlers": ["nvidia"],
            "step4_check": _script(tmp_path / "check-runtime.sh", 'echo "PATH starts $(echo $PATH | cut -d: -f1)"; exit 0')
            if step4 else str(tmp_path / "none.sh"),
            "loaded_check": _script(tmp_path / "check-loaded.sh", 'echo "asked $1"; echo "a warning" >&2; exit 1'),
            "observations": [{"moment": "1. started on the main file alone"}]}


def test_a_moment_is_appended_with_each_daemons_answers_and_both_checks(tmp_path):
    asked = []

    def observe(params):
        asked.append(params)
        return {"loaded": {"runtimes": ["runc"]}, "after_restart": {"runtimes": ["nvidia", "runc"]}, "probes": []}

    out = cm.observe_moment(_params(tmp_path), observe_daemon=observe, predict=lambda config, daemon_cwd: MERGE)
    assert [o["moment"] for o in out] == ["1. started on the main file alone", "2. drop-in written, not restarted"]
    moment = out[-1]
    assert moment["daemons_read_files_now"] is False
    assert moment["written"] == {"main_runtimes": ["runc"], "dropin_runtimes": ["nvidia"],
                                 "files": ["/r/config.toml", "/r/conf.d/99-nvidia.toml"]}
    assert moment["predicted"] == MERGE["predicted"]
    assert [d["name"] for d in moment["daemons"]] == ["containerd-1", "containerd-2"]
    first = moment["daemons"][0]
    # Step 4's check ran with the daemon's wrapper first on PATH; the second check got the daemon's socket.
    assert first["checks"]["check-runtime.sh"] == {"rc": 0, "output": "PATH starts /v/containerd-1/bin"}
    assert first["checks"]["check-loaded-runtime.sh"] == {"rc": 1, "output": "asked /v/containerd-1/containerd.sock a warning"}
    assert [p["address"] for p in asked] == [d["address"] for d in DAEMONS]
    assert asked[0]["probe_handlers"] == ["nvidia"] and asked[0]["config"] == "/r/config.toml"


def test_without_step4s_script_its_check_is_none(tmp_path):
    out = cm.observe_moment(_params(tmp_path, step4=False),
                            observe_daemon=lambda p: {"loaded": None, "after_restart": None, "probes": []},
                            predict=lambda config, daemon_cwd: MERGE)
    assert [d["checks"]["check-runtime.sh"] for d in out[-1]["daemons"]] == [None, None]


@pytest.mark.parametrize("code", [0, 1, 2, 3])
def test_the_checks_answers(tmp_path, code):
    assert cm.run_check([_script(tmp_path / "c.sh", "echo out; exit %d" % code)]) == {"rc": code, "output": "out"}


@pytest.mark.parametrize("body,message", [
    ("echo broken >&2; exit 7", r"c\.sh exited 7 \(expected one of \[0, 1, 2, 3\]\): broken"),
])
def test_a_check_that_breaks_fails_the_moment(tmp_path, body, message):
    with pytest.raises(GpuopError, match=message):
        cm.run_check([_script(tmp_path / "c.sh", body)])


def test_a_check_that_cannot_run_is_named(tmp_path):
    with pytest.raises(GpuopError, match="could not run"):
        cm.run_check([os.path.join(str(tmp_path), "missing.sh")])
