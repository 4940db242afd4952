"""Real containerd daemons (Debian's 1.6 and 2.x built from Go modules), confined, asked through their sockets.

Every observation comes from a running daemon (CRI Status, plugin status, RunPodSandbox) or from
the binary's own ``config dump``; expected values come from docs/facts.md and the case
table tests/fixtures/containerd/merge_cases.yml, never from the code under test. Every daemon is
stopped by its pid in a finalizer, also when a test fails. The last test proves that no host path
containerd writes by default was created or touched.

Needs root (mount namespaces), Debian's containerd and Go (the 2.x build is cached per pin). Fails
(does not skip) without them, unless GPUOP_ALLOW_NO_CONTAINERD=1.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_runtimes as cr
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_sandbox as sb
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from gpuop_testlib import ROOT, ansible_env, run_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_containerd_real import CASES, TABLE, cwd_of, materialize  # noqa: E402  (the case table's helpers)

NO_RUNC = 'no corresponding runtime configured in containerd.runtimes for containerd default_runtime_name = "runc"'
HOST_PATHS = ("/opt/containerd", "/etc/cni", "/run/nri", "/etc/containerd", "/run/containerd", "/var/lib/containerd")

_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.import_role:
        name: gpuop.gates.containerd_sandbox
    - ansible.builtin.copy:
        content: "{{ {'enabled': containerd_sandbox_enabled, 'why': containerd_sandbox_disabled_reason,
                      'bin_dir': containerd_sandbox_bin_dir | default(''),
                      'daemons': containerd_sandbox_daemons} | to_json }}"
        dest: "%(out)s"
        mode: "0600"
"""


def snapshot():
    """Existence, inode, mtime and ctime (ns) of each host path, and a listing of existing folders."""
    out = {}
    for path in HOST_PATHS:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            out[path] = None
            continue
        listing = sorted(os.listdir(path)) if os.path.isdir(path) else None
        out[path] = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, listing)
    return out


@pytest.fixture(scope="module")
def host_before():
    """Taken before any daemon of this module starts; compared by the last test."""
    return snapshot()


@pytest.fixture(scope="module")
def tools(host_before, tmp_path_factory):
    """The containerd versions the role finds or builds (the toolchain role, cached per pin)."""
    if os.geteuid() != 0:
        pytest.fail("the containerd sandbox needs root (mount namespaces)")
    if not os.path.exists("/usr/bin/containerd") and os.environ.get("GPUOP_ALLOW_NO_CONTAINERD") == "1":
        pytest.skip("/usr/bin/containerd absent and GPUOP_ALLOW_NO_CONTAINERD=1")
    folder = tmp_path_factory.mktemp("tools")
    out = folder / "tools.json"
    playbook = folder / "tools.yml"
    playbook.write_text(_PLAYBOOK % {"out": out})
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), str(playbook),
                           "-e", "containerd_sandbox_root=%s" % (folder / "root")],
                          cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = json.loads(out.read_text())
    assert found["enabled"], found["why"]
    daemons = {d["major"]: d for d in found["daemons"]}
    assert sorted(daemons) == [1, 2], "need containerd 1.x (Debian) and 2.x (built): %s" % found["daemons"]
    assert daemons[1]["version"].startswith("1.6.") and daemons[2]["version"].startswith("2.4.2")
    found["crictl"] = os.path.join(found["bin_dir"], "crictl")
    found["by_major"] = daemons
    return found


@pytest.fixture
def sandbox(tools, request):
    """start(major, config, cwd) -> params; each daemon stopped by its pid at the end, also on failure."""
    var_dir = tempfile.mkdtemp(prefix="gpuop-sbt-", dir="/tmp")
    started = []

    def stop_all():
        for params in started:
            sb.stop(params)
        shutil.rmtree(var_dir, ignore_errors=True)

    request.addfinalizer(stop_all)

    def start(major, config, cwd="/"):
        daemon = tools["by_major"][major]
        params = dict(name="containerd-%d" % major, var_dir=var_dir, config=config, containerd=daemon["containerd"],
                      ctr=daemon["ctr"], cwd=cwd, confine=["/etc", "/opt", "/run"], log_level="info", wait_timeout=30.0)
        started.append(params)
        sb.start(params)
        return params

    return start


def look(tools, params, config=None, probe=()):
    return cr.observe(dict(address=sb.paths(params["var_dir"], params["name"])["address"], config=config,
                           containerd=params["containerd"], ctr=params["ctr"], crictl=tools["crictl"],
                           cwd=params["cwd"], wait_timeout=30.0, probe_handlers=list(probe)))


