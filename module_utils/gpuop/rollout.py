# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A DaemonSet rollout from what the API says: numbers, old/new pods per node, phase and blocker.

``analyse`` is pure: it reads the raw API JSON of one DaemonSet, its pods and (optionally) the
nodes, and decides. ``observe``/``watch`` do the I/O through a ``gpuop.k8s.Cluster``: one GET of
the DaemonSet and one LIST of its pods by label selector per look, one LIST of nodes at the end
when a blocker needs numbers; nothing per node.

Rules, read from kubernetes v1.36.1 (``pkg/controller/daemon``, ``pkg/scheduler``):

* **New pods.** The controller counts a pod as updated when its ``pod-template-generation``
  label equals the DaemonSet's ``deprecated.daemonset.template.generation`` annotation, or its
  ``controller-revision-hash`` equals the newest ControllerRevision's hash
  (``util.IsPodUpdated``). We use the template generation, which needs no extra call
  (ControllerRevisions), and is *not* ``metadata.generation``: that one also moves when only
  ``updateStrategy`` or ``minReadySeconds`` change, the template generation only when the
  template does. The hash criterion (a rollback to an earlier template reuses its revision, so
  older pods count as updated again) is honoured by taking the current hash from any pod that
  carries the current template generation.
* **maxUnavailable** is resolved like ``util.UnavailableCount``: an int, or a percentage of
  ``desiredNumberScheduled`` rounded up; 0 together with maxSurge 0 means 1.
* **Phase**, from state only (no timer): ``complete`` when observedGeneration is current, every
  desired node runs an updated available pod and no old pod is left; ``stalled`` when
  observedGeneration is current, every pod that can exist exists (``currentNumberScheduled`` >=
  desired, no node between an old and a new pod), every unavailable new pod is Pending with
  ``PodScheduled=False/Unschedulable``, and the controller may not replace another old pod
  (unavailable >= maxUnavailable, or no available old pod left; with maxSurge, no surge slot
  left) — or, under ``OnDelete``, old pods remain and nothing else moves; ``progressing``
  otherwise. Either phase also needs the status to agree with the pods: the controller writes
  the numbers after it acted, so for a moment the pod list shows a new Pending pod while the status
  still counts the old one (``controller_tally`` recounts the pods the way the controller does).
* **Blocker**, from the Pending new pods' ``PodScheduled`` messages (``FitError.Error``:
  ``0/N nodes are available: <count reason>, .... <post-filter>``). A DaemonSet pod is pinned to
  its node by ``matchFields metadata.name``, so the NodeAffinity PreFilter leaves every other
  node out with ``node(s) didn't satisfy plugin(s) [NodeAffinity]``: noise. The blocker is the
  reason on the pod's own node.

Blocker kinds (stable spellings):

* ``insufficient-<resource>``: ``Insufficient <resource>`` from NodeResourcesFit, with the
  resource name verbatim as the scheduler prints it: ``insufficient-cpu``,
  ``insufficient-memory``, ``insufficient-ephemeral-storage``, ``insufficient-nvidia.com/gpu``;
  ``Too many pods`` is ``insufficient-pods``.
* ``taint``: ``node(s) had untolerated taint(s)`` (v1.36; older releases printed
  ``node(s) had untolerated taint {key: value}`` or ``node(s) had taints that the pod didn't
  tolerate``, matched too), and ``node(s) were unschedulable`` (cordon, itself a taint).
