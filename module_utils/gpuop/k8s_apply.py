# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Write manifests and apply objects in one module run: the written view and what the API stored.

Pure logic over :class:`gpuop.k8s.Cluster` (no AnsibleModule). Objects are applied in the order
given with server-side apply (``PATCH ... application/apply-patch+yaml``, one field manager), so a
re-run with the same objects is a no-op the API itself recognises (the resourceVersion stays).
A namespaced object whose namespace's default ServiceAccount the controller has not made yet is
refused by the API (403 ``error looking up service account``): that refusal is retried, polled
every 0.2 s, until ``timeout``.
"""

import copy
import json
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils import file_set
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import POLL_INTERVAL, NotFound
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_LABEL_RE, DNS1123_SUBDOMAIN_RE

# apiVersion, kind -> (plural, namespaced) of the kinds the lab applies; another kind is refused
# with its name (add it here) rather than guessed.
KINDS = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Pod"): ("pods", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("node.k8s.io/v1", "RuntimeClass"): ("runtimeclasses", False),
    ("v1", "Node"): ("nodes", False),
}
# Kinds that may be read but never applied: a Node belongs to its kubelet (or to kwok).
READ_ONLY_KINDS = {("v1", "Node")}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_SA_PENDING = ("error looking up service account", "serviceaccount")
# Fields the API sets or bumps on its own: not what the user asked for.
_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp")


def argument_spec():
    return {
        "files": file_set.FILES_SPEC,
        "objects": {"type": "list", "elements": "dict", "default": []},
        "read": {"type": "list", "elements": "dict", "default": []},
        "field_manager": {"type": "str", "default": "gpuop"},
        "timeout": {"type": "float", "default": 60.0},
    }


def describe(obj):
    """``Kind namespace/name`` (or ``Kind name``) of an object, for messages."""
    meta = obj.get("metadata") or {}
    where = "%s/%s" % (meta.get("namespace"), meta.get("name")) if meta.get("namespace") else meta.get("name")
    return "%s %s" % (obj.get("kind"), where)


def object_path(obj, index=0, field="objects"):
    """API path of ``obj``; bad input (unknown kind, missing name/namespace) -> GpuopError naming the object."""
    if not isinstance(obj, dict):
        raise GpuopError("%s[%d] must be a mapping (a Kubernetes object), got %s" % (field, index, type(obj).__name__))
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in KINDS:
        raise GpuopError("%s[%d]: apiVersion %r kind %r is not one k8s_apply knows (%s)"
                         % (field, index, key[0], key[1], ", ".join("%s %s" % k for k in sorted(KINDS))))
    plural, namespaced = KINDS[key]
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not DNS1123_SUBDOMAIN_RE.match(name):
        raise GpuopError("%s[%d] (%s): metadata.name must be a DNS subdomain, got %r" % (field, index, key[1], name))
    prefix = "/api/v1" if key[0] == "v1" else "/apis/%s" % key[0]
    if not namespaced:
        return "%s/%s/%s" % (prefix, plural, name)
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not DNS1123_LABEL_RE.match(namespace):
        raise GpuopError("%s[%d] (%s %s): metadata.namespace must be set to a DNS label, got %r"
                         % (field, index, key[1], name, namespace))
    return "%s/namespaces/%s/%s/%s" % (prefix, namespace, plural, name)


def essence(obj):
    """The object without what the API sets on its own (status, resourceVersion, managed fields, ...)."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for key in _VOLATILE_METADATA:
        meta.pop(key, None)
    return out


def _sa_pending(exc):
    text = str(exc).lower()
    return getattr(exc, "details", {}).get("status") == 403 and all(word in text for word in _SA_PENDING)