def _seed(tmp):
    """The lab's two files (the case table's seed pair), the drop-in held back."""
    case = next(c for c in TABLE["cases"] if c["name"] == "seed-pair")
    config = materialize(case, tmp)
    dropin = os.path.join(os.path.dirname(config), "conf.d", "99-nvidia.toml")
    held = os.path.join(str(tmp), "99-nvidia.toml.held")
    os.rename(dropin, held)
    return config, dropin, held


@pytest.mark.parametrize("major", [1, 2])
def test_incident_sequence(major, tools, sandbox):
    short = tempfile.mkdtemp(prefix="gpuop-lab-", dir="/tmp")
    try:
        config, dropin, held = _seed(short)
        params = sandbox(major, config)
        # 1. The main file alone: runc is loaded; a restart would load runc.
        seen = look(tools, params, config, probe=["nvidia"])
        assert seen["loaded"]["cri_loaded"] and seen["loaded"]["runtimes"] == ["runc"]
        assert seen["loaded"]["containerd_version"] == tools["by_major"][major]["version"]
        assert seen["after_restart"]["runtimes"] == ["runc"]
        refusal = seen["probes"][0]["message"]
        if major == 1:
            assert refusal == 'rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured'
        else:
            assert refusal.startswith('rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "')
            assert refusal.endswith('": no runtime for "nvidia" is configured')
        record = sb.running(sb.paths(params["var_dir"], params["name"]))
        # containerd wrote its default host paths, inside its own mount namespace only.
        inside = sb.confined_writes(record["pid"], params["confine"])
        assert "/opt/containerd" in inside and all(not os.path.exists(p) for p in inside)
        if major == 2:
            assert {"/etc/cni", "/run/nri"} <= set(inside)
        # 2. The drop-in appears: still runc loaded; config dump already shows nvidia.
        os.rename(held, dropin)
        seen = look(tools, params, config, probe=["nvidia"])
        assert seen["loaded"]["cri_loaded"] and seen["loaded"]["runtimes"] == ["runc"]
        assert "no runtime for \"nvidia\" is configured" in seen["probes"][0]["message"]
        after = seen["after_restart"]
        if major == 1:
            assert (after["cri_plugin"], after["runtimes"], after["cri_loads"]) == ("io.containerd.grpc.v1.cri", ["nvidia"], False)
        else:
            assert (after["cri_plugin"], after["runtimes"], after["cri_loads"]) == ("io.containerd.cri.v1.runtime", ["nvidia", "runc"], True)
        # 3. Restart.
        sb.restart(params)
        seen = look(tools, params, config, probe=["nvidia"])
        loaded = seen["loaded"]
        if major == 1:
            assert not loaded["cri_loaded"] and loaded["runtimes"] == []
            assert loaded["plugin"] == "io.containerd.grpc.v1 cri"
            assert loaded["error"].startswith("invalid plugin config: ") and NO_RUNC in loaded["error"].replace("`", "")
            assert "code = Unimplemented desc = unknown service runtime.v1.RuntimeService" in loaded["crictl_error"]
            assert seen["probes"][0]["skipped"]
            with open(sb.paths(params["var_dir"], params["name"])["log"], encoding="utf-8") as handle:
                assert "failed to load plugin io.containerd.grpc.v1.cri" in handle.read()
        else:
            assert loaded["cri_loaded"] and loaded["runtimes"] == ["nvidia", "runc"]
            assert sorted(h.get("name", "") for h in loaded["cri_runtime_handlers"]) == ["", "nvidia", "runc"]
            assert seen["probes"][0]["skipped"]
        pid = sb.running(sb.paths(params["var_dir"], params["name"]))["pid"]
        assert sb.stop(params)[0] is True
        assert sb.proc_start_time(pid) is None and sb.running(sb.paths(params["var_dir"], params["name"])) is None
    finally:
        shutil.rmtree(short, ignore_errors=True)


# Predictions known to disagree with a daemon, as strict xfails (an XPASS fails the run once fixed).
# Empty since containerd_merge models 2.4.2's migration of a drop-in of a higher version.
KNOWN_WRONG = {}


def _case_params():
    out = []
    for case in CASES:
        for major in (1, 2):
            marks = ()
            if (case["name"], major) in KNOWN_WRONG:
                marks = pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[(case["name"], major)])
            out.append(pytest.param(case, major, marks=marks, id="%s-%s" % (case["name"], major)))
    return out


