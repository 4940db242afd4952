# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Wait for a pod's condition (type, status, optional reason) or phase, polled at 0.2 s.

A pod that does not exist yet means keep waiting. On time-out the error names what was waited for
and the last state seen. ``dest`` records the condition's reason and message (two lines) the moment
it holds; with ``keep_existing`` a file already there is an output recorded at its own moment and
is kept as it is, without waiting again.
"""

import copy
import datetime
import os
import re
import time

from ansible_collections.gpuop.gates.plugins.module_utils import files
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC, wait_for
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_LABEL_RE, DNS1123_SUBDOMAIN_RE

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
STATUSES = ("True", "False", "Unknown")
_CONDITION_TYPE_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")


def argument_spec():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update({
        "name": {"type": "str", "required": True},
        "namespace": {"type": "str", "default": "default"},
        "condition": {
            "type": "dict",
            "options": {
                "type": {"type": "str", "required": True},
                # raw: YAML ``status: False`` arrives as a bool; normalized to "False".
                "status": {"type": "raw", "default": "True"},
                "reason": {"type": "str"},
            },
        },
        "phase": {"type": "str", "choices": list(PHASES)},
        "timeout": {"type": "float", "default": 60.0},
        "dest": {"type": "path"},
        "keep_existing": {"type": "bool", "default": False},
    })
    return spec


MUTUALLY_EXCLUSIVE = [("condition", "phase")]
REQUIRED_ONE_OF = [("condition", "phase")]
REQUIRED_BY = {"dest": ("condition",)}


# ---------------------------------------------------------------- validation


def normalize_status(value):
    """``True``/``"true"``/``"True"`` → ``"True"``; the same for False and Unknown."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        for status in STATUSES:
            if value.strip().lower() == status.lower():
                return status
    raise GpuopError("condition status must be True, False or Unknown, got %r" % (value,))


def validate_target(namespace, name, condition=None, phase=None, timeout=60.0):
    """Check the inputs; return ``(condition or None, phase or None)`` normalized."""
    if not isinstance(namespace, str) or len(namespace) > 63 or not DNS1123_LABEL_RE.match(namespace):
        raise GpuopError("namespace %r is not a valid namespace name" % (namespace,))
    if not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN_RE.match(name):
        raise GpuopError("pod name %r is not a valid pod name" % (name,))
    if (condition is None) == (phase is None):
        raise GpuopError("give exactly one of condition or phase")
    if timeout is None or timeout < 0:
        raise GpuopError("timeout must be zero or more seconds, got %r" % (timeout,))
    if phase is not None:
        if phase not in PHASES:
            raise GpuopError("phase must be one of %s, got %r" % (", ".join(PHASES), phase))
        return None, phase
    ctype = condition.get("type")
    if not isinstance(ctype, str) or not _CONDITION_TYPE_RE.match(ctype):
        raise GpuopError("condition type %r is not a valid condition type (e.g. PodScheduled, Ready)" % (ctype,))
    wanted = {"type": ctype, "status": normalize_status(condition.get("status", "True")), "reason": condition.get("reason")}
    if wanted["reason"] is not None and not isinstance(wanted["reason"], str):
        raise GpuopError("condition reason must be a string, got %r" % (wanted["reason"],))
    return wanted, None


# ---------------------------------------------------------------- predicates (pure)


