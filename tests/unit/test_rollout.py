"""gpuop.rollout: phase and blocker from raw API JSON, as data tables.

tests/fixtures/rollout/*.json are real states recorded from kwok + kube v1.36.1 by
tests/integration/test_daemonset_rollout_live.py (GPUOP_DUMP_ROLLOUT_FIXTURES). Other states are
those, changed in one field each.
"""

import copy
import json
import os

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import rollout
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "rollout")
GiB = 2 ** 30


def fixture(name):
    with open(os.path.join(FIXTURES, name + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def analyse(state, with_nodes=True, now=None):
    return rollout.analyse(state["daemonset"], state["pods"], state["nodes"] if with_nodes else None, now=now)


# ---------------------------------------------------------------------------------------------
# Recorded states

RECORDED = [
    ("stalled-memory", {
        "desired": 3, "current": 3, "updated": 1, "ready": 2, "available": 2, "unavailable": 1,
        "observed_generation": 2, "observed_generation_current": True, "template_generation": 2,
        "max_unavailable": 1, "max_unavailable_spec": 1, "max_surge": 0,
        "new_pods": 1, "old_image_pods": 2, "phase": "stalled", "blocker.kind": "insufficient-memory",
        "blocker.node": "lab-node-0", "blocker.node_reasons": ["Insufficient memory"],
        "blocker.requested": 64 * GiB, "blocker.requested_human": "64Gi",
        "blocker.node_allocatable": 32 * GiB, "blocker.largest_allocatable_human": "32Gi",
        "blocker.fits_any_node": False,
    }, "DESIRED=3\nUPDATED=1\nREADY=2\nOLD_IMAGE_PODS=2\nMAX_UNAVAILABLE=1\nBLOCKER=insufficient-memory\n"),
    ("stalled-cpu", {
        "desired": 3, "current": 3, "updated": 3, "ready": 0, "unavailable": 3, "new_pods": 3, "old_image_pods": 0,
        "phase": "stalled", "blocker.kind": "insufficient-cpu", "blocker.node": "lab-node-0",
        "blocker.requested": 16000, "blocker.requested_human": "16", "blocker.largest_allocatable": 8000,
        "blocker.largest_allocatable_human": "8",
    }, "DESIRED=3\nUPDATED=3\nREADY=0\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=1\nBLOCKER=insufficient-cpu\n"),
    ("stalled-extended", {
        "phase": "stalled", "blocker.kind": "insufficient-example.com/dongle", "blocker.resource": "example.com/dongle",
        "blocker.requested": 1, "blocker.largest_allocatable": 0, "blocker.fits_any_node": False,
    }, "DESIRED=3\nUPDATED=3\nREADY=0\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=1\nBLOCKER=insufficient-example.com/dongle\n"),
    ("stalled-taint", {
        "desired": 0, "current": 0, "misscheduled": 1, "phase": "stalled", "blocker.kind": "taint",
        "blocker.node_reasons": ["node(s) had untolerated taint(s)"],
        "blocker.untolerated_taints": ["gpuop.test/blocked=yes:NoSchedule"],
    }, "DESIRED=0\nUPDATED=0\nREADY=0\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=1\nBLOCKER=taint\n"),
    ("no-matching-node", {
        "desired": 0, "current": 0, "updated": 0, "unavailable": 0, "phase": "complete", "blocker": None,
        "pods_per_node": {},
    }, "DESIRED=0\nUPDATED=0\nREADY=0\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=1\nBLOCKER=none\n"),
    ("complete", {
        "desired": 3, "updated": 3, "ready": 3, "available": 3, "template_generation": 2, "new_pods": 3,
        "old_image_pods": 0, "phase": "complete", "blocker": None, "max_unavailable_spec": "34%", "max_unavailable": 2,
    }, "DESIRED=3\nUPDATED=3\nREADY=3\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=34%\nBLOCKER=none\n"),
]


def pick(result, key):
    value = result
    for part in key.split("."):
        value = value[part]
    return value


@pytest.mark.parametrize("name, expected, report", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_states(name, expected, report):
    result = analyse(fixture(name))
    assert {key: pick(result, key) for key in expected} == expected
    assert rollout.report_text(result) == report


def test_pods_per_node_in_the_memory_stall():
    result = analyse(fixture("stalled-memory"))
    per_node = result["pods_per_node"]
    assert sorted(per_node) == ["lab-node-0", "lab-node-1", "lab-node-2"]
    assert per_node["lab-node-0"]["old"] == [] and per_node["lab-node-0"]["new"] == [result["blocker"]["pod"]]
    assert all(len(per_node[n]["old"]) == 1 and per_node[n]["new"] == [] for n in ("lab-node-1", "lab-node-2"))
    assert sorted(result["old_pods"]) == sorted(per_node["lab-node-1"]["old"] + per_node["lab-node-2"]["old"])


def test_without_nodes_the_blocker_has_no_numbers():
    result = analyse(fixture("stalled-memory"), with_nodes=False)
    assert result["blocker"]["kind"] == "insufficient-memory"
    assert result["blocker"]["requested"] == 64 * GiB and "largest_allocatable" not in result["blocker"]
    assert rollout.needs_nodes(result) is True
    assert rollout.needs_nodes(analyse(fixture("complete"), with_nodes=False)) is False


# ---------------------------------------------------------------------------------------------
# One change at a time to the recorded memory stall

def _pending(state):
    return next(p for p in state["pods"] if p["status"]["phase"] == "Pending")


def _old(state):
    return [p for p in state["pods"] if p["metadata"]["labels"]["pod-template-generation"] == "1"]


def stale_observed_generation(s):
    s["daemonset"]["status"]["observedGeneration"] = 1


def max_unavailable_2(s):
    s["daemonset"]["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = 2


def max_unavailable_50_percent(s):  # 1.5 -> 2, rounded up like the controller
    s["daemonset"]["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "50%"


def max_unavailable_33_percent(s):  # 0.99 -> 1
    s["daemonset"]["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "33%"


def pending_pod_just_created(s):
    _pending(s)["status"] = {"phase": "Pending"}


def pending_pod_bound_not_yet_running(s):
    pod = _pending(s)
    pod["spec"]["nodeName"] = "lab-node-0"
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]


def new_pod_not_yet_created(s):
    s["pods"].remove(_pending(s))
    s["daemonset"]["status"].update({"currentNumberScheduled": 2, "updatedNumberScheduled": 0})


def old_pod_not_ready(s):
    for cond in _old(s)[0]["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["status"] = "False"


def only_strategy_changed_since(s):
    # metadata.generation moves on any spec change; the template generation does not.
    s["daemonset"]["metadata"]["generation"] = 3
    s["daemonset"]["status"]["observedGeneration"] = 3


def old_pod_terminating(s):
    _old(s)[0]["metadata"]["deletionTimestamp"] = "2026-12-02T15:54:00Z"


def foreign_pod_with_same_labels(s):
    pod = copy.deepcopy(_old(s)[0])
    pod["metadata"]["name"] = "intruder"
    pod["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    s["pods"].append(pod)


def rollback_reuses_the_old_hash(s):
    # Template generation 3 is template 1 again: the controller reuses revision 1's hash, so the
    # old-generation pods with that hash count as updated (util.IsPodUpdated).
    s["daemonset"]["metadata"]["annotations"]["deprecated.daemonset.template.generation"] = "3"
    pending = _pending(s)
    pending["metadata"]["labels"]["pod-template-generation"] = "3"
    pending["metadata"]["labels"]["controller-revision-hash"] = _old(s)[0]["metadata"]["labels"]["controller-revision-hash"]


def on_delete_strategy(s):
    s["daemonset"]["spec"]["updateStrategy"] = {"type": "OnDelete"}


def on_delete_without_pending(s):
    s["daemonset"]["spec"]["updateStrategy"] = {"type": "OnDelete"}
    s["pods"].remove(_pending(s))
    s["pods"].append(copy.deepcopy(_old(s)[0]))
    s["pods"][-1]["metadata"]["name"] = "old-on-node-0"
    s["pods"][-1]["spec"]["nodeName"] = "lab-node-0"
    # three old Ready pods: the status the controller writes for them
    s["daemonset"]["status"].update({"updatedNumberScheduled": 0, "numberReady": 3, "numberAvailable": 3,
                                     "numberUnavailable": 0})


def status_behind_the_pods(s):
    # Seen in CI on 2026-12-05: the new pod is listed Pending and Unschedulable, one old pod gone, while the
    # status still carries the numbers of the sync that deleted that old pod.
    s["daemonset"]["status"].update({"updatedNumberScheduled": 0, "numberReady": 3, "numberAvailable": 3,
                                     "numberUnavailable": 0})


def status_ahead_of_the_pod_list(s):
    # The status already counts a new pod the pod list (read a moment earlier) does not hold yet.
    s["pods"].remove(_pending(s))


CHANGES = [
    (stale_observed_generation, "progressing", "insufficient-memory", 2),
    (max_unavailable_2, "progressing", "insufficient-memory", 2),
    (max_unavailable_50_percent, "progressing", "insufficient-memory", 2),
    (max_unavailable_33_percent, "stalled", "insufficient-memory", 2),
    (pending_pod_just_created, "progressing", None, 2),
    (pending_pod_bound_not_yet_running, "progressing", None, 2),
    (new_pod_not_yet_created, "progressing", None, 2),
    (old_pod_not_ready, "progressing", "insufficient-memory", 2),
    (only_strategy_changed_since, "stalled", "insufficient-memory", 2),
    (old_pod_terminating, "stalled", "insufficient-memory", 1),
    (foreign_pod_with_same_labels, "stalled", "insufficient-memory", 2),
    (rollback_reuses_the_old_hash, "complete", None, 0),
    (on_delete_strategy, "stalled", "insufficient-memory", 2),
    (on_delete_without_pending, "stalled", "on-delete", 3),
    (status_behind_the_pods, "progressing", "insufficient-memory", 2),
    (status_ahead_of_the_pod_list, "progressing", None, 2),
]


@pytest.mark.parametrize("change, phase, blocker, old", CHANGES, ids=[c[0].__name__ for c in CHANGES])
def test_phase_from_state(change, phase, blocker, old):
    state = fixture("stalled-memory")
    change(state)
    if change is rollback_reuses_the_old_hash:
        # every pod now runs the current template; make the status say so too
        state["daemonset"]["status"].update({"updatedNumberScheduled": 3, "numberAvailable": 3, "numberReady": 3})
        for cond in _pending(state)["status"]["conditions"]:
            cond.update({"status": "True", "reason": None})
        pending = _pending(state)
        pending["status"]["phase"] = "Running"
        pending["status"]["conditions"].append({"type": "Ready", "status": "True"})
    result = analyse(state)
    assert result["phase"] == phase
    assert (result["blocker"] or {}).get("kind") == blocker
    assert result["old_image_pods"] == old


def test_the_recorded_states_status_is_what_the_controller_tally_gives():
    for name, _expected, _report in RECORDED:
        state = fixture(name)
        result = analyse(state)
        assert result["status_agrees_with_pods"] is True, name


def _tally_pod(name, node, created, new, ready, bound=True, phase="Running", deleting=False):
    pod = {"metadata": {"name": name, "creationTimestamp": created,
                        "labels": {"pod-template-generation": "2" if new else "1"}},
           "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}},
           "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    if bound:
        pod["spec"]["nodeName"] = node
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-12-05T00:00:09Z"
    return pod


def _is_new(pod):
    return pod["metadata"]["labels"]["pod-template-generation"] == "2"


@pytest.mark.parametrize("pods, expected", [
    # one pod per node: each counts
    ([_tally_pod("a", "n0", "2026-12-05T00:00:01Z", False, True),
      _tally_pod("b", "n1", "2026-12-05T00:00:02Z", True, False, bound=False, phase="Pending")],
     {"current": 2, "updated": 1, "ready": 1}),
    # two pods on a node: the oldest is looked at
    ([_tally_pod("old", "n0", "2026-12-05T00:00:01Z", False, True),
      _tally_pod("new", "n0", "2026-12-05T00:00:05Z", True, False)],
     {"current": 1, "updated": 0, "ready": 1}),
    # a bound pod before an older unbound one
    ([_tally_pod("unbound", "n0", "2026-12-05T00:00:01Z", True, False, bound=False, phase="Pending"),
      _tally_pod("bound", "n0", "2026-12-05T00:00:05Z", False, True)],
     {"current": 1, "updated": 0, "ready": 1}),
    # same creation time: by name
    ([_tally_pod("z", "n0", "2026-12-05T00:00:01Z", True, True),
      _tally_pod("a", "n0", "2026-12-05T00:00:01Z", False, False)],
     {"current": 1, "updated": 0, "ready": 0}),
    # being deleted and terminal: left out; being deleted but running: still counted
    ([_tally_pod("gone", "n0", "2026-12-05T00:00:01Z", False, False, phase="Failed", deleting=True),
      _tally_pod("going", "n1", "2026-12-05T00:00:01Z", False, True, deleting=True)],
     {"current": 1, "updated": 0, "ready": 1}),
    ([], {"current": 0, "updated": 0, "ready": 0}),
])
def test_controller_tally(pods, expected):
    assert rollout.controller_tally(pods, _is_new) == expected


def test_percentages_resolve_against_desired():
    state = fixture("stalled-memory")
    max_unavailable_50_percent(state)
    assert analyse(state)["max_unavailable"] == 2


def test_terminating_and_foreign_pods_are_not_counted():
    state = fixture("stalled-memory")
    old_pod_terminating(state)
    foreign_pod_with_same_labels(state)
    result = analyse(state)
    assert result["terminating_pods"] == [_old(state)[0]["metadata"]["name"]]
    assert "intruder" not in json.dumps(result["pods_per_node"])


def test_primary_blocker_prefers_a_shortage_over_a_misscheduled_pod():
    memory = {"kind": "insufficient-memory", "node": "lab-node-0"}
    taint = {"kind": "taint", "node": "a-tainted-node"}
    assert rollout.primary_blocker([taint, memory]) is memory
    two_taints = [taint, {"kind": "taint", "node": "b"}]
    assert rollout.primary_blocker(two_taints + [memory]) is taint
    assert rollout.primary_blocker([]) is None


# ---------------------------------------------------------------------------------------------
# Scheduler messages (v1.36.1: recorded here, or the same FitError shape with reasons from
# pkg/scheduler/framework/plugins/*)

TAIL = " no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
MESSAGES = [
    # recorded on kwok + v1.36.1
    ("0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]." + TAIL,
     True, "insufficient-memory", "memory", ["Insufficient memory"]),
    ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]." + TAIL,
     True, "insufficient-cpu", "cpu", ["Insufficient cpu"]),
    ("0/3 nodes are available: 1 Insufficient example.com/dongle, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]." + TAIL,
     True, "insufficient-example.com/dongle", "example.com/dongle", ["Insufficient example.com/dongle"]),
    ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
     " no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
     True, "taint", None, ["node(s) had untolerated taint(s)"]),
    ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu." + TAIL,
     False, "insufficient-nvidia.com/gpu", "nvidia.com/gpu", ["Insufficient nvidia.com/gpu"]),
    # same shape, other reasons
    ("0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "insufficient-cpu", "cpu", ["Insufficient cpu", "Insufficient memory"]),
    ("0/3 nodes are available: 1 Insufficient memory, 1 Insufficient nvidia.com/gpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "insufficient-memory", "memory", ["Insufficient memory", "Insufficient nvidia.com/gpu"]),
    ("0/3 nodes are available: 1 Too many pods, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "insufficient-pods", "pods", ["Too many pods"]),
    ("0/3 nodes are available: 1 Insufficient ephemeral-storage, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "insufficient-ephemeral-storage", "ephemeral-storage", ["Insufficient ephemeral-storage"]),
    ("0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector.",
     False, "taint", None, ["node(s) had untolerated taint {dedicated: gpu}", "node(s) didn't match Pod's node affinity/selector"]),
    ("0/3 nodes are available: 1 node(s) had taints that the pod didn't tolerate, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "taint", None, ["node(s) had taints that the pod didn't tolerate"]),
    ("0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "taint", None, ["node(s) were unschedulable"]),
    ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "node-affinity", None, ["node(s) didn't match Pod's node affinity/selector"]),
    ("0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]." + TAIL,
     True, "node-affinity", None, []),
    ("0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
     True, "unknown", None, ["node(s) didn't have free ports for the requested pod ports"]),
    ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
     True, "unknown", None, ["pod has unbound immediate PersistentVolumeClaims"]),
    ("binding rejected: running Bind plugin \"DefaultBinder\": node not found", True, "unknown", None, []),
    ("", True, "unknown", None, []),
]


@pytest.mark.parametrize("message, pinned, kind, resource, reasons", MESSAGES, ids=[m[2] + "-" + str(i) for i, m in enumerate(MESSAGES)])
def test_classify_message(message, pinned, kind, resource, reasons):
    found = rollout.classify_message(message, pinned)
    assert (found["kind"], found["resource"], found["reasons"]) == (kind, resource, reasons)


def test_parse_scheduler_message_keeps_counts_and_the_tail():
    parsed = rollout.parse_scheduler_message(MESSAGES[0][0])
    assert parsed == {
        "nodes": 3,
        "reasons": [{"count": 1, "reason": "Insufficient memory"},
                    {"count": 2, "reason": "node(s) didn't satisfy plugin(s) [NodeAffinity]"}],
        "post_filter": TAIL.strip(),
    }


# ---------------------------------------------------------------------------------------------
# Small pure helpers

@pytest.mark.parametrize("text, resource, expected", [
    ("64Gi", "memory", 64 * GiB), ("128Mi", "memory", 128 * 2 ** 20), ("32Gi", "memory", 32 * GiB),
    ("1G", "memory", 10 ** 9), ("1e3", "memory", 1000), ("1.5Gi", "memory", 3 * GiB // 2), ("0.1", "memory", 1),
    ("8", "cpu", 8000), ("500m", "cpu", 500), ("0.25", "cpu", 250), ("1k", "cpu", 1000000), ("100n", "cpu", 1),
    ("4", "nvidia.com/gpu", 4), ("110", "pods", 110),
])
def test_base_units(text, resource, expected):
    assert rollout.base_units(resource, text) == expected


@pytest.mark.parametrize("text", ["", "lots", "64GB", "1.2.3Gi", "Gi"])
def test_bad_quantity(text):
    with pytest.raises(GpuopError, match="not a Kubernetes quantity"):
        rollout.parse_quantity(text)


@pytest.mark.parametrize("resource, amount, expected", [
    ("memory", 64 * GiB, "64Gi"), ("memory", 128 * 2 ** 20, "128Mi"), ("memory", 3 * GiB // 2, "1.5Gi"),
    ("memory", 1000, "1000"), ("memory", 0, "0"), ("cpu", 16000, "16"), ("cpu", 250, "250m"),
    ("nvidia.com/gpu", 4, "4"), ("memory", None, None),
])
def test_human(resource, amount, expected):
    assert rollout.human(resource, amount) == expected


@pytest.mark.parametrize("value, total, expected", [
    (1, 3, 1), ("1", 3, 1), ("34%", 3, 2), ("33%", 3, 1), ("50%", 3, 2), ("10%", 1000, 100), ("10%", 0, 0),
    ("100%", 3, 3), (None, 3, 0),
])
def test_resolve_int_or_percent(value, total, expected):
    assert rollout.resolve_int_or_percent(value, total) == expected


@pytest.mark.parametrize("selector, expected", [
    ({"matchLabels": {"app": "toolkit"}}, "app=toolkit"),
    ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                           {"key": "x", "operator": "NotIn", "values": ["c"]},
                           {"key": "gpu", "operator": "Exists"}, {"key": "cpu-only", "operator": "DoesNotExist"}]},
     "tier in (a,b),x notin (c),gpu,!cpu-only"),
])
def test_label_selector(selector, expected):
    assert rollout.label_selector(selector) == expected


def test_empty_selector_is_refused():
    with pytest.raises(GpuopError, match="empty selector"):
        rollout.label_selector({})


@pytest.mark.parametrize("taints, tolerations, expected", [
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [], ["k=v:NoSchedule"]),
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "operator": "Exists"}], []),
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "value": "w"}], ["k=v:NoSchedule"]),
    ([{"key": "k", "effect": "NoExecute"}], [{"operator": "Exists"}], []),
    ([{"key": "k", "effect": "PreferNoSchedule"}], [], []),
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "value": "v", "effect": "NoExecute"}], ["k=v:NoSchedule"]),
])
def test_untolerated_taints(taints, tolerations, expected):
    node = {"spec": {"taints": taints}}
    pod = {"spec": {"tolerations": tolerations}}
    assert rollout.untolerated_taints(node, pod) == expected