* ``node-affinity``: ``node(s) didn't match Pod's node affinity/selector``, ``... scheduler-enforced
  node affinity``, ``... the requested node name``, or the own node missing from the scheduler's
  view (every node reported as ``didn't satisfy plugin(s) [NodeAffinity]``).
* ``unknown``: any other reason (volumes, ports, pod affinity, DRA, ...), the reason kept.
* ``on-delete``: ``OnDelete`` strategy with old pods left (nothing is scheduled; the controller
  will not replace them).
"""

import calendar
import copy
import json
import math
import re
import time
from fractions import Fraction

from ansible_collections.gpuop.gates.plugins.module_utils import quantity
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
REVISION_HASH_LABEL = "controller-revision-hash"

PHASE_PROGRESSING = "progressing"
PHASE_COMPLETE = "complete"
PHASE_STALLED = "stalled"
PHASES = (PHASE_PROGRESSING, PHASE_COMPLETE, PHASE_STALLED)

REPORT_KEYS = ("DESIRED", "UPDATED", "READY", "OLD_IMAGE_PODS", "MAX_UNAVAILABLE", "BLOCKER")

_AVAILABLE_RE = re.compile(r"^0/(\d+) nodes are available: (.*)$", re.S)
_HISTOGRAM_END_RE = re.compile(r"\.(?:\s|$)")
_COUNTED_RE = re.compile(r"^(\d+) (.+)$", re.S)
_ABSENT_NODES_RE = re.compile(r"^node\(s\) didn't satisfy plugin\(s\) \[")
_INSUFFICIENT_RE = re.compile(r"^Insufficient (\S+)$")
_TAINT_RES = (
    re.compile(r"^node\(s\) had untolerated taint"),
    re.compile(r"^node\(s\) had taints? .*didn't tolerate"),
    re.compile(r"^node\(s\) were unschedulable$"),
)
_AFFINITY_RES = (
    re.compile(r"^node\(s\) didn't match Pod's node affinity/selector$"),
    re.compile(r"^node\(s\) didn't match scheduler-enforced node affinity$"),
    re.compile(r"^node\(s\) didn't match the requested node name$"),
    re.compile(r"^node\(s\) didn't match node selector$"),
    re.compile(r"^node\(s\) didn't satisfy plugin\(s\) \[NodeAffinity\]$"),
)
# NodeResourcesFit reports these in this order for one node (fit.go fitsRequest).
_FIT_ORDER = ("pods", "cpu", "memory", "ephemeral-storage")
_BYTE_RESOURCES = ("memory", "ephemeral-storage")


# ---------------------------------------------------------------------------------------------
# Quantities

def parse_quantity(text):
    """A Kubernetes quantity (``64Gi``, ``500m``, ``1e3``, ``4``) as an exact Fraction; bad input -> GpuopError."""
    value = quantity.parse_quantity(text if isinstance(text, str) else str(text))
    if value is None:
        raise GpuopError("not a Kubernetes quantity: %r" % (text,))
    return value


def base_units(resource, text):
    """A quantity in the scheduler's integer unit: millicores for cpu, bytes/counts otherwise (rounded up)."""
    value = parse_quantity(text)
    if resource == "cpu":
        value = value * 1000
    return int(math.ceil(value))


def human(resource, amount):
    """``68719476736`` bytes -> ``64Gi``; ``8000`` millicores -> ``8``; counts as they are."""
    if amount is None:
        return None
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else "%dm" % amount
    if resource in _BYTE_RESOURCES:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = quantity.SUFFIX[suffix]
            if amount >= unit:
                if amount % unit == 0:
                    return "%d%s" % (amount // unit, suffix)
                return "%s%s" % (("%.2f" % (float(amount) / unit)).rstrip("0").rstrip("."), suffix)
        return str(amount)
    return str(amount)


# ---------------------------------------------------------------------------------------------
# Reading objects

def _meta(obj):
    return obj.get("metadata") or {}


def _labels(obj):
    return _meta(obj).get("labels") or {}


def _conditions(pod):
    return {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}


def pod_ready(pod):
    return (_conditions(pod).get("Ready") or {}).get("status") == "True"


def pod_available(pod, min_ready_seconds=0, now=None):
    """Ready, and for ``minReadySeconds`` when a clock reading ``now`` (epoch seconds) is given."""
    if not pod_ready(pod):
        return False
    if not min_ready_seconds or now is None:
        return True
    since = _epoch((_conditions(pod).get("Ready") or {}).get("lastTransitionTime"))
    return since is None or since + min_ready_seconds <= now


def _epoch(stamp):
    if not stamp:
        return None
    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def pod_unschedulable(pod):
    """Pending and the scheduler said ``PodScheduled=False`` with reason ``Unschedulable``."""
    cond = _conditions(pod).get("PodScheduled") or {}
    return ((pod.get("status") or {}).get("phase") == "Pending"
            and cond.get("status") == "False" and cond.get("reason") == "Unschedulable")


def pinned_node(pod):
    """The node a DaemonSet pod is pinned to by ``matchFields metadata.name In [node]``."""
    terms = (((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for term in terms:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return values[0]
    return None


def target_node(pod):
    """``util.GetTargetNodeName``: ``spec.nodeName``, else the pinned node."""
    return (pod.get("spec") or {}).get("nodeName") or pinned_node(pod)


def pod_request(pod, resource):
    """What the scheduler adds up for ``resource``: max(sum of containers, any init container) + overhead.

    Requests, falling back to limits (the API defaults requests from limits). In the scheduler's
    integer unit (see ``base_units``); 0 when nothing asks for it.
    """
    spec = pod.get("spec") or {}

    def one(container):
        res = container.get("resources") or {}
        value = (res.get("requests") or {}).get(resource)
        if value is None:
            value = (res.get("limits") or {}).get(resource)
        return base_units(resource, value) if value is not None else 0

    total = sum(one(c) for c in spec.get("containers") or [])
    for init in spec.get("initContainers") or []:
        if init.get("restartPolicy") == "Always":
            total += one(init)
        else:
            total = max(total, one(init))
    overhead = (spec.get("overhead") or {}).get(resource)
    if overhead is not None:
        total += base_units(resource, overhead)
    return total


def label_selector(selector):
    """A LabelSelector object as the ``labelSelector`` query string."""
    parts = ["%s=%s" % (k, v) for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append("%s in (%s)" % (key, ",".join(values)))
        elif op == "NotIn":
            parts.append("%s notin (%s)" % (key, ",".join(values)))
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append("!" + key)
        else:
            raise GpuopError("unsupported label selector operator %r" % op)
    if not parts:
        raise GpuopError("the DaemonSet has an empty selector")
    return ",".join(parts)


def resolve_int_or_percent(value, total, round_up=True):
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        if text.isdigit():
            return int(text)
        raise GpuopError("invalid value %r: an int or a percentage like '25%%'" % (value,))
    scaled = Fraction(int(text[:-1]) * total, 100)
    return int(math.ceil(scaled)) if round_up else int(math.floor(scaled))


# ---------------------------------------------------------------------------------------------
# Scheduler messages

def parse_scheduler_message(message):
    """Split ``0/N nodes are available: <histogram>. <post-filter>`` into its parts; None for other shapes."""
    match = _AVAILABLE_RE.match(message or "")
    if not match:
        return None
    body = match.group(2)
    end = _HISTOGRAM_END_RE.search(body)
    histogram = body[:end.start()] if end else body
    post = body[end.end():].strip() if end else ""
    reasons = []
    for item in histogram.split(", "):
        counted = _COUNTED_RE.match(item)
        if counted:
            reasons.append({"count": int(counted.group(1)), "reason": counted.group(2)})
        elif item:
            reasons.append({"count": None, "reason": item})
    return {"nodes": int(match.group(1)), "reasons": reasons, "post_filter": post}


def own_node_reasons(parsed, pinned):
    """The reasons that concern the pod's own node: for a pinned pod, all but the absent-node noise."""
    if not pinned:
        return [r["reason"] for r in parsed["reasons"]]
    return [r["reason"] for r in parsed["reasons"] if not _ABSENT_NODES_RE.match(r["reason"])]


def classify_reasons(reasons):
    """(kind, resource, reason) for a node's reasons; see the module docstring for the kinds."""
    if not reasons:
        return "node-affinity", None, None
    for reason in reasons:
        if any(r.match(reason) for r in _TAINT_RES):
            return "taint", None, reason
    for reason in reasons:
        if any(r.match(reason) for r in _AFFINITY_RES):
            return "node-affinity", None, reason
    insufficient = []
    for reason in reasons:
        if reason == "Too many pods":
            insufficient.append(("pods", reason))
            continue
        match = _INSUFFICIENT_RE.match(reason)
        if match:
            insufficient.append((match.group(1), reason))
    if insufficient:
        def rank(item):
            return _FIT_ORDER.index(item[0]) if item[0] in _FIT_ORDER else len(_FIT_ORDER)
        resource, reason = sorted(insufficient, key=rank)[0]
        return "insufficient-" + resource, resource, reason
    return "unknown", None, reasons[0]


def classify_message(message, pinned=True):
    """The blocker kind of one PodScheduled message (``unknown`` for a shape we do not know)."""
    parsed = parse_scheduler_message(message)
    if parsed is None:
        return {"kind": "unknown", "resource": None, "reason": message, "reasons": []}
    reasons = own_node_reasons(parsed, pinned)
    kind, resource, reason = classify_reasons(reasons)
    return {"kind": kind, "resource": resource, "reason": reason, "reasons": reasons}


# ---------------------------------------------------------------------------------------------
# Taints

def _tolerates(toleration, taint):
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(node, pod):
    """The node's NoSchedule/NoExecute taints the pod does not tolerate, as ``key=value:Effect``."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    found = []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            value = taint.get("value")
            found.append("%s%s:%s" % (taint.get("key"), "=" + value if value else "", taint.get("effect")))
    return found


# ---------------------------------------------------------------------------------------------
# The analysis

def _status_int(status, key):
    value = status.get(key)
    return int(value) if value is not None else 0


def _template_generation(ds):
    raw = (_meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if raw is not None:
        try:
            return str(int(raw))
        except ValueError:
            pass
    return None


def _owned(pod, uid):
    if not uid:
        return True
    return any(ref.get("uid") == uid and ref.get("controller") for ref in _meta(pod).get("ownerReferences") or [])


def _blocker(pod, node_name, nodes_by_name, all_nodes):
    cond = _conditions(pod).get("PodScheduled") or {}
    message = cond.get("message") or ""
    pinned = pinned_node(pod) is not None
    found = classify_message(message, pinned)
    blocker = {
        "kind": found["kind"],
        "pod": _meta(pod).get("name"),
        "node": node_name,
        "reason": found["reason"],
        "node_reasons": found["reasons"],
        "message": message,
    }
    resource = found["resource"]
    if resource:
        requested = 1 if resource == "pods" else pod_request(pod, resource)
        blocker.update({"resource": resource, "requested": requested, "requested_human": human(resource, requested)})
        if all_nodes is not None:
            allocatable = {}
            for node in all_nodes:
                value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
                allocatable[_meta(node).get("name")] = base_units(resource, value) if value is not None else 0
            largest_node = max(sorted(allocatable), key=lambda n: allocatable[n]) if allocatable else None
            largest = allocatable[largest_node] if largest_node else 0
            own = allocatable.get(node_name)
            blocker.update({
                "node_allocatable": own,
                "node_allocatable_human": human(resource, own),
                "largest_allocatable": largest,
                "largest_allocatable_human": human(resource, largest),
                "largest_allocatable_node": largest_node,
                "fits_any_node": requested <= largest,
            })
    elif found["kind"] == "taint" and nodes_by_name is not None and node_name in nodes_by_name:
        blocker["untolerated_taints"] = untolerated_taints(nodes_by_name[node_name], pod)
    elif found["kind"] == "node-affinity" and nodes_by_name is not None:
        blocker["node_exists"] = node_name in nodes_by_name
    return blocker


def analyse(daemonset, pods, nodes=None, now=None):
    """Analyse one DaemonSet from raw API JSON.

    ``pods``: the pods its selector matches (others' pods are ignored by owner uid).
    ``nodes``: the node list, or None; only the blocker's numbers need it.
    ``now``: epoch seconds, only to honour ``minReadySeconds`` for pods' availability.
    """
    meta = _meta(daemonset)
    spec = daemonset.get("spec") or {}
    status = daemonset.get("status") or {}
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    numbers = {
        "desired": _status_int(status, "desiredNumberScheduled"),
        "current": _status_int(status, "currentNumberScheduled"),
        "updated": _status_int(status, "updatedNumberScheduled"),
        "ready": _status_int(status, "numberReady"),
        "available": _status_int(status, "numberAvailable"),
        "unavailable": _status_int(status, "numberUnavailable"),
        "misscheduled": _status_int(status, "numberMisscheduled"),
    }
    strategy = spec.get("updateStrategy") or {}
    strategy_type = strategy.get("type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate") or {}
    if strategy_type == "RollingUpdate":
        max_unavailable_spec = rolling.get("maxUnavailable", 1)
        max_unavailable = resolve_int_or_percent(max_unavailable_spec, numbers["desired"])
        max_surge = resolve_int_or_percent(rolling.get("maxSurge"), numbers["desired"])
        if numbers["desired"] > 0 and max_unavailable == 0 and max_surge == 0:
            max_unavailable = 1
    else:
        max_unavailable_spec, max_unavailable, max_surge = None, 0, 0
    min_ready = int(spec.get("minReadySeconds") or 0)

    template_generation = _template_generation(daemonset)
    own = [p for p in pods or [] if _owned(p, meta.get("uid"))]
    current_hash = None
    for pod in own:
        if template_generation is not None and _labels(pod).get(TEMPLATE_GENERATION_LABEL) == template_generation:
            current_hash = _labels(pod).get(REVISION_HASH_LABEL)
            if current_hash:
                break

    def is_new(pod):
        labels = _labels(pod)
        if template_generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == template_generation:
            return True
        return bool(current_hash) and labels.get(REVISION_HASH_LABEL) == current_hash

    per_node = {}
    terminating = []
    new_unavailable = []
    old_pods = []
    old_unavailable = []
    for pod in sorted(own, key=lambda p: (target_node(p) or "", _meta(p).get("name") or "")):
        name = _meta(pod).get("name")
        if _meta(pod).get("deletionTimestamp"):
            terminating.append(name)
            continue
        node = target_node(pod) or ""
        slot = per_node.setdefault(node, {"old": [], "new": []})
        available = pod_available(pod, min_ready, now)
        if is_new(pod):
            slot["new"].append(name)
            if not available:
                new_unavailable.append(pod)
        else:
            slot["old"].append(name)
            old_pods.append(name)
            if not available:
                old_unavailable.append(name)

    observed_current = generation is not None and observed is not None and int(observed) >= int(generation)
    stuck = [p for p in new_unavailable if pod_unschedulable(p)]
    all_new_stuck = len(stuck) == len(new_unavailable)
    both = sorted(n for n, s in per_node.items() if s["old"] and s["new"])
    old_unavailable_nodes = _nodes_of(old_unavailable, per_node)  # once: inside the loop it made N nodes cost N^2
    only_old_available = sorted(
        n for n, s in per_node.items() if s["old"] and not s["new"] and n not in old_unavailable_nodes)
    missing = max(0, numbers["desired"] - numbers["current"])
    # The status is written by the controller after it acted: between a pod's deletion or creation and the
    # next status write, the pods have moved on and the numbers have not (seen: a new Pending pod listed
    # while the status still said updated 0, ready 3). A phase is only decided once they agree.
    tally = controller_tally(own, is_new)
    status_agrees = numbers["misscheduled"] > 0 or all(
        numbers[key] == tally[key] for key in ("current", "updated", "ready"))

    complete = (observed_current and status_agrees and numbers["updated"] >= numbers["desired"]
                and numbers["available"] >= numbers["desired"] and not old_pods and not new_unavailable)
    if strategy_type == "RollingUpdate":
        if max_surge == 0:
            counted = len(new_unavailable) + len(both) + len(old_unavailable) + missing
            can_replace = bool(only_old_available) and counted < max_unavailable
            settled = not both
        else:
            waiting = {_meta(p).get("name") for p in new_unavailable}
            surging = len([n for n in both if waiting.intersection(per_node[n]["new"])])
            can_replace = bool(only_old_available) and surging < max_surge
            settled = True
        stalled = (observed_current and status_agrees and not complete and missing == 0 and settled and not old_unavailable
                   and bool(stuck) and all_new_stuck and not can_replace)
    else:
        stalled = (observed_current and status_agrees and not complete and missing == 0 and all_new_stuck
                   and (bool(stuck) or bool(old_pods)))
    phase = PHASE_COMPLETE if complete else (PHASE_STALLED if stalled else PHASE_PROGRESSING)

    nodes_by_name = None if nodes is None else {_meta(n).get("name"): n for n in nodes}
    blockers = [_blocker(p, target_node(p), nodes_by_name, nodes) for p in stuck]
    blocker = primary_blocker(blockers)
    if blocker is None and phase == PHASE_STALLED and strategy_type == "OnDelete":
        blocker = {"kind": "on-delete", "pod": None, "node": None, "reason": None, "node_reasons": [],
                   "message": "updateStrategy OnDelete: old pods are replaced only when deleted"}

    return dict(numbers, **{
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "generation": generation,
        "observed_generation": observed,
        "observed_generation_current": observed_current,
        "status_agrees_with_pods": status_agrees,
        "update_strategy": strategy_type,
        "max_unavailable_spec": max_unavailable_spec,
        "max_unavailable": max_unavailable,
        "max_surge": max_surge,
        "template_generation": None if template_generation is None else int(template_generation),
        "template_hash": current_hash,
        "new_pods": sum(len(s["new"]) for s in per_node.values()),
        "old_image_pods": len(old_pods),
        "old_pods": old_pods,
        "terminating_pods": terminating,
        "pods_per_node": per_node,
        "phase": phase,
        "blocker": blocker,
        "blockers": blockers,
    })


# Ties between kinds: a pod blocked by a taint or node affinity sits on a node the controller no
# longer wants (it shares those rules with the scheduler: the pod is "misscheduled"), so a resource
# shortage on a wanted node is the better answer.
_KIND_RANK = {"taint": 3, "node-affinity": 2, "unknown": 1}


def primary_blocker(blockers):
    """The blocker to report: the most frequent kind, then insufficient-* before unknown, node-affinity, taint, then node name."""
    if not blockers:
        return None
    counts = {}
    for blocker in blockers:
        counts[blocker["kind"]] = counts.get(blocker["kind"], 0) + 1
    return sorted(blockers, key=lambda b: (-counts[b["kind"]], _KIND_RANK.get(b["kind"], 0), b["node"] or ""))[0]


def controller_tally(pods, is_new):
    """The status numbers the DaemonSet controller would write for ``pods`` (``updateDaemonSetStatus``).

    Per target node, the controller looks at one pod: the oldest (a pod with ``spec.nodeName`` before
    one without, then by creationTimestamp, then by name), leaving out pods that are both terminal
    (Succeeded or Failed) and being deleted. Returns ``{"current", "updated", "ready"}``: nodes with a
    pod, nodes whose pod is updated, nodes whose pod is Ready. Misscheduled nodes are counted too: the
    caller compares only when the status says there are none.
    """
    chosen = {}
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed") and _meta(pod).get("deletionTimestamp"):
            continue
        node = target_node(pod)
        if not node:
            continue
        key = (0 if (pod.get("spec") or {}).get("nodeName") else 1,
               _meta(pod).get("creationTimestamp") or "", _meta(pod).get("name") or "")
        if node not in chosen or key < chosen[node][0]:
            chosen[node] = (key, pod)
    picked = [entry[1] for entry in chosen.values()]
    return {"current": len(picked), "updated": len([p for p in picked if is_new(p)]),
            "ready": len([p for p in picked if pod_ready(p)])}


def _nodes_of(pod_names, per_node):
    names = set(pod_names)
    return {n for n, s in per_node.items() if names.intersection(s["old"])}


def needs_nodes(analysis):
    """Whether the blocker's numbers need the node list."""
    return any(b["kind"] != "unknown" for b in analysis["blockers"])


def report_text(analysis):
    """rollout.txt: six ``KEY=value`` lines."""
    blocker = analysis.get("blocker")
    spec_value = analysis.get("max_unavailable_spec")
    values = (
        analysis["desired"], analysis["updated"], analysis["ready"], analysis["old_image_pods"],
        "none" if spec_value is None else spec_value,
        blocker["kind"] if blocker else "none",
    )
    return "".join("%s=%s\n" % (key, value) for key, value in zip(REPORT_KEYS, values))


def describe(analysis):
    """One line for a timeout message."""
    blocker = analysis.get("blocker")
    text = ("phase %s; observedGeneration %s of %s; desired %d, current %d, updated %d, ready %d, available %d, "
            "unavailable %d; old pods %d; maxUnavailable %s"
            % (analysis["phase"], analysis["observed_generation"], analysis["generation"], analysis["desired"],
               analysis["current"], analysis["updated"], analysis["ready"], analysis["available"],
               analysis["unavailable"], analysis["old_image_pods"], analysis["max_unavailable"]))
    if not analysis.get("status_agrees_with_pods", True):
        text += "; the status does not yet count the pods listed"
    if blocker:
        text += "; blocker %s on %s: %s" % (blocker["kind"], blocker["node"], blocker["message"])
    return text


# ---------------------------------------------------------------------------------------------
# Talking to the cluster (through gpuop.k8s.Cluster): constant number of calls

def daemonset_path(namespace, name):
    return "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (namespace, name)


def look(cluster, namespace, name, now=None):
    """One look: GET the DaemonSet, LIST its pods by its selector. Returns (ds, pods, analysis)."""
    ds = cluster.get(daemonset_path(namespace, name))
    selector = label_selector((ds.get("spec") or {}).get("selector") or {})
    pods = cluster.list("/api/v1/namespaces/%s/pods" % namespace, label_selector=selector)
    return ds, pods, analyse(ds, pods, None, now)


def pod_list_interval(desired):
    """Seconds between two LISTs of a DaemonSet's pods while its status stays the same: the poll interval (0.2 s)
    up to 100 pods, then 2 ms per pod (2 s at 1,000), never more than 2 s."""
    return min(2.0, max(0.2, 0.002 * (desired or 0)))


def observe(cluster, namespace, name, wait_for=None, timeout=60.0, clock=None):
    """Analyse now, or poll (0.2 s, ``gpuop.k8s.wait_for``) until the phase is ``wait_for``.

    Returns ``(analysis, elapsed)``; the node list is read once at the end, when the blocker
    needs it.
    """
    from ansible_collections.gpuop.gates.plugins.module_utils.k8s import NotFound, wait_for as poll

    clock = clock or time.time
    if wait_for is not None and wait_for not in (PHASE_STALLED, PHASE_COMPLETE):
        raise GpuopError("wait_for must be stalled or complete, got %r" % (wait_for,))

    cache = {}
    monotonic = time.monotonic

    def fetch():
        # The DaemonSet is read on every look (one small GET). Its pods are listed again when its status or
        # generation changed, or when the last list is older than pod_list_interval(desired): every look for
        # a small DaemonSet, at most every 2 s for one of 1,000 pods. A big cluster is not sent a LIST of
        # every pod five times a second.
        ds = cluster.get(daemonset_path(namespace, name))
        key = json.dumps([(ds.get("metadata") or {}).get("generation"), ds.get("status")], sort_keys=True)
        desired = _status_int(ds.get("status") or {}, "desiredNumberScheduled")
        interval = pod_list_interval(desired)
        if cache.get("key") != key or interval <= 0.2 or monotonic() - cache.get("at", 0.0) >= interval:
            selector = label_selector((ds.get("spec") or {}).get("selector") or {})
            cache.update(key=key, at=monotonic(),
                         pods=cluster.list("/api/v1/namespaces/%s/pods" % namespace, label_selector=selector))
        return ds, cache["pods"], analyse(ds, cache["pods"], None, clock())

    if wait_for is None:
        try:
            ds, pods, analysis = fetch()
        except NotFound:
            raise GpuopError("DaemonSet %s/%s not found" % (namespace, name))
        elapsed = 0.0
    else:
        (ds, pods, analysis), elapsed = poll(
            fetch, lambda state: state[2]["phase"] == wait_for, timeout,
            "DaemonSet %s/%s to be %s" % (namespace, name, wait_for),
            describe=lambda state: describe(state[2]))
    if needs_nodes(analysis):
        nodes = cluster.list("/api/v1/nodes")
        analysis = analyse(ds, pods, nodes, clock())
    return analysis, elapsed


def argument_spec():
    from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC

    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update({
        "namespace": {"type": "str", "required": True},
        "name": {"type": "str", "required": True},
        "dest": {"type": "path"},
        "wait_for": {"type": "str", "choices": [PHASE_STALLED, PHASE_COMPLETE]},
        "timeout": {"type": "float", "default": 60.0},
    })
    return spec
