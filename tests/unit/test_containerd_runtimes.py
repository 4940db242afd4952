"""Pure logic of containerd_runtimes, containerd_sandbox, containerd_sandbox_views and kwok_gate.

Inputs are what the real binaries printed (tests/fixtures/containerd_live, captured from Debian's
containerd 1.6.20 and containerd 2.4.2 built from Go modules, crictl v1.37.0); expected values come
from docs/facts.md, never from the code under test.
"""

import json
import os

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_runtimes as cr
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_sandbox as sb
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_sandbox_views as views
from ansible_collections.gpuop.gates.plugins.module_utils import kwok_gate
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(os.path.dirname(HERE), "fixtures", "containerd_live")
NO_RUNC = 'no corresponding runtime configured in containerd.runtimes for containerd default_runtime_name = "runc"'


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return handle.read()


# --------------------------------------------------------------------------------------------
# Parsers on real output
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, version", [
    ("containerd-version-1.6.txt", "1.6.20~ds1"),
    ("containerd-version-2.4.txt", "2.4.2+unknown"),
])
def test_binary_version(name, version):
    assert cr.parse_binary_version(fixture(name)) == version


@pytest.mark.parametrize("name, version", [
    ("ctr-version-1.6.txt", "1.6.20~ds1"),
    ("ctr-version-2.4.txt", "2.4.2+unknown"),
])
def test_server_version(name, version):
    assert cr.parse_server_version(fixture(name)) == version


@pytest.mark.parametrize("text", ["", "containerd", "Client:\n  Version: 1.6\n"])
def test_versions_refuse_garbage(text):
    with pytest.raises(GpuopError):
        cr.parse_binary_version(text)
    with pytest.raises(GpuopError):
        cr.parse_server_version(text)


@pytest.mark.parametrize("name, state, failing", [
    ("ctr-plugins-ok-1.6.txt", "ok", None),
    ("ctr-plugins-ok-2.4.txt", "ok", None),
    ("ctr-plugins-error-1.6.txt", "error", ("io.containerd.grpc.v1", "cri")),
])
def test_cri_state_from_plugins_ls(name, state, failing):
    assert cr.cri_state(cr.parse_plugins(fixture(name))) == (state, failing)


@pytest.mark.parametrize("rows, state, failing", [
    # 2.x: the runtime plugin fails and the gRPC service with it; the runtime plugin is the cause.
    ([{"type": "io.containerd.cri.v1", "id": "runtime", "status": "error"},
      {"type": "io.containerd.grpc.v1", "id": "cri", "status": "error"}], "error", ("io.containerd.cri.v1", "runtime")),
    ([{"type": "io.containerd.grpc.v1", "id": "cri", "status": "skip"}], "pending", None),
    ([{"type": "io.containerd.snapshotter.v1", "id": "devmapper", "status": "error"}], "absent", None),
])
def test_cri_state_table(rows, state, failing):
    assert cr.cri_state(rows) == (state, failing)


def test_plugin_error_message_is_containerd_1_6_s_own():
    message = cr.parse_plugin_error(fixture("ctr-plugins-detail-error-1.6.txt"))
    assert message.startswith("invalid plugin config: ")
    assert NO_RUNC in message.replace("`", "")


@pytest.mark.parametrize("name, runtimes, handlers", [
    ("crictl-info-1.6.json", ["runc"], None),
    ("crictl-info-2.4.json", ["runc"], ["", "runc"]),
])
def test_runtimes_from_crictl_info(name, runtimes, handlers):
    data = json.loads(fixture(name))
    assert cr.runtimes_from_info(data) == (runtimes, "runc")
    got = data.get("runtimeHandlers")
    assert (None if got is None else [h.get("name", "") for h in got]) == handlers


