# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Advertise an extended resource (``nvidia.com/gpu: "4"``) on nodes, as a device plugin would.

The value lives in ``status.capacity`` and ``status.allocatable``. Those are written through the
**status subresource** (``PATCH /api/v1/nodes/NAME/status``): the API drops status changes sent
to the node itself. A JSON merge patch with ``null`` removes a key there (``state: absent``).

Pure parts (validation, patch bodies, change detection) take and return plain data; ``advertise``
is the one function that talks to the cluster.
"""

import copy
import re
from fractions import Fraction

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
# validate_resource_name lives in names.py (no kubernetes import: the roles' input check uses it); kept here for
# this module's callers.
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_SUBDOMAIN_RE, validate_resource_name  # noqa: F401
from ansible_collections.gpuop.gates.plugins.module_utils.quantity import parse_quantity
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC, MANAGED_BY_KWOK_ANNOTATION, is_kwok_managed, node_path

MAPS = ("capacity", "allocatable")
DEFAULT_RESOURCE = "nvidia.com/gpu"
# Quantities are int64 underneath; extended resources must be whole numbers.
MAX_QUANTITY = 2 ** 63 - 1

_DIGITS_RE = re.compile(r"^[0-9]+$")


def argument_spec():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update({
        "nodes": {"type": "list", "elements": "str", "required": True, "aliases": ["node", "name"]},
        "resource": {"type": "str", "default": DEFAULT_RESOURCE},
        "quantity": {"type": "raw"},
        "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
        "allow_unmanaged_nodes": {"type": "bool", "default": False},
    })
    return spec


REQUIRED_IF = [("state", "present", ("quantity",))]


# ---------------------------------------------------------------- validation


def normalize_quantity(value):
    """Return the quantity as canonical decimal digits (``4`` / ``"4"`` / ``"04"`` → ``"4"``).

    Extended resources are whole, non-negative numbers (the API refuses ``0.5`` and ``-1``).
    """
    if isinstance(value, bool) or value is None:
        raise GpuopError("quantity must be a non-negative whole number such as 4, got %r" % (value,))
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _DIGITS_RE.match(value.strip()):
        number = int(value.strip())
    else:
        raise GpuopError("quantity must be a non-negative whole number such as 4 (extended resources "
                         "cannot be fractional, negative or carry a unit), got %r" % (value,))
    if number < 0:
        raise GpuopError("quantity must be a non-negative whole number such as 4, got %r" % (value,))
    if number > MAX_QUANTITY:
        raise GpuopError("quantity %r is larger than the API can store (%d)" % (value, MAX_QUANTITY))
    return str(number)


def validate_node_names(nodes):
    """Return the node names in order, without duplicates; raise on an empty list or a bad name."""
    if not nodes:
        raise GpuopError("nodes must name at least one node")
    names = []
    for name in nodes:
        if not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN_RE.match(name):
            raise GpuopError("node name %r is not a valid node name (a lowercase DNS subdomain)" % (name,))
        if name not in names:
            names.append(name)
    return names


# ---------------------------------------------------------------- pure state


def quantity_equal(current, desired):
    """Whether the API's string ``current`` stands for ``desired`` (a digits string or None = absent).

    The API re-serializes quantities (1000 reads back as ``1k``), so numbers are compared.
    """
    if desired is None or current is None:
        return current is None and desired is None
    if current == desired:
        return True
    parsed = parse_quantity(current)
    return parsed is not None and parsed == Fraction(int(desired))


def status_maps(node):
    """The node's capacity and allocatable maps (copies; empty dicts when missing)."""
    status = (node or {}).get("status") or {}
    return {key: dict(status.get(key) or {}) for key in MAPS}


def resource_values(maps, resource):
    """``{"capacity": value|None, "allocatable": value|None}`` for ``resource``."""
    return {key: maps[key].get(resource) for key in MAPS}


def patch_body(maps, resource, desired):
    """The merge patch for the status subresource, or None when nothing would change.

    ``desired`` is a digits string (present) or None (absent: ``null`` removes the key). Only the
    maps that differ are in the body.
    """
    status = {}
    for key in MAPS:
        present = resource in maps[key]
        current = maps[key].get(resource)
        if desired is None:
            if present:
                status[key] = {resource: None}
        elif not present or not quantity_equal(current, desired):
            status[key] = {resource: desired}
    return {"status": status} if status else None


