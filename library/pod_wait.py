#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: wait for a pod's condition or phase, polled at 0.2 s, bounded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: pod_wait
short_description: Wait for a pod's condition or phase, and optionally record the condition
description:
  - Polls the pod every 0.2 s until it has the condition O(condition) (type, status and, when given,
    reason) or is in phase O(phase), and returns as soon as it holds. Bounded by O(timeout).
  - A pod that does not exist yet means keep waiting. API errors while waiting are retried until
    the time-out.
  - On time-out the task fails with one message naming what it waited for and the last state it
    saw (phase, node, every condition with reason and message) or the last API error.
  - With O(dest), the condition's C(reason) and C(message) are written as two lines, exactly as the
    API returned them (atomic write). With O(keep_existing=true) an existing O(dest) is an output
    recorded at its own moment; it is kept byte for byte, and the module does not wait again
    (changed=false).
  - Read-only towards the cluster.
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  name:
    description: Pod name.
    type: str
    required: true
  namespace:
    description: Pod namespace.
    type: str
    default: default
  condition:
    description:
      - The condition to wait for. Mutually exclusive with O(phase); one of the two is required.
    type: dict
    suboptions:
      type:
        description: Condition type, e.g. C(PodScheduled), C(Ready).
        type: str
        required: true
      status:
        description: C(True), C(False) or C(Unknown) (a YAML boolean is accepted).
        type: raw
        default: "True"
      reason:
        description: When given, the condition's reason must also be this (e.g. C(Unschedulable)).
        type: str
  phase:
    description: The pod phase to wait for. Mutually exclusive with O(condition).
    type: str
    choices: [Pending, Running, Succeeded, Failed, Unknown]
  timeout:
    description: Seconds to wait at most (0 checks once).
    type: float
    default: 60.0
  dest:
    description:
      - File to write the condition's C(reason) then C(message) to, one per line. Needs O(condition).
    type: path
  keep_existing:
    description:
      - When O(dest) exists already, keep it as it is and do not wait (it was recorded at its moment;
        a later state must not rewrite it). The pod is still read once to return its current state.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuop.gates.k8s
attributes:
  check_mode:
    support: full
    description:
      - The wait runs as usual (it only reads) and O(dest) is not written. A pod that does not exist
        is reported (RV(exists=false)) instead of waited for, since the tasks that would create it did
        not run in check mode.
  diff_mode:
    support: full
    description: Before and after of O(dest).
requirements:
  - kubernetes (python)
"""

EXAMPLES = r"""
- name: Wait until the scheduler gives up on the GPU pod, and record why
  gpuop.gates.pod_wait:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    namespace: gpu-lab
    name: cuda-probe
    condition:
      type: PodScheduled
      status: "False"
      reason: Unschedulable
    timeout: 30
    dest: "{{ gpuop_root }}/out/unscheduled.txt"
    keep_existing: true

- name: Wait until it runs
  gpuop.gates.pod_wait:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    namespace: gpu-lab
    name: cuda-probe
    phase: Running
    timeout: 30
  register: __gpuop_probe
"""

RETURN = r"""
what:
  description: What was waited for.
  returned: always
  type: str
  sample: pod gpu-lab/cuda-probe condition PodScheduled=False reason Unschedulable
waited:
  description: Whether the module waited (false when O(dest) was kept, or in check mode for a pod that does not exist).
  returned: always
  type: bool
exists:
  description: Whether the pod exists.
  returned: always
  type: bool
condition:
  description: The pod's condition of the requested type, exactly as the API returned it; null for a phase wait or when absent.
  returned: always
  type: dict
  sample:
    type: PodScheduled
    status: "False"
    reason: Unschedulable
    message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. ..."
    lastTransitionTime: "2025-01-01T00:00:00Z"
conditions:
  description: All the pod's conditions as the API returned them.
  returned: always
  type: list
  elements: dict
phase:
  description: The pod's phase; null when it does not exist.
  returned: always
  type: str
  sample: Running
node_name:
  description: The node the pod is bound to (C(spec.nodeName)); null when not bound.
  returned: always
  type: str
  sample: lab-node-0
elapsed:
  description: Seconds the wait took (monotonic clock); 0 when it did not wait.
  returned: always
  type: float
  sample: 0.412
reached_at:
  description: UTC time at which the module saw the state hold; null when it did not wait.
  returned: always
  type: str
  sample: "2025-01-01T00:00:00.412345Z"
dest:
  description: The record file.
  returned: when O(dest) is given
  type: str
kept:
  description: Whether an existing O(dest) was kept as it was (O(keep_existing)).
  returned: when O(dest) is given
  type: bool
content:
  description: The record's content (as kept, or as written or to be written); null in check mode for a pod that does not exist.
  returned: when O(dest) is given
  type: str
  sample: "Unschedulable\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu. ...\n"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster
from ansible_collections.gpuop.gates.plugins.module_utils.pod_wait import (
    MUTUALLY_EXCLUSIVE, REQUIRED_BY, REQUIRED_ONE_OF, argument_spec, wait_pod,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        mutually_exclusive=MUTUALLY_EXCLUSIVE,
        required_one_of=REQUIRED_ONE_OF,
        required_by=REQUIRED_BY,
        supports_check_mode=True,
    )
    params = module.params
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        result = wait_pod(
            cluster,
            params["namespace"],
            params["name"],
            condition=params["condition"],
            phase=params["phase"],
            timeout=params["timeout"],
            dest=params["dest"],
            keep_existing=params["keep_existing"],
            check_mode=module.check_mode,
            want_diff=module._diff,
        )
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