def find_condition(pod, ctype):
    """The pod's condition of type ``ctype`` (as the API returned it), or None."""
    for cond in ((pod or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def condition_holds(pod, wanted):
    """Whether the pod exists and has condition ``wanted`` (type, status, and reason when given)."""
    cond = find_condition(pod, wanted["type"])
    if cond is None or cond.get("status") != wanted["status"]:
        return False
    return wanted.get("reason") is None or cond.get("reason") == wanted["reason"]


def phase_holds(pod, phase):
    return pod is not None and ((pod.get("status") or {}).get("phase")) == phase


def describe_wanted(namespace, name, wanted=None, phase=None):
    if phase is not None:
        return "pod %s/%s phase %s" % (namespace, name, phase)
    text = "pod %s/%s condition %s=%s" % (namespace, name, wanted["type"], wanted["status"])
    if wanted.get("reason"):
        text += " reason %s" % wanted["reason"]
    return text


def describe_pod(pod, ctype=None):
    """A one-line account of the pod's state for a time-out message."""
    if pod is None:
        return "the pod does not exist"
    status = pod.get("status") or {}
    parts = ["phase=%s" % status.get("phase", "<none>")]
    node = (pod.get("spec") or {}).get("nodeName")
    parts.append("node=%s" % (node or "<none>"))
    conds = status.get("conditions") or []
    if ctype is not None and find_condition(pod, ctype) is None:
        parts.append("no %s condition" % ctype)
    for cond in conds:
        text = "%s=%s" % (cond.get("type"), cond.get("status"))
        detail = ": ".join(part for part in (cond.get("reason"), cond.get("message")) if part)
        if detail:
            text += " (%s)" % detail[:300]
        parts.append(text)
    return ", ".join(parts)


def record_content(condition):
    """The two lines of the record: the condition's reason, then its message, as written."""
    return "%s\n%s\n" % ((condition or {}).get("reason") or "", (condition or {}).get("message") or "")


def pod_facts(pod, wanted=None):
    status = (pod or {}).get("status") or {}
    return {
        "exists": pod is not None,
        "condition": find_condition(pod, wanted["type"]) if wanted else None,
        "conditions": status.get("conditions") or [],
        "phase": status.get("phase"),
        "node_name": ((pod or {}).get("spec") or {}).get("nodeName"),
    }


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------- the one function with I/O


def wait_pod(cluster, namespace, name, condition=None, phase=None, timeout=60.0, dest=None,
             keep_existing=False, check_mode=False, want_diff=False, clock=time.monotonic,
             sleep=time.sleep, now=utc_now):
    """Wait until the pod holds the condition or phase; optionally record the condition in ``dest``."""
    wanted, phase = validate_target(namespace, name, condition, phase, timeout)
    if dest is not None and wanted is None:
        raise GpuopError("dest records a condition's reason and message: it needs condition, not phase")
    path = "/api/v1/namespaces/%s/pods/%s" % (namespace, name)
    what = describe_wanted(namespace, name, wanted, phase)
    result = {"changed": False, "waited": False, "what": what, "elapsed": 0.0, "reached_at": None}

    if dest is not None and keep_existing and os.path.exists(dest):
        # Recorded at its own moment by an earlier run: keep it, and do not wait for a state that
        # has passed. One read reports the pod as it is now.
        result.update(pod_facts(cluster.get_or_none(path), wanted))
        result.update({"dest": dest, "kept": True, "content": files.read_text(dest)})
        return result

    if check_mode:
        pod = cluster.get_or_none(path)
        if pod is None:
            # The tasks that would create it did not run in check mode: report, do not wait.
            result.update(pod_facts(None, wanted))
            if dest is not None:
                result.update({"dest": dest, "kept": False, "content": None,
                               "changed": not (keep_existing and os.path.exists(dest))})
            return result

    def predicate(pod):
        if wanted is not None:
            return condition_holds(pod, wanted)
        return phase_holds(pod, phase)

    pod, elapsed = wait_for(
        lambda: cluster.get_or_none(path),
        predicate,
        timeout,
        what,
        describe=lambda pod: describe_pod(pod, wanted["type"] if wanted else None),
        clock=clock,
        sleep=sleep,
    )
    result.update(pod_facts(pod, wanted))
    result.update({"waited": True, "elapsed": elapsed, "reached_at": now()})

    if dest is not None:
        content = record_content(result["condition"])
        changed, diff = files.ensure_file(dest, content, 0o644, check_mode=check_mode)
        result.update({"changed": changed, "dest": dest, "kept": False, "content": content})
        if want_diff:
            result["diff"] = diff
    return result
