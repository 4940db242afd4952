"""Pure logic of pod_wait: inputs, predicates, descriptions, the record's content."""

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import pod_wait as pw
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

SCHED_MSG = ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate, "
             "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": SCHED_MSG, "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:00Z"}
SCHEDULED = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2026-01-01T00:00:05Z"}
READY = {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:06Z"}


def pod(phase=None, conditions=None, node=None):
    obj = {"metadata": {"name": "cuda-probe", "namespace": "gpu-lab"}, "spec": {}, "status": {}}
    if phase:
        obj["status"]["phase"] = phase
    if conditions is not None:
        obj["status"]["conditions"] = conditions
    if node:
        obj["spec"]["nodeName"] = node
    return obj


PENDING = pod("Pending", [UNSCHEDULABLE])
RUNNING = pod("Running", [SCHEDULED, READY], node="lab-node-0")
JUST_CREATED = pod("Pending")


@pytest.mark.parametrize("value, expected", [
    (True, "True"), (False, "False"), ("True", "True"), ("false", "False"), (" FALSE ", "False"),
    ("Unknown", "Unknown"), ("unknown", "Unknown"),
])
def test_normalize_status(value, expected):
    assert pw.normalize_status(value) == expected


@pytest.mark.parametrize("value", ["yes", "", 0, 1, None, "Truee"])
def test_normalize_status_refuses(value):
    with pytest.raises(GpuopError, match="condition status must be True, False or Unknown"):
        pw.normalize_status(value)


WANT_UNSCHED = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
WANT_UNSCHED_ANY_REASON = {"type": "PodScheduled", "status": "False", "reason": None}
WANT_SCHEDULED = {"type": "PodScheduled", "status": "True", "reason": None}
WANT_READY = {"type": "Ready", "status": "True", "reason": None}

# (case, pod, wanted condition, holds)
CONDITION_CASES = [
    ("pod missing", None, WANT_UNSCHED, False),
    ("no conditions yet", JUST_CREATED, WANT_UNSCHED, False),
    ("unschedulable with reason", PENDING, WANT_UNSCHED, True),
    ("unschedulable, any reason", PENDING, WANT_UNSCHED_ANY_REASON, True),
    ("other reason", pod("Pending", [dict(UNSCHEDULABLE, reason="SchedulingGated")]), WANT_UNSCHED, False),
    ("scheduled is not unschedulable", RUNNING, WANT_UNSCHED, False),
    ("scheduled", RUNNING, WANT_SCHEDULED, True),
    ("ready", RUNNING, WANT_READY, True),
    ("ready missing on pending", PENDING, WANT_READY, False),
    ("conditions null", pod("Pending", None), WANT_READY, False),
]


@pytest.mark.parametrize("case, obj, wanted, holds", CONDITION_CASES, ids=[c[0] for c in CONDITION_CASES])
def test_condition_holds(case, obj, wanted, holds):
    assert pw.condition_holds(obj, wanted) is holds


@pytest.mark.parametrize("obj, phase, holds", [
    (None, "Running", False),
    (PENDING, "Running", False),
    (RUNNING, "Running", True),
    (PENDING, "Pending", True),
    (pod(), "Pending", False),
])
def test_phase_holds(obj, phase, holds):
    assert pw.phase_holds(obj, phase) is holds


def test_find_condition_returns_the_api_object_untouched():
    assert pw.find_condition(PENDING, "PodScheduled") is UNSCHEDULABLE
    assert pw.find_condition(PENDING, "Ready") is None


@pytest.mark.parametrize("condition, expected", [
    (UNSCHEDULABLE, "Unschedulable\n" + SCHED_MSG + "\n"),
    (SCHEDULED, "\n\n"),
    (None, "\n\n"),
])
def test_record_content(condition, expected):
    assert pw.record_content(condition) == expected


@pytest.mark.parametrize("obj, ctype, fragments", [
    (None, "PodScheduled", ["the pod does not exist"]),
    (JUST_CREATED, "PodScheduled", ["phase=Pending", "node=<none>", "no PodScheduled condition"]),
    (PENDING, "PodScheduled", ["phase=Pending", "PodScheduled=False (Unschedulable: 0/3 nodes are available"]),
    (RUNNING, None, ["phase=Running", "node=lab-node-0", "Ready=True"]),
])
def test_describe_pod(obj, ctype, fragments):
    text = pw.describe_pod(obj, ctype)
    for fragment in fragments:
        assert fragment in text


@pytest.mark.parametrize("wanted, phase, expected", [
    (WANT_UNSCHED, None, "pod gpu-lab/cuda-probe condition PodScheduled=False reason Unschedulable"),
    (WANT_READY, None, "pod gpu-lab/cuda-probe condition Ready=True"),
    (None, "Running", "pod gpu-lab/cuda-probe phase Running"),
])
def test_describe_wanted(wanted, phase, expected):
    assert pw.describe_wanted("gpu-lab", "cuda-probe", wanted, phase) == expected


@pytest.mark.parametrize("args, expected", [
    (("gpu-lab", "cuda-probe", {"type": "PodScheduled", "status": False, "reason": "Unschedulable"}, None),
     (WANT_UNSCHED, None)),
    (("gpu-lab", "cuda-probe", {"type": "Ready"}, None), (WANT_READY, None)),
    (("gpu-lab", "cuda-probe", None, "Running"), (None, "Running")),
])
def test_validate_target(args, expected):
    assert pw.validate_target(*args) == expected


@pytest.mark.parametrize("args, fragment", [
    (("Gpu-Lab", "p", None, "Running"), "namespace 'Gpu-Lab' is not a valid namespace name"),
    (("gpu-lab", "p/../x", None, "Running"), "pod name 'p/../x' is not a valid pod name"),
    (("gpu-lab", "p", None, None), "exactly one of condition or phase"),
    (("gpu-lab", "p", {"type": "Ready"}, "Running"), "exactly one of condition or phase"),
    (("gpu-lab", "p", None, "Sleeping"), "phase must be one of"),
    (("gpu-lab", "p", {"type": "not a type"}, None), "not a valid condition type"),
    (("gpu-lab", "p", {"type": "Ready", "status": "maybe"}, None), "True, False or Unknown"),
])
def test_validate_target_refuses(args, fragment):
    with pytest.raises(GpuopError) as err:
        pw.validate_target(*args)
    assert fragment in err.value.msg


def test_validate_target_refuses_negative_timeout():
    with pytest.raises(GpuopError, match="timeout must be zero or more"):
        pw.validate_target("gpu-lab", "p", None, "Running", timeout=-1)


def test_pod_facts():
    facts = pw.pod_facts(RUNNING, WANT_SCHEDULED)
    assert facts == {"exists": True, "condition": SCHEDULED, "conditions": [SCHEDULED, READY],
                     "phase": "Running", "node_name": "lab-node-0"}
    assert pw.pod_facts(None, None) == {"exists": False, "condition": None, "conditions": [],
                                        "phase": None, "node_name": None}


def test_utc_now_format():
    assert pw.utc_now().endswith("Z") and "T" in pw.utc_now()


def test_argument_spec():
    spec = pw.argument_spec()
    assert {"kubeconfig", "context", "request_timeout", "name", "namespace", "condition", "phase",
            "timeout", "dest", "keep_existing"} == set(spec)
