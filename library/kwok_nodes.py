#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ensure kwok-managed Node objects with explicit capacity and wait until they are Ready."""

DOCUMENTATION = r"""
---
module: kwok_nodes
short_description: Ensure kwok-managed nodes with explicit capacity, and wait until they are Ready
description:
  - Waits for the API server to answer C(/readyz), creates each missing Node with the annotation
    C(kwok.x-k8s.io/node=fake) and C(status.capacity) = C(status.allocatable) = I(capacity), corrects
    a node whose capacity or allocatable drifted (through the status subresource), then waits until
    every node is Ready.
  - Only the keys of I(capacity) are compared; extended resources added later are left alone.
  - Refuses a node of that name that kwok does not manage.
options:
  names:
    description: Node names.
    type: list
    elements: str
    required: true
  capacity:
    description: Capacity and allocatable of each node; must hold C(cpu), C(memory) and C(pods).
    type: dict
    required: true
  labels:
    description: Extra labels for created nodes.
    type: dict
    default: {}
  wait_timeout:
    description: Seconds to wait for the API server, then for the nodes to be Ready.
    type: float
    default: 60.0
extends_documentation_fragment:
  - gpuop.gates.k8s
attributes:
  check_mode:
    support: full
    description: Reports the nodes it would create (C(created)) and correct (C(patched)); creates and
      patches nothing and does not wait for the nodes to be Ready.
  diff_mode:
    support: none
    description: Returns no diff.
author: gpuop contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Three lab nodes of 8 CPUs and 32Gi
  gpuop.gates.kwok_nodes:
    kubeconfig: "{{ gpuop_kubeconfig }}"
    names: [lab-node-0, lab-node-1, lab-node-2]
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
"""

RETURN = r"""
created:
  description: Nodes created by this run.
  returned: always
  type: list
  elements: str
patched:
  description: Nodes whose capacity or allocatable was corrected.
  returned: always
  type: list
  elements: str
allocatable:
  description: Each node's allocatable once Ready (empty in check mode).
  returned: always
  type: dict
ready_after:
  description: Seconds the wait for Ready took.
  returned: always
  type: float
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC, Cluster
from ansible_collections.gpuop.gates.plugins.module_utils.kwok_nodes import ARG_SPEC, ensure_nodes


def main():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update(copy.deepcopy(ARG_SPEC))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        result = ensure_nodes(cluster, params["names"], params["capacity"], params["labels"],
                              params["wait_timeout"], module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