def advertised_value(maps, resource):
    """What the node advertises to the scheduler: allocatable, ``"0"`` when it has none."""
    value = maps["allocatable"].get(resource)
    return "0" if value is None else value


def unmanaged_message(names, host):
    return ("refusing to write status.capacity/allocatable of node(s) %s on the cluster at %s: kwok does not "
            "manage them (no annotation %s: fake). On a real cluster the device plugin, through the kubelet, "
            "owns that field; set allow_unmanaged_nodes: true to write it anyway (through the roles: "
            "node_advertisement_allow_unmanaged_nodes or gpu_time_slicing_allow_unmanaged_nodes)"
            % (", ".join(names), host, MANAGED_BY_KWOK_ANNOTATION))


def check_applied(name, after_maps, resource, desired, dry_run):
    """Raise when the API's answer to the patch does not show the requested value."""
    wrong = [key for key in MAPS if not quantity_equal(after_maps[key].get(resource), desired)]
    if wrong:
        raise GpuopError("the API accepted the %spatch of node %s but its status.%s shows %s=%s instead of %s"
                         % ("dry-run " if dry_run else "", name, "/".join(wrong), resource,
                            after_maps[wrong[0]].get(resource), "no key" if desired is None else desired))


# ---------------------------------------------------------------- the one function with I/O


def advertise(cluster, nodes, resource=DEFAULT_RESOURCE, quantity=None, state="present",
              allow_unmanaged_nodes=False, check_mode=False, want_diff=False):
    """Make each node advertise ``resource`` = ``quantity`` (or not at all with ``state=absent``).

    Every node is read and checked (exists, managed by kwok) before anything is written, so a bad
    node name or a refused node writes nothing. In check mode the patch is sent with
    ``dryRun=All``: the API validates it and answers with what it would store, nothing is kept.
    """
    resource = validate_resource_name(resource)
    if state not in ("present", "absent"):
        raise GpuopError("state must be present or absent, got %r" % (state,))
    desired = normalize_quantity(quantity) if state == "present" else None
    names = validate_node_names(nodes)

    found = {}
    missing = []
    for name in names:
        node = cluster.get_or_none(node_path(name))
        if node is None:
            missing.append(name)
        else:
            found[name] = node
    if missing:
        raise GpuopError("node(s) not found on the cluster at %s: %s" % (cluster.host, ", ".join(missing)))
    unmanaged = [name for name in names if not is_kwok_managed(found[name])]
    if unmanaged and not allow_unmanaged_nodes:
        raise GpuopError(unmanaged_message(unmanaged, cluster.host))

    per_node = []
    patches = []
    diffs = []
    written = []
    advertised = {}
    for name in names:
        before_maps = status_maps(found[name])
        body = patch_body(before_maps, resource, desired)
        after_maps = before_maps
        if body is not None:
            try:
                answer = cluster.patch(node_path(name) + "/status", body, patch_type="merge", dry_run=check_mode)
            except GpuopError as exc:
                done = " (already changed: %s)" % ", ".join(written) if written else ""
                raise GpuopError("setting %s on node %s failed%s: %s" % (resource, name, done, exc.msg))
            after_maps = status_maps(answer)
            check_applied(name, after_maps, resource, desired, check_mode)
            patches.append({"node": name, "path": node_path(name) + "/status", "body": body, "dry_run": check_mode})
            written.append(name)
            if want_diff:
                diffs.append({
                    "before": before_maps,
                    "after": after_maps,
                    "before_header": "node/%s status (capacity, allocatable)" % name,
                    "after_header": "node/%s status (capacity, allocatable)" % name,
                })
        advertised[name] = advertised_value(after_maps, resource)
        per_node.append({
            "name": name,
            "changed": body is not None,
            "managed_by_kwok": is_kwok_managed(found[name]),
            "before": resource_values(before_maps, resource),
            "after": resource_values(after_maps, resource),
        })

    result = {
        "changed": bool(written),
        "resource": resource,
        "state": state,
        "quantity": desired,
        "nodes": per_node,
        "advertised": advertised,
        "patches": patches,
        "api_calls": list(cluster.calls),
    }
    if want_diff:
        result["diff"] = diffs
    return result
