#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: advertise an extended resource on kwok nodes through the status subresource."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_extended_resource
short_description: Advertise an extended resource (e.g. nvidia.com/gpu) on nodes, as a device plugin would
description:
  - Sets O(resource) to O(quantity) in a node's C(status.capacity) and C(status.allocatable), or
    removes it from both (O(state=absent)), through the B(status subresource)
    (C(PATCH /api/v1/nodes/NAME/status), JSON merge patch; C(null) removes the key). A patch of the
    node itself would be ignored for status, and kubernetes.core has no subresource support.
  - Several nodes in one call with O(nodes). Every node is read and checked first (it exists, kwok
    manages it); a missing or refused node fails the task before anything is written.
  - No write call at all when a node already advertises the value in both maps.
  - Refuses a node that kwok does not manage (no annotation C(kwok.x-k8s.io/node=fake)) unless
    O(allow_unmanaged_nodes=true); on a real cluster the device plugin, through the kubelet, owns
    that field.
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  nodes:
    description:
      - Names of the nodes to change. A single name may be given as a string.
    type: list
    elements: str
    required: true
    aliases: [node, name]
  resource:
    description:
      - The extended resource name. It needs a domain that is not C(kubernetes.io), as the API
        requires (e.g. C(nvidia.com/gpu), C(example.com/dongle)).
    type: str
    default: nvidia.com/gpu
  quantity:
    description:
      - The number to advertise, a non-negative whole number (C(4) or C("4")). Extended resources
        cannot be fractional or carry a unit.
      - Required when O(state=present).
    type: raw
  state:
    description:
      - V(present) sets the value in both maps; V(absent) removes the key from both.
    type: str
    choices: [present, absent]
    default: present
  allow_unmanaged_nodes:
    description:
      - Write the status of a node that kwok does not manage too. Only for a lab whose nodes are not
        annotated; on a real cluster the device plugin owns the field and would overwrite it.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuop.gates.k8s
attributes:
  check_mode:
    support: full
    description: The patch is sent with C(dryRun=All); the API validates it and answers with what it would store, nothing is kept.
  diff_mode:
    support: full
    description: Before and after of each changed node's C(capacity) and C(allocatable) maps.
requirements:
  - kubernetes (python)
notes:
  - Only the maps that differ are in the patch body. Quantities are compared as numbers (the API
    stores 1000 as C(1k)).
"""

EXAMPLES = r"""
- name: Advertise 4 GPUs on lab-node-0, as the NVIDIA device plugin would
  gpuop.gates.node_extended_resource:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    nodes: lab-node-0
    resource: nvidia.com/gpu
    quantity: 4
  register: __gpuop_advertise

- name: Advertise 20 time-sliced slots on two nodes in one call
  gpuop.gates.node_extended_resource:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    nodes: [lab-node-1, lab-node-2]
    quantity: "20"

- name: Remove the advertisement from both maps
  gpuop.gates.node_extended_resource:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    nodes: lab-node-0
    state: absent
"""

RETURN = r"""
resource:
  description: The extended resource name.
  returned: always
  type: str
  sample: nvidia.com/gpu
state:
  description: The requested state.
  returned: always
  type: str
  sample: present
quantity:
  description: The requested quantity as canonical digits; null when O(state=absent).
  returned: always
  type: str
  sample: "4"
nodes:
  description: One entry per node asked, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    changed:
      description: Whether this node's status was (or in check mode would be) patched.
      type: bool
    managed_by_kwok:
      description: Whether the node has the annotation C(kwok.x-k8s.io/node=fake).
      type: bool
    before:
      description: The resource's value in C(capacity) and C(allocatable) before; null where absent.
      type: dict
      sample: {capacity: null, allocatable: null}
    after:
      description: The same after, as the API answered the patch (the dry-run answer in check mode).
      type: dict
      sample: {capacity: "4", allocatable: "4"}
  sample:
    - name: lab-node-0
      changed: true
      managed_by_kwok: true
      before: {capacity: null, allocatable: null}
      after: {capacity: "4", allocatable: "4"}
advertised:
  description: Node name to the value it advertises to the scheduler (its C(allocatable), as the API
    writes it), C("0") where it has none, after the call.
  returned: always
  type: dict
  sample: {lab-node-0: "4"}
patches:
  description: The patches sent, one per changed node; empty when nothing changed.
  returned: always
  type: list
  elements: dict
  sample:
    - node: lab-node-0
      path: /api/v1/nodes/lab-node-0/status
      body: {status: {capacity: {nvidia.com/gpu: "4"}, allocatable: {nvidia.com/gpu: "4"}}}
      dry_run: false
api_calls:
  description: Every API request made, as C(METHOD path), in order.
  returned: always
  type: list
  elements: str
  sample: [GET /api/v1/nodes/lab-node-0, PATCH /api/v1/nodes/lab-node-0/status]
diff:
  description: Per changed node, before and after of its C(capacity) and C(allocatable) maps.
  returned: in diff mode
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster
from ansible_collections.gpuop.gates.plugins.module_utils.node_resources import REQUIRED_IF, advertise, argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), required_if=REQUIRED_IF, supports_check_mode=True)
    params = module.params
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        result = advertise(
            cluster,
            params["nodes"],
            resource=params["resource"],
            quantity=params["quantity"],
            state=params["state"],
            allow_unmanaged_nodes=params["allow_unmanaged_nodes"],
            check_mode=module.check_mode,
            want_diff=module._diff,
        )
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