def test_pod_request_adds_containers_and_overhead_and_takes_max_of_init():
    pod = {"spec": {
        "containers": [{"resources": {"requests": {"memory": "1Gi"}}}, {"resources": {"limits": {"memory": "2Gi"}}}],
        "initContainers": [{"resources": {"requests": {"memory": "8Gi"}}}],
        "overhead": {"memory": "128Mi"},
    }}
    assert rollout.pod_request(pod, "memory") == 8 * GiB + 128 * 2 ** 20
    assert rollout.pod_request(pod, "cpu") == 0


def test_min_ready_seconds_needs_a_clock_reading():
    state = fixture("complete")
    state["daemonset"]["spec"]["minReadySeconds"] = 3600
    ready_since = max(c["lastTransitionTime"] for p in state["pods"] for c in p["status"]["conditions"] if c["type"] == "Ready")
    soon = rollout._epoch(ready_since) + 10
    assert analyse(state, now=soon)["phase"] == "progressing"
    assert analyse(state, now=soon + 3600)["phase"] == "complete"
    assert analyse(state)["phase"] == "complete"


# ---------------------------------------------------------------------------------------------
# The wait is gentle with a big DaemonSet: its pods are listed again only when its status changes or
# the last list is older than pod_list_interval(desired).

@pytest.mark.parametrize("desired, interval", [(0, 0.2), (3, 0.2), (100, 0.2), (500, 1.0), (1000, 2.0), (50000, 2.0)])
def test_pod_list_interval_grows_with_the_daemonset(desired, interval):
    assert rollout.pod_list_interval(desired) == pytest.approx(interval)