@pytest.mark.parametrize("name, plugin, runtimes, loads", [
    # The lab's two files: 1.x keeps only the drop-in's CRI section, 2.x merges.
    ("config-dump-1.6.toml", "io.containerd.grpc.v1.cri", ["nvidia"], False),
    ("config-dump-2.4.toml", "io.containerd.cri.v1.runtime", ["nvidia", "runc"], True),
])
def test_after_restart_from_config_dump(name, plugin, runtimes, loads):
    view = cr.runtimes_from_dump(fixture(name))
    assert (view["cri_plugin"], view["runtimes"], view["cri_loads"]) == (plugin, runtimes, loads)
    assert view["error"] is None if loads else NO_RUNC in view["error"]


def test_dump_without_cri_runtimes_is_an_error():
    with pytest.raises(GpuopError, match="no runtimes under"):
        cr.runtimes_from_dump('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n')
    with pytest.raises(GpuopError, match="malformed TOML"):
        cr.runtimes_from_dump("version = = 2")


@pytest.mark.parametrize("name, message", [
    ("crictl-runp-nvidia-1.6.stderr",
     'rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured'),
    ("crictl-info-cri-failed-1.6.stderr",
     "rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService"),
])
def test_rpc_message_from_crictl(name, message):
    assert kwok_gate.rpc_message(fixture(name)) == message


def test_rpc_message_2x_names_the_sandbox():
    got = kwok_gate.rpc_message(fixture("crictl-runp-nvidia-2.4.stderr"))
    assert got.startswith('rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "')
    assert got.endswith('": no runtime for "nvidia" is configured')


def test_sandbox_image_of_pull_error():
    assert cr.sandbox_image_of('failed to get sandbox image "registry.k8s.io/pause:3.6": failed to pull') == \
        "registry.k8s.io/pause:3.6"
    assert cr.sandbox_image_of('no runtime for "nvidia" is configured') is None


def test_observe_needs_a_view():
    with pytest.raises(GpuopError, match="give address"):
        cr.observe({"address": None, "config": None, "cwd": "/"})
    with pytest.raises(GpuopError, match="cwd must be an absolute path"):
        cr.observe({"address": None, "config": "/x", "cwd": "rel"})


def test_probe_refuses_a_loaded_handler_and_a_dead_cri(tmp_path):
    loaded = {"cri_loaded": True, "runtimes": ["nvidia", "runc"]}
    assert cr.probe("/nonexistent.sock", "ctr", "crictl", "nvidia", loaded, str(tmp_path))["skipped"]
    dead = {"cri_loaded": False, "runtimes": []}
    assert cr.probe("/nonexistent.sock", "ctr", "crictl", "nvidia", dead, str(tmp_path))["skipped"]
    with pytest.raises(GpuopError, match="not a runtime handler name"):
        cr.probe("/nonexistent.sock", "ctr", "crictl", "bad name", loaded, str(tmp_path))


# --------------------------------------------------------------------------------------------
# Sandbox inputs
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error", [
    (dict(name="bad name"), "name must be"),
    (dict(var_dir="relative/var"), "var_dir must be an absolute path"),
    (dict(var_dir="/tmp/a,b"), "var_dir must be an absolute path"),
    (dict(var_dir="/tmp/" + "x" * 90), "exceeds 107 bytes"),
    (dict(cwd="relative"), "cwd must be an absolute path"),
    (dict(confine=["/"]), "other than /"),
    (dict(var_dir="/run/gpuop/var"), "lies under the confined folder /run"),
    (dict(config="/etc/containerd/config.toml"), "config /etc/containerd/config.toml lies under the confined folder /etc"),
    (dict(confine=["/no/such/folder"]), "is not an existing folder"),
])
def test_sandbox_bad_input(kwargs, error):
    args = dict(name="containerd-1", var_dir="/tmp/gpuop-unit/var", config="/tmp/gpuop-unit/config.toml",
                containerd="/usr/bin/containerd", cwd="/", confine=["/etc", "/opt", "/run"], need_config=False)
    args.update(kwargs)
    with pytest.raises(GpuopError, match=error):
        sb.validate(**args)


