#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module kwok_runtime_gate: thin shell over module_utils/gpuop/kwok_gate.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kwok_runtime_gate
short_description: Let kwok enforce the runtime-handler gate of a real kubelet, from real containerd observations
description:
  - Publishes each node's handlers, as observed on a real containerd sandbox daemon, in
    C(node.status.runtimeHandlers) (status subresource; kwok-managed nodes only), with the annotations
    C(gpuop.io/runtime-handlers-source), C(gpuop.io/containerd-version) and, when the daemon's CRI
    plugin failed, C(gpuop.io/cri-error).
  - Applies kwok Stages (cluster created with C(--enable-crds=Stage)) - kwok's own default stages from
    O(stage_dir), each with one selector added, and the gate's stages - so that a pod whose RuntimeClass
    handler its node has not loaded stays Pending in C(ContainerCreating) with a Warning
    C(FailedCreatePodSandBox) event carrying containerd's own message (from the daemon's RunPodSandbox
    probe), and a node whose CRI plugin failed turns NotReady. Selectors are complementary.
  - Creates the probe pods (O(probe_runtime_class)) that do not exist, touches gpuop's probe pods when the stages
    changed (a kubelet retries), and waits (poll 0.2 s, O(wait_timeout)) for O(expect).
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  kubeconfig:
    description: The lab cluster's kubeconfig.
    type: path
    required: true
  context:
    description: Context of O(kubeconfig).
    type: str
  request_timeout:
    description: Seconds one API request may take.
    type: float
    default: 10.0
  stage_dir:
    description: kwok's C(kustomize/stage) folder in its Go module (C(<GOMODCACHE>/sigs.k8s.io/kwok@v0.8.0/kustomize/stage)).
    type: path
    required: true
  nodes:
    description:
      - One entry per gated node, C(name), C(loaded) (containerd_runtimes' loaded view), C(probes)
        (its RunPodSandbox probes), C(version) (the daemon's containerd version).
    type: list
    elements: dict
    default: []
  namespace:
    description: Namespace of the probe pods (created when absent).
    type: str
    default: runtime-gate
  probe_runtime_class:
    description:
      - When set, one probe pod C(gate-probe-<node>) per entry of O(nodes), pinned to it (C(nodeName)) with
        this RuntimeClass, is created when absent.
    type: str
  image:
    description: Image of the probe pods' container (kwok never pulls it).
    type: str
    default: registry.k8s.io/pause:3.10
  expect:
    description: Pod name to C(blocked) or C(running), waited for.
    type: dict
    default: {}
  wait_timeout:
    description: Seconds to wait for O(expect).
    type: float
    default: 60.0
  initial:
    description:
      - Apply the stages only when the cluster has none of gpuop's yet (the first stage set of a new
        cluster, before its nodes exist); a later run keeps the stages the last gate left.
    type: bool
    default: false
  forget:
    description:
      - First undo a gate left by an earlier run on the same cluster - delete gpuop's probe pods in O(namespace)
        (grace period 0, waits until gone) and take gpuop's runtimeHandlers and annotations off every kwok
        node - so that the stages applied then make the nodes Ready again.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Computes nodes, stages and pods to change; writes nothing, does not wait.
  diff_mode:
    support: none
    description: Returns no diff.
"""

EXAMPLES = r"""
- name: Gate on what the containerd 2.x sandbox loaded
  gpuop.gates.kwok_runtime_gate:
    kubeconfig: /srv/lab/kubeconfig
    stage_dir: /root/go/pkg/mod/sigs.k8s.io/kwok@v0.8.0/kustomize/stage
    nodes:
      - name: lab-node-1
        version: 2.4.2
        loaded: "{{ views.loaded }}"
        probes: "{{ views.probes }}"
    probe_runtime_class: nvidia
    expect:
      gate-probe-lab-node-1: blocked
"""

RETURN = r"""
blocked:
  description: Blocked C(<runtimeClass>@<node>) pairs (C(@<node>) for pods without one) and the event message.
  returned: always
  type: dict
handlers:
  description: Node name to the runtimeHandlers published.
  returned: always
  type: dict
stages_changed:
  description: Stages created, replaced or deleted.
  returned: always
  type: list
  elements: str
created:
  description: Namespace and pods created.
  returned: always
  type: list
  elements: str
forgotten:
  description: Probe pods deleted and nodes whose earlier gate state was taken off (O(forget)).
  returned: always
  type: list
  elements: str
pods:
  description: Final state of the O(expect) pods (phase, waiting reason, FailedCreatePodSandBox messages).
  returned: always
  type: dict
"""

import copy
import hashlib
import json

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.gpuop.gates.plugins.module_utils import kwok_gate
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC, Cluster


def main():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update(
        stage_dir=dict(type="path", required=True),
        nodes=dict(type="list", elements="dict", default=[]),
        namespace=dict(type="str", default="runtime-gate"),
        probe_runtime_class=dict(type="str"),
        image=dict(type="str", default="registry.k8s.io/pause:3.10"),
        expect=dict(type="dict", default={}),
        wait_timeout=dict(type="float", default=60.0),
        initial=dict(type="bool", default=False),
        forget=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    if not kwok_gate.HAS_YAML:  # before any write: kwok's stages are read with PyYAML
        module.fail_json(msg=missing_required_lib("PyYAML"))
    p = module.params
    result = dict(changed=False, blocked={}, handlers={}, stages_changed=[], created=[], pods={}, forgotten=[])
    error = None
    try:
        for want in p["expect"].values():
            if want not in ("blocked", "running"):
                raise GpuopError("expect: values must be blocked or running, got %r" % (want,))
        for node in p["nodes"]:
            missing = [k for k in ("name", "loaded", "version") if k not in node]
            if missing:
                raise GpuopError("nodes entry %r lacks %s" % (node.get("name", node), ", ".join(missing)))
        cluster = Cluster(p["kubeconfig"], p["context"], p["request_timeout"])
        if p["forget"]:
            result["forgotten"] = kwok_gate.forget(cluster, p["namespace"], module.check_mode, p["wait_timeout"])
        classes = kwok_gate.runtime_classes(cluster)
        blocked = kwok_gate.blocked_pairs(p["nodes"], classes)
        result["blocked"] = blocked
        changed = False
        for node in p["nodes"]:
            handlers, source = kwok_gate.node_handlers(node["loaded"])
            result["handlers"][node["name"]] = handlers
            cri_error = None if node["loaded"]["cri_loaded"] else node["loaded"]["error"]
            changed |= kwok_gate.publish_node(cluster, node["name"], handlers, source, str(node["version"]), cri_error,
                                              module.check_mode)
        desired = kwok_gate.stages(kwok_gate.load_defaults(p["stage_dir"]), blocked)
        if p["initial"] and p["forget"]:
            raise GpuopError("initial and forget exclude each other")
        if not (p["initial"] and kwok_gate.has_gate_stages(cluster)):
            result["stages_changed"] = kwok_gate.apply_stages(cluster, desired, module.check_mode)
        pods = [{"name": kwok_gate.PROBE_PREFIX + n["name"], "node": n["name"], "runtime_class": p["probe_runtime_class"]}
                for n in p["nodes"]] if p["probe_runtime_class"] else []
        result["created"] = kwok_gate.ensure_pods(cluster, p["namespace"], pods, p["image"], module.check_mode)
        changed |= bool(result["stages_changed"]) or bool(result["created"]) or bool(result["forgotten"])
        result["changed"] = changed
        if result["stages_changed"] and not module.check_mode:
            probes = [pod["metadata"]["name"] for pod in cluster.list(
                "/api/v1/namespaces/%s/pods" % p["namespace"], label_selector="%s=probe" % kwok_gate.GATE_LABEL)]
            generation = hashlib.sha256(json.dumps(blocked, sort_keys=True).encode()).hexdigest()[:16]
            kwok_gate.kick(cluster, p["namespace"], probes, generation)
        if p["expect"] and not module.check_mode:
            result["pods"] = kwok_gate.wait_pods(cluster, p["namespace"], p["expect"], p["wait_timeout"])
    except GpuopError as exc:
        error = exc.msg
    if error is not None:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
