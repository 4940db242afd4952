# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Lab nodes for kwok: Node objects kwok manages, with explicit capacity = allocatable.

Pure planning (``desired_node``, ``plan``) is separate from the calls (``ensure_nodes``).
"""

import copy

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import MANAGED_BY_KWOK_ANNOTATION, NotFound, node_path, wait_for

ARG_SPEC = {
    "names": {"type": "list", "elements": "str", "required": True},
    "capacity": {"type": "dict", "required": True},
    "labels": {"type": "dict", "default": {}},
    "wait_timeout": {"type": "float", "default": 60.0},
}


def desired_node(name, capacity, labels=None):
    """The Node object kwok will manage: annotation, labels, capacity = allocatable."""
    quantities = dict((str(k), str(v)) for k, v in capacity.items())
    node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                   "type": "kwok"}
    node_labels.update(dict((str(k), str(v)) for k, v in (labels or {}).items()))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {MANAGED_BY_KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": node_labels,
        },
        "spec": {},
        "status": {"capacity": dict(quantities), "allocatable": dict(quantities)},
    }


def status_drift(node, capacity):
    """Return the status patch that brings capacity and allocatable to ``capacity`` (None when equal).

    Only the keys we own are compared: an extended resource added later (nvidia.com/gpu) is left alone.
    """
    status = node.get("status") or {}
    patch = {}
    for field in ("capacity", "allocatable"):
        current = status.get(field) or {}
        wanted = dict((str(k), str(v)) for k, v in capacity.items())
        if any(current.get(k) != v for k, v in wanted.items()):
            patch[field] = wanted
    return {"status": patch} if patch else None


def validate(names, capacity):
    if not names:
        raise GpuopError("names: at least one node name is required")
    for key in ("cpu", "memory", "pods"):
        if key not in capacity:
            raise GpuopError("capacity: '%s' is required (got %s)" % (key, sorted(capacity)))
    if len(set(names)) != len(names):
        raise GpuopError("names: each node name once (got %s)" % names)


def is_ready(node):
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def ensure_nodes(cluster, names, capacity, labels=None, wait_timeout=60.0, check_mode=False):
    """Create missing nodes, correct drifted status, then wait until all are Ready.

    Returns a result dict (changed, created, patched, nodes, ready_after) ready for exit_json.
    """
    validate(names, capacity)
    wait_for(lambda: cluster.get("/readyz"), lambda _: True, wait_timeout, "the API server at %s to answer /readyz" % cluster.host,
             describe=str)
    created, patched = [], []
    for name in names:
        try:
            node = cluster.get(node_path(name))
        except NotFound:
            node = None
        if node is None:
            created.append(name)
            if not check_mode:
                cluster.request("POST", "/api/v1/nodes", body=desired_node(name, capacity, labels))
            continue
        annotations = node["metadata"].get("annotations") or {}
        if annotations.get(MANAGED_BY_KWOK_ANNOTATION) != "fake":
            raise GpuopError("node %s exists but kwok does not manage it (no %s: fake annotation); "
                             "gpuop will not take over a real node" % (name, MANAGED_BY_KWOK_ANNOTATION))
        drift = status_drift(node, capacity)
        if drift:
            patched.append(name)
            if not check_mode:
                cluster.patch(node_path(name) + "/status", drift)
    ready_after = 0.0
    if not check_mode:
        wanted = set(names)

        def all_ready(items):
            return wanted <= set(n["metadata"]["name"] for n in items if is_ready(n))

        def describe(items):
            ready = sorted(n["metadata"]["name"] for n in items if is_ready(n) and n["metadata"]["name"] in wanted)
            return "ready: %s, not ready: %s" % (ready, sorted(wanted - set(ready)))

        items, ready_after = wait_for(lambda: cluster.list("/api/v1/nodes"), all_ready, wait_timeout,
                                      "nodes %s to be Ready" % sorted(wanted), describe=describe)
        table = dict((n["metadata"]["name"], copy.deepcopy(n["status"].get("allocatable", {})))
                     for n in items if n["metadata"]["name"] in wanted)
    else:
        table = {}
    return {
        "changed": bool(created or patched),
        "created": created,
        "patched": patched,
        "allocatable": table,
        "ready_after": ready_after,
    }