def holds(wanted, current):
    """Whether every field of ``wanted`` has that value in ``current`` (mappings: a subset; lists: same length)."""
    if isinstance(wanted, dict):
        return isinstance(current, dict) and all(k in current and holds(v, current[k]) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(current, list) and len(wanted) == len(current) and all(
            holds(w, c) for w, c in zip(wanted, current))
    return wanted == current or (not isinstance(wanted, bool) and isinstance(wanted, int) and str(wanted) == current)


def apply_object(cluster, obj, path, field_manager, check_mode, timeout, clock=time.monotonic, sleep=time.sleep):
    """Server-side apply ``obj``; returns (result, before, after). result: created, configured or unchanged.

    An object that exists and holds every field asked already is left alone (no write call): the API
    would not change it, and a Namespace created by an apply gets its field ownership rewritten by the
    next one (``before-first-apply``), a change of nothing the user asked for.
    """
    before = cluster.get_or_none(path)
    if before is not None and holds(obj, before):
        return "unchanged", before, before
    query = {"fieldManager": field_manager, "force": "true"}
    if check_mode:
        query["dryRun"] = "All"
    start = clock()
    while True:
        try:
            after = cluster.request("PATCH", path, body=json.dumps(obj), query=query, content_type=APPLY_CONTENT_TYPE)
            break
        except GpuopError as exc:
            if not _sa_pending(exc):
                raise GpuopError("%s: %s" % (describe(obj), exc.msg))
            if clock() - start >= timeout:
                raise GpuopError("%s: the namespace's default ServiceAccount did not appear within %ss: %s"
                                 % (describe(obj), timeout, exc.msg))
            sleep(POLL_INTERVAL)
    if before is None:
        return "created", None, after
    if check_mode:
        same = essence(before) == essence(after)
    else:
        same = (before.get("metadata") or {}).get("resourceVersion") == (after.get("metadata") or {}).get("resourceVersion")
    return ("unchanged" if same else "configured"), before, after


def stored(obj):
    """What the API stored (or would store), without its managed fields (long, and no one's business here)."""
    if obj is None:
        return None
    out = dict(obj)
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return out


def run(cluster, params, check_mode=False, clock=time.monotonic, sleep=time.sleep):
    """Read ``read``, write ``files``, then apply ``objects`` in order. Returns the module's result dict
    (changed, read, files, objects, diff). ``read`` is read before anything is written: a cluster that
    does not answer fails the run with no file written. In check mode nothing is written or kept: files
    are compared, objects dry-run; an object in a namespace this call would create is reported as
    ``would create`` (the API cannot dry-run it)."""
    objects = params.get("objects") or []
    paths = [object_path(obj, i) for i, obj in enumerate(objects)]  # all bad input before any write
    for i, obj in enumerate(objects):
        if (obj["apiVersion"], obj["kind"]) in READ_ONLY_KINDS:
            raise GpuopError("objects[%d] (%s %s): k8s_apply reads this kind but never applies it"
                             % (i, obj["kind"], obj["metadata"]["name"]))
    reads = params.get("read") or []
    read_paths = [object_path(ref, i, "read") for i, ref in enumerate(reads)]
    files = params.get("files") or []
    file_modes = file_set.modes("files", files, "0644")
    timeout = params.get("timeout", 60.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout >= 0:
        raise GpuopError("timeout must be 0 or more seconds, got %r" % (timeout,))
    result = {"changed": False, "read": [], "files": [], "objects": [], "diff": []}
    for ref, path in zip(reads, read_paths):
        try:
            result["read"].append(stored(cluster.get_or_none(path)))
        except GpuopError as exc:
            raise GpuopError("reading %s: %s" % (describe(ref), exc.msg))
    file_set.make("files", files, file_modes, result, check_mode)
    new_namespaces = set()
    for obj, path in zip(objects, paths):
        meta = obj["metadata"]
        entry = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"],
                 "namespace": meta.get("namespace")}
        if check_mode and meta.get("namespace") in new_namespaces:
            entry["result"] = "would create"
            result["objects"].append(entry)
            result["changed"] = True
            result["diff"].append({"before_header": describe(obj), "after_header": describe(obj),
                                   "before": "", "after": json.dumps(obj, indent=2, sort_keys=True) + "\n"})
            continue
        outcome, before, after = apply_object(cluster, obj, path, params.get("field_manager", "gpuop"), check_mode,
                                              timeout, clock=clock, sleep=sleep)
        entry["result"] = outcome
        entry["object"] = stored(after)
        result["objects"].append(entry)
        if outcome == "created" and obj["kind"] == "Namespace":
            new_namespaces.add(meta["name"])
        if outcome != "unchanged":
            result["changed"] = True
            result["diff"].append({
                "before_header": describe(obj), "after_header": describe(obj),
                "before": json.dumps(essence(before), indent=2, sort_keys=True) + "\n" if before else "",
                "after": json.dumps(essence(after), indent=2, sort_keys=True) + "\n"})
    return result


__all__ = ["KINDS", "READ_ONLY_KINDS", "NotFound", "apply_object", "argument_spec", "describe", "essence", "holds", "object_path", "run",
           "stored"]
