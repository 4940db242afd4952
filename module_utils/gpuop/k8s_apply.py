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

No take-over. Every object is read (GET) before any file is written or object applied, and an object
that exists and is not gpuop's is refused, all of them in one error naming each object and its
managers, unless ``take_over``. The rule (:func:`ownership`):

- *Owners* of an object are the managers of its ``metadata.managedFields`` entries with operation
  ``Apply`` or ``Update`` on the object itself (no ``subresource``). An entry on a subresource
  (``status``, ``scale``, ...) is not ownership: the scheduler, the controllers, the kubelet or kwok
  write the status of Pods and DaemonSets, gpuop's node advertisement writes Node status. No manager
  is ignored by its name: a ``kube-controller-manager`` or ``kube-apiserver`` entry on the object
  itself means that component made the object (a DaemonSet's Pod, the ``default`` Namespace).
- An object is gpuop's when no owner other than ``field_manager`` exists, and it carries the label
  ``app.kubernetes.io/managed-by: gpuop`` or, without that label, ``field_manager`` owns it (applied
  by gpuop before gpuop labelled what it applies). An object with no owner and no label is not gpuop's.
- A Namespace that is not gpuop's (``default``, or one a chart made) is used as it is: not applied,
  never labelled or modified (``take_over`` or not), reported ``skipped`` with why. Any other kind is
  refused.
- ``take_over: true`` applies the others anyway, conflicts forced; their other managers keep the fields
  gpuop does not set, so a later run without ``take_over`` refuses the object again. Without it the
  apply is not forced: a field another manager took between the GET and the apply is a conflict the
  API refuses.

Every applied object carries ``app.kubernetes.io/managed-by: gpuop``, added to the applied copy only
(a written manifest keeps its bytes); an object that sets that label to another value is bad input.
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
# The label every object gpuop applies carries (the Kubernetes recommended label).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpuop"
# managedFields operations that make a manager an owner (on the object itself, not a subresource).
OWNER_OPERATIONS = ("Apply", "Update")
TAKE_OVER_HINT = "set take_over: true to apply anyway"
_UNREAD = object()  # apply_object's ``before`` when the caller did not read the object
# Fields the API sets or bumps on its own: not what the user asked for.
_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp")


def argument_spec():
    return {
        "files": file_set.FILES_SPEC,
        "objects": {"type": "list", "elements": "dict", "default": []},
        "read": {"type": "list", "elements": "dict", "default": []},
        "field_manager": {"type": "str", "default": "gpuop"},
        "timeout": {"type": "float", "default": 60.0},
        "take_over": {"type": "bool", "default": False},
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


def labelled(obj, index=0):
    """A copy of ``obj`` with ``app.kubernetes.io/managed-by: gpuop`` in its labels (``obj`` is not changed).

    An object that sets that label to another value, or labels that are not a mapping: GpuopError naming it.
    """
    labels = (obj.get("metadata") or {}).get("labels")
    if labels is not None and not isinstance(labels, dict):
        raise GpuopError("objects[%d] (%s): metadata.labels must be a mapping, got %s"
                         % (index, describe(obj), type(labels).__name__))
    value = (labels or {}).get(MANAGED_BY_LABEL, MANAGED_BY)
    if value != MANAGED_BY:
        raise GpuopError("objects[%d] (%s): metadata.labels[%r] is %r: every object gpuop applies carries %s: %s"
                         % (index, describe(obj), MANAGED_BY_LABEL, value, MANAGED_BY_LABEL, MANAGED_BY))
    out = copy.deepcopy(obj)
    out["metadata"]["labels"] = dict(labels or {})
    out["metadata"]["labels"][MANAGED_BY_LABEL] = MANAGED_BY
    return out


def owners(current):
    """The managers that own ``current``: managedFields entries with operation Apply or Update on the
    object itself (no subresource), sorted, each once. A status (or other subresource) writer is not one."""
    found = set()
    for entry in (current.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource") or entry.get("operation") not in OWNER_OPERATIONS:
            continue
        found.add(str(entry.get("manager") or "(no name)"))
    return sorted(found)


def ownership(current, field_manager):
    """None when ``current`` (as the API answered) is gpuop's, else why not, as the rest of a sentence that
    starts with the object's name: ``is managed by "helm" (not created by gpuop)``. See the module's rule."""
    label = ((current.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL)
    managers = owners(current)
    others = ", ".join('"%s"' % m for m in managers if m != field_manager)
    if label == MANAGED_BY:
        if not others:
            return None
        return ('is managed by %s (labelled %s: %s, but a manager other than "%s" wrote fields of it)'
                % (others, MANAGED_BY_LABEL, MANAGED_BY, field_manager))
    if others:
        return "is managed by %s (not created by gpuop)" % others
    if label is not None:
        return "is labelled %s: %s (not created by gpuop)" % (MANAGED_BY_LABEL, label)
    if managers:  # field_manager alone, no label: applied by gpuop before it labelled what it applies
        return None
    return "has no field manager and no %s: %s label (not created by gpuop)" % (MANAGED_BY_LABEL, MANAGED_BY)


def _refusal(refused):
    """One message for every object refused: ``<Kind ns/name> <why>[; ...]: refusing to take it over; ...``."""
    return "%s: refusing to take %s over; %s" % (
        "; ".join("%s %s" % (r["object"], r["reason"]) for r in refused), "it" if len(refused) == 1 else "them",
        TAKE_OVER_HINT)


def apply_object(cluster, obj, path, field_manager, check_mode, timeout, clock=time.monotonic, sleep=time.sleep,
                 before=_UNREAD, force=False, take=False):
    """Server-side apply ``obj``; returns (result, before, after). result: created, configured or unchanged.

    ``before`` is the object as a GET answered it just before (None: absent); not given, it is read here.
    An object that exists and holds every field asked already is left alone (no write call) unless
    ``take``: the API would not change it, and a Namespace created by an apply gets its field ownership
    rewritten by the next one (``before-first-apply``), a change of nothing the user asked for. ``force``
    forces conflicts (take_over); ``take`` (an object that is not gpuop's, taken over) sends the apply
    even when the fields hold already, so that gpuop owns the fields it sets. Without ``force`` a conflict
    (409: another manager owns a field asked) fails naming the object, with the API's message.
    """
    if before is _UNREAD:
        before = cluster.get_or_none(path)
    if before is not None and not take and holds(obj, before):
        return "unchanged", before, before
    query = {"fieldManager": field_manager}
    if force:
        query["force"] = "true"
    if check_mode:
        query["dryRun"] = "All"
    start = clock()
    while True:
        try:
            after = cluster.request("PATCH", path, body=json.dumps(obj), query=query, content_type=APPLY_CONTENT_TYPE)
            break
        except GpuopError as exc:
            if exc.details.get("status") == 409 and not force:
                # Another manager owns a field asked (taken between the GET and the apply): never forced.
                raise GpuopError("%s: %s: refusing to take it over; %s" % (describe(obj), exc.msg, TAKE_OVER_HINT),
                                 status=409)
            if not _sa_pending(exc):
                raise GpuopError("%s: %s" % (describe(obj), exc.msg), **exc.details)
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


def _entry(obj):
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "namespace": meta.get("namespace")}


def run(cluster, params, check_mode=False, clock=time.monotonic, sleep=time.sleep):
    """Read ``read``, GET each of ``objects``, write ``files``, then apply ``objects`` in order. Returns the
    module's result dict (changed, read, files, objects, diff). ``read`` and the objects' GETs come before
    anything is written: a cluster that does not answer, or an object that is not gpuop's (refused unless
    ``take_over``; one GpuopError naming every such object, with ``refused`` in its details), fails the
    run with no file written and no object applied. A Namespace that is not gpuop's is ``skipped``. In
    check mode nothing is written or kept: files are compared, objects dry-run; an object in a namespace
    this call would create is reported as ``would create`` (the API cannot dry-run it)."""
    objects = params.get("objects") or []
    paths = [object_path(obj, i) for i, obj in enumerate(objects)]  # all bad input before any write
    for i, obj in enumerate(objects):
        if (obj["apiVersion"], obj["kind"]) in READ_ONLY_KINDS:
            raise GpuopError("objects[%d] (%s %s): k8s_apply reads this kind but never applies it"
                             % (i, obj["kind"], obj["metadata"]["name"]))
    applied = [labelled(obj, i) for i, obj in enumerate(objects)]
    reads = params.get("read") or []
    read_paths = [object_path(ref, i, "read") for i, ref in enumerate(reads)]
    files = params.get("files") or []
    file_modes = file_set.modes("files", files, "0644")
    timeout = params.get("timeout", 60.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout >= 0:
        raise GpuopError("timeout must be 0 or more seconds, got %r" % (timeout,))
    take_over = params.get("take_over", False)
    if not isinstance(take_over, bool):
        raise GpuopError("take_over must be true or false, got %r" % (take_over,))
    field_manager = params.get("field_manager", "gpuop")
    result = {"changed": False, "read": [], "files": [], "objects": [], "diff": []}
    for ref, path in zip(reads, read_paths):
        try:
            result["read"].append(stored(cluster.get_or_none(path)))
        except GpuopError as exc:
            raise GpuopError("reading %s: %s" % (describe(ref), exc.msg))
    # Each object as it is now, and whose it is: every refusal before anything is written.
    current, foreign, refused = {}, {}, []
    for obj, path in zip(objects, paths):
        if path in current:
            continue
        try:
            current[path] = cluster.get_or_none(path)
        except GpuopError as exc:
            raise GpuopError("reading %s: %s" % (describe(obj), exc.msg))
        why = None if current[path] is None else ownership(current[path], field_manager)
        if why is None:
            continue
        foreign[path] = why
        if not take_over and obj["kind"] != "Namespace":
            refused.append(dict(_entry(obj), object=describe(obj), reason=why, managers=owners(current[path])))
    if refused:
        raise GpuopError(_refusal(refused), refused=refused)
    file_set.make("files", files, file_modes, result, check_mode)
    new_namespaces = set()
    seen = set()
    for obj, path in zip(applied, paths):
        meta = obj["metadata"]
        entry = _entry(obj)
        if path in foreign:
            entry["foreign"] = foreign[path]
        if check_mode and meta.get("namespace") in new_namespaces:
            entry["result"] = "would create"
            result["objects"].append(entry)
            result["changed"] = True
            result["diff"].append({"before_header": describe(obj), "after_header": describe(obj),
                                   "before": "", "after": json.dumps(obj, indent=2, sort_keys=True) + "\n"})
            continue
        if path in foreign and obj["kind"] == "Namespace":  # someone else's: used, never modified
            entry["result"] = "skipped"
            entry["object"] = stored(current[path])
            result["objects"].append(entry)
            continue
        outcome, before, after = apply_object(cluster, obj, path, field_manager, check_mode, timeout,
                                              clock=clock, sleep=sleep,
                                              before=_UNREAD if path in seen else current[path],
                                              force=take_over, take=path in foreign)
        seen.add(path)
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


__all__ = ["KINDS", "MANAGED_BY", "MANAGED_BY_LABEL", "READ_ONLY_KINDS", "NotFound", "apply_object", "argument_spec",
           "describe", "essence", "holds", "labelled", "object_path", "owners", "ownership", "run", "stored"]
