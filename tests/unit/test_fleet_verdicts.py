"""The fleet gate's verdicts (module_utils fleet), pure: one node's view as containerd_node_view returns it."""

import copy

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import fleet

MAIN = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
CRI = "io.containerd.grpc.v1.cri"


def node_view(major=1, predicted=("nvidia", "runc"), loaded=("nvidia", "runc"), cri_loads=True, files=None):
    main = {"path": MAIN, "loaded": True, "error": None, "version": 2, "plugin_ids": [CRI], "runtimes": ["runc"],
            "imports": [DROPIN], "cri_keys": {CRI: ["cni", "containerd", "sandbox_image"]}, "incomplete": [], "cri_line": 4}
    return {"config": MAIN, "containerd_version": "1.6.20" if major == 1 else "2.4.2", "containerd_major": major,
            "load_order": [MAIN] + [f["path"] for f in files or [] if f.get("loaded")],
            "files": [main] + list(files or []), "warnings": [],
            "predicted": {"runtimes": list(predicted), "default_runtime_name": "runc", "cri_loads": cri_loads,
                          "error": None if cri_loads else "no runtime for runc", "reason": "r"},
            "loaded": None if loaded is None else {"runtimes": list(loaded), "default_runtime_name": "runc",
                                                   "cri_loaded": True, "error": None}}


def dropin(**extra):
    entry = {"path": DROPIN, "loaded": True, "error": None, "version": 2, "plugin_ids": [CRI], "runtimes": ["nvidia"],
             "imports": [], "cri_keys": {CRI: ["cni", "containerd", "sandbox_image"]}, "incomplete": [], "cri_line": 6}
    entry.update(extra)
    return entry


CASES = [
    ("clean: a self-sufficient 1.x drop-in", node_view(files=[dropin()]), ["dropin-self-sufficient"]),
    ("written, not restarted", node_view(loaded=("runc",), files=[dropin()]), ["restart-pending", "dropin-self-sufficient"]),
    ("a restart drops a loaded handler", node_view(predicted=("runc",), files=[dropin()]),
     ["runtime-dropped-on-restart", "dropin-self-sufficient"]),
    ("CRI fails on restart: nothing else about the restart is judged", node_view(cri_loads=False, predicted=(),
                                                                               files=[dropin(cri_keys={CRI: ["containerd"]})]),
     ["cri-fails-on-restart", "dropin-minimal-on-1x"]),
    ("an orphan drop-in", node_view(files=[dropin(), {"path": "/etc/containerd/config.d/x.toml", "loaded": False, "error": None}]),
     ["dropin-self-sufficient", "orphan-dropin"]),
    ("a runtime without runtime_type, on 2.x (no 1.x checks)",
     node_view(major=2, files=[dropin(incomplete=[{"runtime": "nvidia", "line": 3}])]), ["runtime-incomplete"]),
    ("the 2.x plugin path under 1.x", node_view(files=[dropin(plugin_ids=["io.containerd.cri.v1.runtime"], cri_keys={})]),
     ["plugin-path-ignored"]),
    ("no daemon: nothing about what it loaded", node_view(loaded=None, files=[dropin()]), ["dropin-self-sufficient"]),
]


@pytest.mark.parametrize("view, codes", [(v, c) for _i, v, c in CASES], ids=[i for i, _v, _c in CASES])
def test_verdicts(view, codes):
    assert sorted(v["verdict"] for v in fleet.verdicts("n1", view)) == sorted(codes)


def test_an_unreadable_node_is_one_verdict():
    found = fleet.verdicts("n9", {"error": "ssh: connect to host n9 port 22: Connection timed out"})
    assert [(v["verdict"], v["severity"]) for v in found] == [("node-unreadable", "warning")]
    assert "Connection timed out" in found[0]["text"]


def test_pods_needing_a_handler_the_daemon_lacks():
    pods = [{"metadata": {"namespace": "ml", "name": "train"}, "spec": {"runtimeClassName": "gpu"}},
            {"metadata": {"namespace": "ml", "name": "web"}, "spec": {}}]
    found = fleet.verdicts("n1", node_view(loaded=("runc",), predicted=("runc",)), pods=pods, handler_of={"gpu": "nvidia"})
    assert [(v["verdict"], v["details"]["pods"]) for v in found] == [("handler-not-loaded", ["ml/train"])]


def test_group_makes_one_entry_per_verdict_and_text_with_every_node_and_pod():
    pods = {name: [{"metadata": {"namespace": "ml", "name": "p-" + name}, "spec": {"runtimeClassName": "gpu"}}]
            for name in ("a", "b", "c")}
    per_node = {name: fleet.verdicts(name, node_view(loaded=("runc",), predicted=("runc",)), pods=pods[name],
                                     handler_of={"gpu": "nvidia"}) for name in ("c", "a", "b")}
    per_node["d"] = fleet.verdicts("d", {"error": "unreachable"})
    groups = fleet.group(per_node)
    assert [(g["verdict"], g["nodes"]) for g in groups] == [("handler-not-loaded", ["a", "b", "c"]), ("node-unreadable", ["d"])]
    assert groups[0]["details"]["pods"] == ["ml/p-a", "ml/p-b", "ml/p-c"]
    assert copy.deepcopy(per_node["a"][0]["details"]["pods"]) == ["ml/p-a"], "grouping does not change a node's own verdict"


@pytest.mark.parametrize("text, segments, prefix, line", [
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n', ["plugins", CRI], True, 2),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n', ["plugins", CRI], False, None),
    ('[plugins]\n  [ plugins."io.containerd.grpc.v1.cri" ]\n', ["plugins", CRI], False, 2),
    ('x = 1\n', ["plugins", CRI], True, None),
])
def test_header_line(text, segments, prefix, line):
    assert fleet.header_line(text, segments, prefix) == line