@pytest.mark.parametrize("case, major", _case_params())
def test_merge_prediction_agrees_with_the_daemon(case, major, tools, sandbox, tmp_path):
    """containerd_merge's prediction against a daemon started on each case's files (and 2.x's config dump)."""
    short = tempfile.mkdtemp(prefix="gpuop-case-", dir="/tmp")
    try:
        config = materialize(case, short)
        cwd = cwd_of(case, short)
        predicted = containerd_merge.analyze(config, cwd, case["loaded_runtimes"])["predicted"]["containerd_%d" % major]
        want = case["containerd_%d" % major]
        try:
            params = sandbox(major, config, cwd)
        except GpuopError as exc:
            # The daemon refused the files: the table and the prediction said so.
            assert want["error"] and want["error"] in exc.msg.replace("`", ""), exc.msg
            assert predicted["cri_loads"] is False and want["error"] in predicted["error"]
            return
        seen = look(tools, params, config)
        loaded, after = seen["loaded"], seen["after_restart"]
        # The daemon agrees with the table (the facts) ...
        assert loaded["cri_loaded"] is want["cri_loads"], loaded
        assert loaded["runtimes"] == (sorted(want["runtimes"]) if want["cri_loads"] else [])
        if not want["cri_loads"]:
            assert want["error"] in loaded["error"].replace("`", "")
        # ... and the prediction agrees with the daemon.
        assert predicted["cri_loads"] is loaded["cri_loaded"]
        assert (predicted["runtimes"] if predicted["cri_loads"] else []) == loaded["runtimes"]
        if not loaded["cri_loaded"]:
            assert predicted["error"] in loaded["error"].replace("`", "")
        if major == 2:
            # containerd 2.x's own config dump of the same files.
            assert after["runtimes"] == predicted["runtimes"] == sorted(want["runtimes"])
            assert after["default_runtime_name"] == predicted["default_runtime_name"]
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_modules_through_ansible(tools, tmp_path):
    """The containerd_sandbox module (role library) and containerd_runtimes, as tasks run them."""
    short = tempfile.mkdtemp(prefix="gpuop-mod-", dir="/tmp")
    env = {}
    daemon = tools["by_major"][2]
    args = dict(name="containerd-2", var_dir=os.path.join(short, "var"), containerd=daemon["containerd"],
                ctr=daemon["ctr"])
    try:
        config, _dropin, _held = _seed(short)
        args["config"] = config
        first = run_module("containerd_sandbox", args, env=env)
        assert first["changed"] is True and isinstance(first["pid"], int), first
        # The daemon outlived the module that started it; a second start changes nothing.
        again = run_module("containerd_sandbox", args, env=env)
        assert again["changed"] is False and again["pid"] == first["pid"]
        views = run_module("containerd_runtimes", dict(address=first["address"], config=config, containerd=daemon["containerd"],
                                                      ctr=daemon["ctr"], crictl=tools["crictl"], probe_handlers=["nvidia"]),
                           check=True, env=env)
        assert views["changed"] is False and views["loaded"]["runtimes"] == ["runc"]
        assert views["loaded"]["view"] == "loaded" and views["after_restart"]["view"] == "after-restart"
        assert views["loaded"]["containerd_version"] == views["after_restart"]["containerd_version"] == daemon["version"]
        assert views["probes"] == []  # check mode asks nothing that writes
        assert "loaded (containerd %s): runc" % daemon["version"] in views["msg"]
        stopped = run_module("containerd_sandbox", dict(args, state="stopped"), env=env)
        assert stopped["changed"] is True and sb.proc_start_time(first["pid"]) is None
        # absent: a running daemon is stopped and its stores go; the log stays; a second absent changes nothing.
        where = sb.paths(args["var_dir"], args["name"])
        started = run_module("containerd_sandbox", args, env=env)
        assert os.path.isdir(where["root"]) and os.path.isdir(where["state"])
        would = run_module("containerd_sandbox", dict(args, state="absent"), check=True, env=env)
        assert would["changed"] is True and sb.proc_start_time(started["pid"]) is not None
        gone = run_module("containerd_sandbox", dict(args, state="absent"), env=env)
        assert gone["changed"] is True and gone["pid"] is None and sb.proc_start_time(started["pid"]) is None
        assert not os.path.exists(where["root"]) and not os.path.exists(where["state"])
        assert os.path.isfile(where["log"])
        again = run_module("containerd_sandbox", dict(args, state="absent"), env=env)
        assert again["changed"] is False
    finally:
        sb.stop(dict(args, wait_timeout=30.0))
        shutil.rmtree(short, ignore_errors=True)


def test_zz_host_paths_untouched(host_before, tools):
    """Last: no host path containerd writes by default was created or touched by any daemon above."""
    assert snapshot() == host_before