def test_sandbox_launch_is_confined_and_private():
    where = sb.paths("/srv/lab/var", "containerd-2")
    argv = sb.daemon_argv("/bin/containerd", "/srv/lab/etc/containerd/config.toml", where)
    assert argv == ["/bin/containerd", "--config", "/srv/lab/etc/containerd/config.toml",
                    "--root", "/srv/lab/var/containerd-2/root", "--state", "/srv/lab/var/containerd-2/state",
                    "--address", "/srv/lab/var/containerd-2/containerd.sock", "--log-level", "info"]
    launch = sb.launch_argv(argv, "/", ["/etc", "/opt", "/run"], where)
    assert launch[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert launch[-len(argv):] == argv
    assert launch[launch.index("--") + 1:launch.index("--") + 4] == ["/etc", "/opt", "/run"]


# --------------------------------------------------------------------------------------------
# Views: predictions against the daemons
# --------------------------------------------------------------------------------------------

def _pred(runtimes, loads, error=None):
    return {"runtimes": runtimes, "cri_loads": loads, "error": error}


def _daemon(major, loaded, loaded_ok, after, after_ok, error=None):
    return {"name": "containerd-%d" % major, "major": major, "version": "%d.0" % major,
            "loaded": {"cri_loaded": loaded_ok, "runtimes": loaded, "error": error, "plugin": None},
            "after_restart": {"runtimes": after, "cri_loads": after_ok, "daemon_starts": True,
                              "default_runtime_name": "runc", "error": None},
            "probes": [], "checks": {"check-runtime.sh": None, "check-loaded-runtime.sh": {"rc": 1, "output": ""}}}


CRI_ERR = "invalid plugin config: " + NO_RUNC
# The incident as the facts tell it, both versions.
WALK = [
    {"moment": "1", "daemons_read_files_now": True, "written": {"main_runtimes": ["runc"], "dropin_runtimes": []},
     "predicted": {"containerd_1": _pred(["runc"], True), "containerd_2": _pred(["runc"], True)},
     "daemons": [_daemon(1, ["runc"], True, ["runc"], True), _daemon(2, ["runc"], True, ["runc"], True)]},
    {"moment": "2", "daemons_read_files_now": False, "written": {"main_runtimes": ["runc"], "dropin_runtimes": ["nvidia"]},
     "predicted": {"containerd_1": _pred(["nvidia"], False, CRI_ERR), "containerd_2": _pred(["nvidia", "runc"], True)},
     "daemons": [_daemon(1, ["runc"], True, ["nvidia"], False), _daemon(2, ["runc"], True, ["nvidia", "runc"], True)]},
    {"moment": "3", "daemons_read_files_now": True, "written": {"main_runtimes": ["runc"], "dropin_runtimes": ["nvidia"]},
     "predicted": {"containerd_1": _pred(["nvidia"], False, CRI_ERR), "containerd_2": _pred(["nvidia", "runc"], True)},
     "daemons": [_daemon(1, [], False, ["nvidia"], False,
                         error="invalid plugin config: no corresponding runtime configured in `containerd.runtimes` "
                               "for `containerd` `default_runtime_name = \"runc\""),
                 _daemon(2, ["nvidia", "runc"], True, ["nvidia", "runc"], True)]},
]


def test_views_agree_on_the_incident():
    rows = views.compare(WALK)
    assert len(rows) == 12
    assert [r for r in rows if not r["agree"]] == []
    assert views.loaded_before_restart(WALK, 1) == ["runc"]
    assert views.loaded_before_restart(WALK, 2) == ["runc"]


@pytest.mark.parametrize("moment, daemon, field, value, view", [
    # A 1.x daemon that loaded nvidia after the restart: the prediction (CRI fails) failed.
    (2, 0, "loaded", {"cri_loaded": True, "runtimes": ["nvidia"], "error": None, "plugin": None}, "loaded (daemon)"),
    # config dump showing runc too on 1.x: the 1.x merge prediction failed.
    (1, 0, "after_restart", {"runtimes": ["nvidia", "runc"], "cri_loads": True, "daemon_starts": True,
                             "default_runtime_name": "runc", "error": None}, "after-restart (config dump)"),
    # A 2.x daemon whose loaded set did not change after the restart.
    (2, 1, "loaded", {"cri_loaded": True, "runtimes": ["runc"], "error": None, "plugin": None}, "loaded (daemon)"),
])
def test_views_show_a_failed_prediction(moment, daemon, field, value, view):
    walk = json.loads(json.dumps(WALK))
    walk[moment]["daemons"][daemon][field] = value
    rows = views.compare(walk)
    failed = [r for r in rows if not r["agree"]]
    assert [(r["moment"], r["view"]) for r in failed] == [(walk[moment]["moment"], view)]
    report = views.render(walk, "/lab/config.toml", "/", rows)
    assert "**PREDICTION FAILED**" in report and "11 of 12 predictions agree with the daemons; 1 FAILED." in report


def test_views_report_quotes_backticks_safely():
    report = views.render(WALK, "/lab/config.toml", "/", views.compare(WALK))
    assert '`` invalid plugin config: no corresponding runtime configured in `containerd.runtimes`' in report
    assert report.count("## containerd ") == 2


# --------------------------------------------------------------------------------------------
# The gate: handlers published, pairs blocked, stages complementary
# --------------------------------------------------------------------------------------------

def _loaded(ok, runtimes, handlers=None, error=None, crictl_error=None):
    return {"cri_loaded": ok, "runtimes": runtimes, "cri_runtime_handlers": handlers, "error": error,
            "crictl_error": crictl_error}


def test_node_handlers_as_a_kubelet_writes_them():
    info = json.loads(fixture("crictl-info-2.4.json"))
    handlers, source = kwok_gate.node_handlers(_loaded(True, ["runc"], info["runtimeHandlers"]))
    assert [h["name"] for h in handlers] == ["", "runc"] and source.startswith("CRI Status runtime_handlers")
    assert all(set(h["features"]) == {"recursiveReadOnlyMounts", "userNamespaces"} for h in handlers)
    handlers, source = kwok_gate.node_handlers(_loaded(True, ["runc"]))
    assert [h["name"] for h in handlers] == ["runc"] and "1.x reports no runtime_handlers" in source
    assert kwok_gate.node_handlers(_loaded(False, [], error="x"))[0] == []


NODES = [
    {"name": "n1", "loaded": _loaded(True, ["runc"]),
     "probes": [{"handler": "nvidia", "message": 'rpc error: code = Unknown desc = no runtime for "nvidia" is configured'}]},
    {"name": "n2", "loaded": _loaded(True, ["nvidia", "runc"]), "probes": []},
    {"name": "n3", "loaded": _loaded(False, [], error="invalid plugin config",
                                     crictl_error=fixture("crictl-info-cri-failed-1.6.stderr")), "probes": []},
]


def test_blocked_pairs_carry_containerd_s_words():
    blocked = kwok_gate.blocked_pairs(NODES, {"nvidia": "nvidia"})
    assert blocked == {
        "nvidia@n1": 'Failed to create pod sandbox: rpc error: code = Unknown desc = no runtime for "nvidia" is configured',
        "@n3": "Failed to create pod sandbox: rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService",
        "nvidia@n3": "Failed to create pod sandbox: rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService",
    }


def test_blocked_pair_without_a_probe_is_an_error():
    with pytest.raises(GpuopError, match="no RunPodSandbox probe answered"):
        kwok_gate.blocked_pairs([dict(NODES[0], probes=[])], {"nvidia": "nvidia"})


def _defaults():
    stage_dir = os.environ.get("GPUOP_KWOK_STAGE_DIR") or os.path.expanduser(
        "~/go/pkg/mod/sigs.k8s.io/kwok@v0.8.0/kustomize/stage")
    if not os.path.isdir(stage_dir):
        pytest.fail("kwok's stages are not in the Go module cache (%s): build the toolchain first" % stage_dir)
    return kwok_gate.load_defaults(stage_dir)


def _matches(expressions, pair, annotated):
    """Evaluate the gate's own selector keys for a pod pair or a node (the other keys are kwok's)."""
    for expr in expressions:
        if expr["key"] == kwok_gate.PAIR_KEY:
            inside = pair in expr["values"]
            if inside != (expr["operator"] == "In"):
                return False
        if expr["key"] == '.metadata.annotations["%s"]' % kwok_gate.CRI_ERROR:
            if annotated != (expr["operator"] == "Exists"):
                return False
    return True


@pytest.mark.parametrize("pair", ["nvidia@n1", "nvidia@n2", "@n1", "@n3", "nvidia@n3", "other@n1", "@"])
def test_pod_stages_partition_the_pods(pair):
    blocked = kwok_gate.blocked_pairs(NODES, {"nvidia": "nvidia"})
    pod_stages = [s for s in kwok_gate.stages(_defaults(), blocked)
                  if s["spec"]["resourceRef"]["kind"] == "Pod" and s["metadata"]["name"] not in ("pod-complete", "pod-delete")]
    matching = [s["metadata"]["name"] for s in pod_stages if _matches(s["spec"]["selector"]["matchExpressions"], pair, False)]
    assert len(matching) == 1, matching
    assert (matching[0] == "pod-ready") == (pair not in blocked)


@pytest.mark.parametrize("annotated", [True, False])
def test_node_stages_partition_the_nodes(annotated):
    node_stages = [s for s in kwok_gate.stages(_defaults(), {}) if s["spec"]["resourceRef"]["kind"] == "Node"]
    initial = [s["metadata"]["name"] for s in node_stages
               if _matches(s["spec"]["selector"]["matchExpressions"], None, annotated)
               and s["metadata"]["name"] != "node-heartbeat-with-lease"]
    assert initial == (["gpuop-gate-node-cri-down"] if annotated else ["node-initialize"])


def test_every_stage_is_gpuop_s_and_kwok_s_defaults_are_kept():
    defaults = _defaults()
    out = kwok_gate.stages(defaults, {"nvidia@n1": "m"})
    assert all(s["metadata"]["labels"][kwok_gate.GATE_LABEL] == "true" for s in out)
    by_name = {s["metadata"]["name"]: s for s in out}
    for name, original in defaults:
        kept = by_name[name]["spec"]
        # Only the CRD's own default (statusSubresource: status) is written out.
        assert kept["next"] == dict(original["spec"]["next"], statusSubresource="status")
        assert kept["selector"]["matchExpressions"][:len(original["spec"]["selector"]["matchExpressions"])] == \
            original["spec"]["selector"]["matchExpressions"]
    event = by_name["gpuop-gate-pod-n1-nvidia"]["spec"]["next"]["event"]
    assert event == {"type": "Warning", "reason": "FailedCreatePodSandBox", "message": "m"}


def test_empty_block_list_keeps_the_selector_valid():
    ready = next(s for s in kwok_gate.stages(_defaults(), {}) if s["metadata"]["name"] == "pod-ready")
    expr = ready["spec"]["selector"]["matchExpressions"][-1]
    assert expr["operator"] == "NotIn" and expr["values"] == [kwok_gate.NO_PAIR]


def test_bad_stage_dir(tmp_path):
    with pytest.raises(GpuopError, match="kustomize/stage folder"):
        kwok_gate.load_defaults(str(tmp_path))


# Words the real daemons printed in two walks of the same files (containerd 2.4.2's RunPodSandbox refusal,
# crictl's error against containerd 1.6 once its CRI plugin failed): only the id and the time stamp differ.
_WALK_A = {"probes": [{"message": 'rpc error: code = Unknown desc = unable to get OCI runtime for sandbox '
                                  '"7892aad8a557efe25ffa76ca44fe6549e51c6a85e689a8df7f02321b75a8a351": '
                                  'no runtime for "nvidia" is configured'}],
           "crictl_error": 'time="2026-12-02T20:05:41Z" level=error msg="validate service connection"'}
_WALK_B = {"probes": [{"message": 'rpc error: code = Unknown desc = unable to get OCI runtime for sandbox '
                                  '"f023fb62f2c7baf0230a4dc2e49604ac3dda4197c94e4613535bf44adbf8e982": '
                                  'no runtime for "nvidia" is configured'}],
           "crictl_error": 'time="2026-12-02T19:50:42Z" level=error msg="validate service connection"'}


def test_reports_of_two_walks_of_the_same_files_are_identical():
    assert views.stable(_WALK_A) == views.stable(_WALK_B) == {
        "probes": [{"message": 'rpc error: code = Unknown desc = unable to get OCI runtime for sandbox '
                               '"<sandbox-id>": no runtime for "nvidia" is configured'}],
        "crictl_error": 'level=error msg="validate service connection"'}
    assert views.stable({"n": 3, "ok": True, "none": None}) == {"n": 3, "ok": True, "none": None}


# --------------------------------------------------------------------------------------------
# require: the restarted daemon must have loaded the runtime (roles/nvidia_runtime's gate)
# --------------------------------------------------------------------------------------------

_CRI_ERROR_1_6 = ('invalid plugin config: no corresponding runtime configured in `containerd.runtimes` for '
                  '`containerd` `default_runtime_name = "runc"')


def _view(cri_loaded, runtimes, version, error=None):
    return {"view": "loaded", "containerd_version": version, "cri_loaded": cri_loaded, "runtimes": runtimes,
            "default_runtime_name": "runc" if cri_loaded else None, "error": error}


@pytest.mark.parametrize("view, name, subject, message", [
    # Loaded: nothing to say.
    (_view(True, ["nvidia", "runc"], "2.4.2+unknown"), "nvidia", "gpu-node-a: after the restart", None),
    (_view(True, ["nvidia.cdi", "runc"], "2.4.2"), "nvidia.cdi", None, None),
    # Nothing required: nothing to say, whatever the daemon loaded.
    (_view(False, [], "1.6.20~ds1", _CRI_ERROR_1_6), None, "gpu-node-a", None),
    # The daemon kept runc alone (2.x: the drop-in did not reach it).
    (_view(True, ["runc"], "2.4.2+unknown"), "nvidia", "gpu-node-c: after the restart",
     "gpu-node-c: after the restart containerd 2.4.2+unknown has loaded runc, not nvidia"),
    # The incident on 1.6: the CRI plugin failed, no handler at all, the plugin's own error.
    (_view(False, [], "1.6.20~ds1", _CRI_ERROR_1_6), "nvidia", "gpu-node-a: after the restart",
     "gpu-node-a: after the restart containerd 1.6.20~ds1 has loaded no runtime, not nvidia (CRI plugin: "
     + _CRI_ERROR_1_6 + ")"),
    # A CRI plugin that did not load but still listed handlers (never seen; the verdict is still no).
    (_view(False, ["nvidia", "runc"], "1.6.20", "plugin io.containerd.grpc.v1 cri: status error"), "nvidia", None,
     "containerd 1.6.20 has loaded nvidia,runc, not nvidia (CRI plugin: plugin io.containerd.grpc.v1 cri: status error)"),
    # A similar name is not the name.
    (_view(True, ["nvidia-cdi", "nvidia.legacy", "runc"], "2.4.2"), "nvidia", None,
     "containerd 2.4.2 has loaded nvidia-cdi,nvidia.legacy,runc, not nvidia"),
    # The message stays one line, whatever the error held.
    (_view(False, [], "1.6.20", "line one\nline two"), "nvidia", "n1",
     "n1 containerd 1.6.20 has loaded no runtime, not nvidia (CRI plugin: line one line two)"),
])
def test_require_verdict(view, name, subject, message):
    assert cr.missing_runtime(view, name, subject) == message


@pytest.mark.parametrize("params, error", [
    ({"address": "/run/containerd/containerd.sock", "require": "nvidia!"}, "require: 'nvidia!' is not a runtime name"),
    ({"address": "/run/containerd/containerd.sock", "require": ""}, "require: '' is not a runtime name"),
    ({"config": "/etc/containerd/config.toml", "require": "nvidia"}, "require needs address"),
])
def test_require_bad_input_is_refused_before_asking(params, error):
    with pytest.raises(GpuopError) as err:
        cr.observe(dict({"address": None, "config": None, "cwd": "/"}, **params))
    assert str(err.value).startswith(error)


def _fake_clients(folder, plugins, info):
    """ctr and crictl that answer as the real ones did (tests/fixtures/containerd_live) for one daemon."""
    os.makedirs(folder)
    ctr = os.path.join(folder, "ctr")
    crictl = os.path.join(folder, "crictl")
    with open(ctr, "w") as handle:
        handle.write('#!/bin/sh\ncase "$*" in\n'
                     '  *" -d "*) cat %s ;;\n'
                     '  *"plugins ls"*) cat %s ;;\n'
                     '  *version*) cat %s ;;\n'
                     '  *) exit 64 ;;\nesac\n' % (os.path.join(FIX, "ctr-plugins-detail-error-1.6.txt"),
                                                   os.path.join(FIX, plugins[0]), os.path.join(FIX, plugins[1])))
    with open(crictl, "w") as handle:
        if info.endswith(".json"):
            handle.write('#!/bin/sh\ncat %s\n' % os.path.join(FIX, info))
        else:
            handle.write('#!/bin/sh\ncat %s >&2\nexit 1\n' % os.path.join(FIX, info))
    os.chmod(ctr, 0o755)
    os.chmod(crictl, 0o755)
    socket_path = os.path.join(folder, "containerd.sock")
    open(socket_path, "w").close()
    return {"address": socket_path, "ctr": ctr, "crictl": crictl, "wait_timeout": 5}


@pytest.mark.parametrize("daemon, require, message, runtimes", [
    ((("ctr-plugins-ok-2.4.txt", "ctr-version-2.4.txt"), "crictl-info-2.4.json"), "nvidia",
     "gpu-node-c: after the restart containerd 2.4.2+unknown has loaded runc, not nvidia", ["runc"]),
    ((("ctr-plugins-error-1.6.txt", "ctr-version-1.6.txt"), "crictl-info-cri-failed-1.6.stderr"), "nvidia",
     "gpu-node-c: after the restart containerd 1.6.20~ds1 has loaded no runtime, not nvidia (CRI plugin: "
     + _CRI_ERROR_1_6 + ")", []),
    ((("ctr-plugins-ok-1.6.txt", "ctr-version-1.6.txt"), "crictl-info-1.6.json"), "runc", None, ["runc"]),
])
def test_the_module_fails_on_require_and_keeps_the_loaded_view(tmp_path, module_runner, daemon, require, message,
                                                                runtimes):
    args = dict(_fake_clients(str(tmp_path / "clients"), *daemon), require=require,
                subject="gpu-node-c: after the restart")
    result = module_runner("containerd_runtimes", args)
    assert result.get("failed", False) is (message is not None), result
    if message is not None:
        assert result["msg"] == message
        assert "exception" not in result or "Traceback" not in str(result["exception"]), result
    # The failed result still carries the views: a registered result tells what the daemon loaded.
    assert result["loaded"]["runtimes"] == runtimes and result["changed"] is False, result