class _StillCluster(object):
    """A DaemonSet whose status never changes (a rollout still progressing), counting the calls."""

    def __init__(self, desired):
        self.desired, self.gets, self.lists = desired, 0, 0

    def get(self, path):
        self.gets += 1
        return {"metadata": {"name": "ds", "namespace": "ns", "generation": 2, "uid": "u"},
                "spec": {"selector": {"matchLabels": {"app": "ds"}}},
                "status": {"desiredNumberScheduled": self.desired, "currentNumberScheduled": self.desired,
                           "updatedNumberScheduled": 0, "numberReady": 0, "observedGeneration": 2}}

    def list(self, path, label_selector=None):
        self.lists += 1
        return []


@pytest.mark.parametrize("desired, most_lists", [(3, 99), (1000, 1)])
def test_the_wait_lists_a_big_daemonsets_pods_less_often(desired, most_lists):
    cluster = _StillCluster(desired)
    with pytest.raises(GpuopError, match="timed out"):
        rollout.observe(cluster, "ns", "ds", wait_for="complete", timeout=1.0)
    assert cluster.gets >= 4  # the DaemonSet itself is looked at every 0.2 s
    if most_lists == 1:
        assert cluster.lists == 1, cluster.lists
    else:
        assert cluster.lists == cluster.gets, (cluster.lists, cluster.gets)
