"""gpuop.doctor's pure diagnosis: raw API JSON in, findings out.

Fixtures tests/fixtures/doctor/step{5,6,8}.json are what ``doctor.collect`` read from a live kwok
cluster (v1.36.1) after ``site.yml --tags step5``, ``--tags step6`` and the whole ``site.yml``
(managedFields and the API server's own certificate ConfigMaps dropped). Every other case is a
table of small objects built here. Expected lines are written from the lab's facts
(docs/facts.md), never copied from the code's output.
"""

import copy
import json
import os

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import doctor
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "doctor")
LAB = ["lab-node-0", "lab-node-1", "lab-node-2"]
OPTS = {"kubeconfig": "/k"}
LAB_OPTS = {"kubeconfig": "/k", "physical_gpus": 4, "vram_per_gpu_gib": 40, "sharing_default_key": "any",
            "runtime_classes": ["nvidia"]}
NOW = 1796230000.0


def load(stage):
    with open(os.path.join(FIXTURES, stage + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def lines(result):
    return [(f["severity"], f["gate"], f["code"], f["text"]) for f in result["findings"]]


def node(name, handlers=None, labels=None, allocatable=None, capacity=None):
    status = {"allocatable": dict({"cpu": "8", "memory": "32Gi", "pods": "110"}, **(allocatable or {})),
              "capacity": dict({"cpu": "8", "memory": "32Gi", "pods": "110"}, **(capacity or allocatable or {}))}
    if handlers is not None:
        status["runtimeHandlers"] = [{"name": h, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}}
                                     for h in handlers]
    return {"metadata": {"name": name, "labels": labels or {}}, "status": status}


def pod(name, namespace="ns", node_name=None, rc=None, phase="Running", uid=None, limits=None, scheduled_message=None):
    spec = {"containers": [{"name": "c", "resources": {"limits": limits or {}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if rc:
        spec["runtimeClassName"] = rc
    status = {"phase": phase}
    if scheduled_message:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": scheduled_message}]
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or "uid-" + name}, "spec": spec, "status": status}


def runtimeclass(name, handler, node_selector=None):
    rc = {"metadata": {"name": name}, "handler": handler}
    if node_selector:
        rc["scheduling"] = {"nodeSelector": node_selector}
    return rc


def snapshot(nodes=(), pods=(), runtimeclasses=(), daemonsets=(), configmaps=(), events=(), errors=None):
    return {"version": {"gitVersion": "v1.36.1"}, "nodes": list(nodes), "pods": list(pods),
            "runtimeclasses": list(runtimeclasses), "daemonsets": list(daemonsets), "configmaps": list(configmaps),
            "events": list(events), "errors": errors or {}}


# ---------------------------------------------------------------------------------------------
# The lab's stages, from real API data

UNKNOWN_ON_LAB = ("warning", "runtime-handler", "handler-unknown",
                  "RuntimeClass nvidia: 3 of 3 nodes report no runtime handlers, so whether handler nvidia is "
                  "loaded is unknown: lab-node-0, lab-node-1, lab-node-2")


def test_fresh_cluster_has_no_finding():
    fresh = load("step5")
    fresh.update(pods=[], runtimeclasses=[])  # the lab nodes as playbooks/cluster.yml makes them
    result = doctor.diagnose(fresh, LAB_OPTS, NOW)
    assert result["findings"] == []
    assert {g: s["state"] for g, s in result["gates"].items()} == {
        "runtime-handler": "not-applicable", "advertisement": "ok", "sharing": "not-applicable",
        "rollout": "not-applicable", "containerd": "not-applicable"}


def test_step5_gpu_pod_blocked_by_advertisement():
    result = doctor.diagnose(load("step5"), LAB_OPTS, NOW)
    assert lines(result) == [
        ("critical", "advertisement", "pod-insufficient-resource",
         "pod gpu-lab/cuda-probe Pending on Insufficient nvidia.com/gpu: requests 1, largest free 0; "
         "capacity/allocatable/requested: 3 nodes 0/0/0"),
        UNKNOWN_ON_LAB,
    ]
    first = result["findings"][0]
    assert first["command"] == "kubectl --kubeconfig /k -n gpu-lab get pod cuda-probe -o 'jsonpath={.status.conditions}'"
    assert first["details"]["nodes"]["lab-node-1"] == {"capacity": 0, "allocatable": 0, "requested": 0}
    assert result["gates"]["advertisement"]["state"] == "broken"
    assert result["gates"]["runtime-handler"]["state"] == "unknown"


BLAST_RADIUS = ("warning", "rollout", "rollout-blast-radius",
                "DaemonSet gpu-operator/nvidia-container-toolkit: no pod of it runs on lab-node-0 (the old pod is gone, the new "
                "one is Pending): a toolkit pod that terminates removes its runtime config and restarts containerd, so pods of "
                "RuntimeClass nvidia (handler nvidia) fail there")


def test_step6_advertised_pod_runs_and_only_the_unknown_handler_is_left():
    result = doctor.diagnose(load("step6"), LAB_OPTS, NOW)
    assert lines(result) == [UNKNOWN_ON_LAB]
    assert result["gates"]["advertisement"]["state"] == "ok"


def test_step8_toolkit_rollout_stalled_on_memory_and_sharing_seen():
    result = doctor.diagnose(load("step8"), LAB_OPTS, NOW)
    assert lines(result) == [
        ("critical", "rollout", "rollout-stalled",
         "DaemonSet gpu-operator/nvidia-container-toolkit rollout stalled: insufficient-memory on lab-node-0: "
         "requests 64Gi > 32Gi allocatable (largest node 32Gi); desired 3, updated 1, ready 2, unavailable 1, "
         "maxUnavailable 1"),
        UNKNOWN_ON_LAB,
        ("warning", "sharing", "advertisement-mismatch",
         "1 node(s) advertise nvidia.com/gpu 4, expected 20 (4 physical x 5 replicas, ConfigMap "
         "gpu-operator/time-slicing-config key any): lab-node-0"),
        BLAST_RADIUS,
        ("info", "sharing", "sharing-config",
         "ConfigMap gpu-operator/time-slicing-config key any: time-slicing, nvidia.com/gpu x 5 replicas per GPU, "
         "memory guaranteed per slot 0 GiB of 40 GiB (every slot may use all of it: no memory or fault isolation)"),
    ]
    # The fixture's pods: the new one (generation 2) Pending for lab-node-0, whose old pod is gone; old ones on 1 and 2.
    assert [(r["node"], r["state"], r["old_pod"]) for r in result["rollout_rows"]] == [
        ("lab-node-0", "pending", False), ("lab-node-1", "old", True), ("lab-node-2", "old", True)]
    assert result["rollout_rows"][0]["blocker"].startswith("insufficient-memory on lab-node-0: requests 64Gi > 32Gi")
    stalled = result["findings"][0]
    assert stalled["details"]["blocker"]["requested"] == 64 * 2 ** 30
    assert stalled["details"]["blocker"]["node_allocatable"] == 32 * 2 ** 30
    assert stalled["command"].startswith("kubectl --kubeconfig /k -n gpu-operator get pod nvidia-container-toolkit-")
    assert stalled["command"].endswith(""" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'""")
    assert result["summary"] == {"critical": 1, "warning": 3, "info": 1, "total": 5}


def _view(runtimes):
    """A node view as containerd_node_view returns it: files and a restart agree with what the daemon loaded."""
    return {"view": {"config": "/etc/containerd/config.toml", "containerd_version": "1.6.20", "containerd_major": 1,
                     "load_order": ["/etc/containerd/config.toml"], "files": [], "warnings": [],
                     "predicted": {"runtimes": runtimes, "default_runtime_name": "runc", "cri_loads": True, "error": None,
                                   "reason": ""},
                     "loaded": {"cri_loaded": True, "runtimes": runtimes, "default_runtime_name": "runc", "error": None}}}


def test_step8_blast_radius_confirmed_or_refuted_by_the_nodes_daemon():
    # Only the blast-radius finding is read here; the fleet gate's own verdicts are tested in test_fleet.
    def radius(views):
        result = doctor.diagnose(load("step8"), dict(LAB_OPTS, nodes=views), NOW)
        return [(f["severity"], f["text"]) for f in result["findings"] if f["code"] == "rollout-blast-radius"]
    assert radius({"lab-node-0": _view(["runc"])}) == [("critical", BLAST_RADIUS[3] + "; confirmed by the node's daemon on lab-node-0")]
    assert radius({"lab-node-0": _view(["nvidia", "runc"])}) == [
        ("warning", BLAST_RADIUS[3] + "; refuted on lab-node-0 (its daemon still has the handler)")]
    assert radius({}) == [("warning", BLAST_RADIUS[3])]


def test_step8_without_the_physical_count_the_gpu_nodes_are_not_judged():
    result = doctor.diagnose(load("step8"), dict(LAB_OPTS, physical_gpus=0), NOW)
    sharing = [l for l in lines(result) if l[1] == "sharing"]
    assert [l for l in sharing if l[2] == "physical-gpus-unknown"][0] == ("info", "sharing", "physical-gpus-unknown",
                          "2 GPU node(s) not checked against the sharing config: no nvidia.com/gpu.count label and "
                          "no physical_gpus given: lab-node-0, lab-node-1")
    assert not [l for l in sharing if l[2] == "advertisement-mismatch"]
    assert result["gates"]["sharing"]["state"] == "unknown"


def test_the_gpu_count_label_wins_over_the_option():
    snap = load("step8")
    for item in snap["nodes"]:
        if item["metadata"]["name"] in ("lab-node-0", "lab-node-1"):
            item["metadata"]["labels"]["nvidia.com/gpu.count"] = "4" if item["metadata"]["name"] == "lab-node-1" else "1"
    result = doctor.diagnose(snap, dict(LAB_OPTS, physical_gpus=7), NOW)
    # lab-node-0: 1 GPU x 5 = 5, advertises 4; lab-node-1: 4 x 5 = 20, advertises 20.
    assert [l[3] for l in lines(result) if l[2] == "advertisement-mismatch"] == [
        "1 node(s) advertise nvidia.com/gpu 4, expected 5 (1 physical x 5 replicas, ConfigMap "
        "gpu-operator/time-slicing-config key any): lab-node-0"]


# ---------------------------------------------------------------------------------------------
# Runtime handler gate

def lab_with_handlers(handlers_by_node):
    snap = load("step6")  # cuda-probe (RuntimeClass nvidia) runs on lab-node-0
    for item in snap["nodes"]:
        handlers = handlers_by_node.get(item["metadata"]["name"])
        if handlers is not None:
            item["status"]["runtimeHandlers"] = [{"name": h, "features": {"recursiveReadOnlyMounts": True,
                                                                          "userNamespaces": True}} for h in handlers]
    return snap


def test_nvidia_handler_not_loaded_on_the_nodes_and_no_handlers_is_unknown():
    result = doctor.diagnose(lab_with_handlers({"lab-node-0": ["runc", ""], "lab-node-1": ["runc", ""]}), LAB_OPTS, NOW)
    assert lines(result) == [
        ("critical", "runtime-handler", "handler-not-loaded",
         "RuntimeClass nvidia: handler nvidia not loaded on 2 of 3 nodes: lab-node-0, lab-node-1 (they report "
         "(default), runc); pods using it there: gpu-lab/cuda-probe on lab-node-0"),
        ("warning", "runtime-handler", "handler-unknown",
         "RuntimeClass nvidia: 1 of 3 nodes report no runtime handlers, so whether handler nvidia is loaded is "
         "unknown: lab-node-2"),
    ]
    assert result["gates"]["runtime-handler"]["state"] == "broken"


@pytest.mark.parametrize("handlers, expected", [
    # the pod's node has it, another does not: a risk, not an outage
    ({"lab-node-0": ["runc", "nvidia"], "lab-node-1": ["runc"], "lab-node-2": ["runc"]},
     [("warning", "handler-not-loaded", ["lab-node-1", "lab-node-2"])]),
    # every node loaded it: healthy
    ({n: ["runc", "nvidia", ""] for n in LAB}, []),
    # none loaded it, the pod sits on one of them
    ({n: ["runc"] for n in LAB}, [("critical", "handler-not-loaded", LAB)]),
])
def test_handler_severity(handlers, expected):
    result = doctor.diagnose(lab_with_handlers(handlers), LAB_OPTS, NOW)
    assert [(f["severity"], f["code"], f["details"]["nodes"]) for f in result["findings"]] == expected
    assert result["gates"]["runtime-handler"]["state"] == ("broken" if expected else "ok")


def test_unused_runtimeclass_is_checked_only_when_named():
    snap = snapshot(nodes=[node("n1", ["runc"])], runtimeclasses=[runtimeclass("nvidia", "nvidia")])
    assert doctor.diagnose(snap, OPTS, NOW)["findings"] == []
    named = doctor.diagnose(snap, dict(OPTS, runtime_classes=["nvidia", "absent"]), NOW)
    assert [(f["severity"], f["code"]) for f in named["findings"]] == [("warning", "handler-not-loaded")]


def test_runtimeclass_node_selector_limits_the_nodes_checked():
    snap = snapshot(
        nodes=[node("cpu-1", ["runc"]), node("gpu-1", ["runc", "nvidia"], labels={"gpu": "yes"})],
        pods=[pod("p", node_name="gpu-1", rc="nvidia")],
        runtimeclasses=[runtimeclass("nvidia", "nvidia", {"gpu": "yes"})])
    result = doctor.diagnose(snap, OPTS, NOW)
    assert result["findings"] == []
    assert result["gates"]["runtime-handler"]["runtime_classes"][0]["eligible_nodes"] == 1


def test_finished_pods_do_not_count_and_a_missing_runtimeclass_is_critical():
    snap = snapshot(nodes=[node("n1", ["runc"])],
                    pods=[pod("done", node_name="n1", rc="nvidia", phase="Succeeded"), pod("p", rc="gone", phase="Pending")],
                    runtimeclasses=[runtimeclass("nvidia", "nvidia")])
    assert lines(doctor.diagnose(snap, OPTS, NOW)) == [
        ("critical", "runtime-handler", "runtimeclass-missing", "RuntimeClass gone does not exist but 1 pod(s) name it: ns/p")]


def sandbox_event(name, pod_obj, message, last):
    return {"metadata": {"name": name, "namespace": pod_obj["metadata"]["namespace"]}, "reason": "FailedCreatePodSandBox",
            "type": "Warning", "message": message, "lastTimestamp": last, "count": 3,
            "involvedObject": {"kind": "Pod", "name": pod_obj["metadata"]["name"],
                               "namespace": pod_obj["metadata"]["namespace"], "uid": pod_obj["metadata"]["uid"]}}


def test_sandbox_events_of_live_pods_with_containerds_message():
    stuck = pod("cuda", node_name="n1", rc="nvidia", phase="Pending")
    running = pod("ok", node_name="n2", rc="nvidia")
    msg_old = 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured'
    msg_new = ('Failed to create pod sandbox: rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "abc": '
               'no runtime for "nvidia" is configured')
    gone = pod("gone", phase="Pending")
    snap = snapshot(nodes=[node("n1", ["runc", "nvidia"]), node("n2", ["runc", "nvidia"])], pods=[stuck, running],
                    runtimeclasses=[runtimeclass("nvidia", "nvidia")],
                    events=[sandbox_event("e1", stuck, msg_old, "2026-12-02T10:00:00Z"),
                            sandbox_event("e2", stuck, msg_new, "2026-12-02T10:05:00Z"),
                            sandbox_event("e3", running, msg_old, "2026-12-02T10:00:00Z"),
                            sandbox_event("e4", gone, msg_old, "2026-12-02T10:00:00Z")])
    result = doctor.diagnose(snap, OPTS, NOW)
    assert lines(result) == [("critical", "runtime-handler", "sandbox-failed",
                              "pod ns/cuda on n1: FailedCreatePodSandBox: " + msg_new)]
    assert result["findings"][0]["details"]["handler"] == "nvidia"
    assert result["findings"][0]["command"] == ("kubectl --kubeconfig /k -n ns get events --field-selector "
                                                "involvedObject.name=cuda,reason=FailedCreatePodSandBox")


# ---------------------------------------------------------------------------------------------
# Advertisement gate

GPU_MSG = ("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 Insufficient example.com/fpga. no new claims to "
           "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_pending_on_extended_resources_with_capacity_allocatable_requested():
    nodes = [node("n1", allocatable={"nvidia.com/gpu": "4"}), node("n2", allocatable={"nvidia.com/gpu": "4"},
                                                                      capacity={"nvidia.com/gpu": "8"})]
    pods = [pod("busy-%d" % i, node_name="n1", limits={"nvidia.com/gpu": "2"}) for i in range(2)]
    pods += [pod("busy-n2", node_name="n2", limits={"nvidia.com/gpu": "1"}),
             pod("finished", node_name="n2", phase="Succeeded", limits={"nvidia.com/gpu": "3"}),
             pod("want", phase="Pending", limits={"nvidia.com/gpu": "4", "example.com/fpga": "1"}, scheduled_message=GPU_MSG),
             pod("cpu-only", phase="Pending", scheduled_message="0/2 nodes are available: 2 Insufficient cpu.")]
    result = doctor.diagnose(snapshot(nodes=nodes, pods=pods), OPTS, NOW)
    assert lines(result) == [
        ("critical", "advertisement", "pod-insufficient-resource",
         "pod ns/want Pending on Insufficient example.com/fpga: requests 1, largest free 0; "
         "capacity/allocatable/requested: 2 nodes 0/0/0"),
        ("critical", "advertisement", "pod-insufficient-resource",
         "pod ns/want Pending on Insufficient nvidia.com/gpu: requests 4, largest free 3; "
         "capacity/allocatable/requested: n1 4/4/4, n2 8/4/1"),
    ]


def test_pending_pods_of_a_stalled_daemonset_are_left_to_the_rollout_gate():
    data = load("step8")
    stalled_pod = next(p for p in data["pods"] if p["status"]["phase"] == "Pending")
    stalled_pod["status"]["conditions"][0]["message"] = (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    result = doctor.diagnose(data, LAB_OPTS, NOW)
    assert [f["code"] for f in result["findings"] if f["severity"] == "critical"] == ["rollout-stalled"]
    assert "insufficient-nvidia.com/gpu on lab-node-0" in result["findings"][0]["text"]


# ---------------------------------------------------------------------------------------------
# Sharing gate

def configmap(name, data, namespace="gpu-operator"):
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


TS = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: %d\n"
MPS = "version: v1\nsharing:\n  mps:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 4\n"
RENAMED = ("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
           "      - name: nvidia.com/gpu\n        replicas: 2\n")


def test_sharing_configs_are_found_by_content():
    cms = [configmap("plugin", {"a100": TS % 5, "notes.txt": "the sharing version is documented elsewhere",
                                "list": "- version: v1\n- sharing: {}\n", "broken": "version: v1\nsharing: [\n"}),
           configmap("other", {"x": "version: v2\nsharing: {}\n"}, namespace="default")]
    found = doctor.find_sharing_configs(cms)
    # version v2 is not the device plugin's schema: not a sharing config (the plugin reads only v1)
    assert [(c["metadata"]["name"], key) for c, key, _ in found] == [("plugin", "a100")]


def test_invalid_sharing_config_says_what_the_device_plugin_would_say():
    result = doctor.diagnose(snapshot(configmaps=[configmap("plugin", {"any": TS % 1})]), OPTS, NOW)
    assert lines(result) == [("warning", "sharing", "sharing-config-invalid",
                              "ConfigMap gpu-operator/plugin key any: the device plugin would refuse it: invalid sharing "
                              "config: sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2 "
                              "(k8s-device-plugin api/config/v1)")]
    assert result["findings"][0]["command"] == "kubectl --kubeconfig /k -n gpu-operator get configmap plugin -o 'jsonpath={.data.any}'"


def test_mps_divides_memory_and_the_node_label_picks_the_config():
    nodes = [node("g1", labels={"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "mps"},
                  allocatable={"nvidia.com/gpu": "8"}),
             node("g2", labels={"nvidia.com/gpu.count": "2", "nvidia.com/device-plugin.config": "ts"},
                  allocatable={"nvidia.com/gpu": "2"}),
             node("g3", labels={"nvidia.com/gpu.count": "1", "nvidia.com/device-plugin.config": "renamed"},
                  allocatable={"nvidia.com/gpu": "1"}),
             node("cpu")]
    cms = [configmap("plugin", {"mps": MPS, "ts": TS % 3, "renamed": RENAMED})]
    result = doctor.diagnose(snapshot(nodes=nodes, configmaps=cms), dict(OPTS, vram_per_gpu_gib=40), NOW)
    assert lines(result) == [
        ("warning", "sharing", "advertisement-mismatch",
         "1 node(s) advertise nvidia.com/gpu.shared 0, expected 2 (1 physical x 2 replicas, ConfigMap "
         "gpu-operator/plugin key renamed): g3"),
        ("warning", "sharing", "advertisement-mismatch",
         "1 node(s) advertise nvidia.com/gpu 2, expected 6 (2 physical x 3 replicas, ConfigMap gpu-operator/plugin "
         "key ts): g2"),
        ("info", "sharing", "sharing-config",
         "ConfigMap gpu-operator/plugin key mps: mps, nvidia.com/gpu x 4 replicas per GPU, memory guaranteed per "
         "slot 10 GiB (1/4 of 40 GiB)"),
        ("info", "sharing", "sharing-config",
         "ConfigMap gpu-operator/plugin key renamed: time-slicing, nvidia.com/gpu.shared x 2 replicas per GPU, "
         "memory guaranteed per slot 0 GiB of 40 GiB (every slot may use all of it: no memory or fault isolation)"),
        ("info", "sharing", "sharing-config",
         "ConfigMap gpu-operator/plugin key ts: time-slicing, nvidia.com/gpu x 3 replicas per GPU, memory guaranteed "
         "per slot 0 GiB of 40 GiB (every slot may use all of it: no memory or fault isolation)"),
    ]
    assert result["gates"]["sharing"]["nodes_checked"] == 3


def test_many_mismatching_nodes_are_one_line():
    nodes = [node("g%04d" % i, labels={"nvidia.com/gpu.count": "8"}, allocatable={"nvidia.com/gpu": "8"})
             for i in range(1000)]
    result = doctor.diagnose(snapshot(nodes=nodes, configmaps=[configmap("plugin", {"any": TS % 4})]), OPTS, NOW)
    mismatch = [f for f in result["findings"] if f["code"] == "advertisement-mismatch"]
    assert [f["text"] for f in mismatch] == [
        "1000 node(s) advertise nvidia.com/gpu 8, expected 32 (8 physical x 4 replicas, ConfigMap gpu-operator/plugin "
        "key any): g0000, g0001, g0002, g0003, g0004 and 995 more"]


# ---------------------------------------------------------------------------------------------
# Rollout gate (tests/fixtures/rollout: real API data of the daemonset_rollout live tests)

def rollout_fixture(name):
    with open(os.path.join(HERE, "..", "fixtures", "rollout", name + ".json"), encoding="utf-8") as handle:
        data = json.load(handle)
    return snapshot(nodes=data["nodes"], pods=data["pods"], daemonsets=[data["daemonset"]])


@pytest.mark.parametrize("name, expected", [
    ("complete", None),
    ("stalled-memory", "insufficient-memory on lab-node-0: requests 64Gi > 32Gi allocatable (largest node 32Gi)"),
    ("stalled-cpu", "insufficient-cpu on lab-node-0: requests 16 > 8 allocatable (largest node 8)"),
    ("stalled-taint", "taint on h2-taint-f937cb: untolerated gpuop.test/blocked=yes:NoSchedule"),
])
def test_rollout_stalled_names_blocker_and_numbers(name, expected):
    result = doctor.diagnose(rollout_fixture(name), OPTS, NOW)
    stalled = [f for f in result["findings"] if f["code"] == "rollout-stalled"]
    if expected is None:
        assert stalled == []
        assert result["gates"]["rollout"]["state"] == "ok"
        return
    assert len(stalled) == 1 and stalled[0]["severity"] == "critical"
    assert expected in stalled[0]["text"], stalled[0]["text"]
    assert result["gates"]["rollout"]["state"] == "broken"


def test_selected_daemonsets_only_and_a_missing_one_is_named():
    snap = rollout_fixture("stalled-memory")
    ref = "%s/%s" % (snap["daemonsets"][0]["metadata"]["namespace"], snap["daemonsets"][0]["metadata"]["name"])
    result = doctor.diagnose(snap, dict(OPTS, daemonsets=["kube-system/other"]), NOW)
    assert lines(result) == [("warning", "rollout", "daemonset-missing",
                              "DaemonSet kube-system/other was selected but does not exist")]
    assert [f["code"] for f in doctor.diagnose(snap, dict(OPTS, daemonsets=[ref]), NOW)["findings"]] == [
        "rollout-stalled", "rollout-blast-radius"]


# ---------------------------------------------------------------------------------------------
# containerd gate (the lab's two files, steps 1-2)

MAIN = """version = 2
imports = ["%s/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def test_containerd_1x_would_fail_the_lab_config_and_2x_loads_it(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.toml").write_text(MAIN % tmp_path)
    (tmp_path / "conf.d" / "99-nvidia.toml").write_text(DROPIN)
    result = doctor.diagnose(snapshot(), dict(OPTS, containerd_configs=[str(tmp_path / "config.toml")]), NOW)
    path = str(tmp_path / "config.toml")
    assert lines(result) == [("critical", "containerd", "containerd-cri-fails",
                              '%s: after a restart containerd 1.x\'s CRI plugin fails: invalid plugin config: no '
                              'corresponding runtime configured in containerd.runtimes for containerd '
                              'default_runtime_name = "runc" (written runtimes nvidia, runc; it would load nvidia)' % path)]
    assert result["findings"][0]["command"] == "containerd --config %s config dump" % path
    assert result["gates"]["containerd"]["configs"][0]["containerd_2"] == {"runtimes": ["nvidia", "runc"], "cri_loads": True}


def test_a_missing_containerd_config_is_one_clear_failure(tmp_path):
    with pytest.raises(GpuopError, match="main config file does not exist"):
        doctor.diagnose(snapshot(), dict(OPTS, containerd_configs=[str(tmp_path / "nope.toml")]), NOW)


# ---------------------------------------------------------------------------------------------
# Order, gating, refused lists, rendering

def test_worst_first_across_gates_and_fail_on():
    result = doctor.diagnose(load("step8"), LAB_OPTS, NOW)
    ranks = [doctor.SEVERITY_RANK[f["severity"]] for f in result["findings"]]
    assert ranks == sorted(ranks)
    assert doctor.gate_failed(result, "critical") and doctor.gate_failed(result, "warning")
    assert not doctor.gate_failed(result, "none")
    only_warning = doctor.diagnose(load("step6"), LAB_OPTS, NOW)
    assert not doctor.gate_failed(only_warning, "critical") and doctor.gate_failed(only_warning, "warning")


def test_a_refused_list_makes_its_gate_unknown_not_healthy():
    snap = snapshot(nodes=[node("n1")], errors={"configmaps": "GET /api/v1/configmaps failed: HTTP 403: forbidden"})
    result = doctor.diagnose(snap, OPTS, NOW)
    assert lines(result) == [("warning", "sharing", "read-failed",
                              "cannot list configmaps, the sharing gate is not judged: GET /api/v1/configmaps failed: "
                              "HTTP 403: forbidden")]
    assert result["gates"]["sharing"]["state"] == "unknown"


@pytest.mark.parametrize("options, message", [
    ({"daemonsets": ["toolkit"]}, "daemonsets: 'toolkit' is not namespace/name"),
    ({"physical_gpus": -1}, "physical_gpus must be 0"),
    ({"vram_per_gpu_gib": -2.0}, "vram_per_gpu_gib must be 0"),
    ({"fail_on": "info"}, "fail_on must be one of critical, warning, none"),
])
def test_bad_options_fail_clearly(options, message):
    with pytest.raises(GpuopError, match=message):
        doctor.validate_options(dict(OPTS, **options))


def test_reports_are_deterministic_and_carry_no_timestamp():
    meta = {"kubeconfig": "/k", "context": None, "server": "https://127.0.0.1:1", "api_calls": ["GET /version"],
            "fail_on": "none"}
    first = doctor.diagnose(load("step8"), LAB_OPTS, NOW)
    shuffled = load("step8")
    for key in ("nodes", "pods", "configmaps"):
        shuffled[key].reverse()
    second = doctor.diagnose(shuffled, LAB_OPTS, NOW + 3600)
    assert doctor.render_json(first, meta) == doctor.render_json(second, meta)
    assert doctor.render_md(first, meta) == doctor.render_md(second, meta)
    md = doctor.render_md(first, meta)
    assert "2026" not in md and md.endswith("\n")
    assert md.count("\n1. **critical** rollout:") == 1


def test_names_text_stays_short():
    assert doctor.names_text(["a", "b"]) == "a, b"
    assert doctor.names_text(["n%d" % i for i in range(8)]) == "n0, n1, n2, n3, n4 and 3 more"


def test_diagnosis_of_a_snapshot_does_not_change_it():
    data = load("step8")
    before = copy.deepcopy(data)
    doctor.diagnose(data, LAB_OPTS, NOW)
    assert data == before
