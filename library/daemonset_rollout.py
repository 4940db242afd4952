#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: a DaemonSet rollout's numbers, phase and blocker, from what the cluster says."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: daemonset_rollout
short_description: Report a DaemonSet rollout (old/new pods per node, phase, blocker) and optionally wait for it to complete or stall
description:
  - Reads one DaemonSet and its pods (one GET, one LIST by the DaemonSet's selector) and reports the
    status numbers, the old and new pods per node, the phase (V(progressing), V(complete),
    V(stalled)) and the blocker.
  - A pod is new when its C(pod-template-generation) label equals the DaemonSet's
    C(deprecated.daemonset.template.generation) annotation (or it carries the same
    C(controller-revision-hash) as such a pod), as the DaemonSet controller counts it.
  - The phase is decided from state, never from a timer. V(stalled) means observedGeneration is
    current, every pod that can exist exists, every unavailable new pod is Pending with
    C(PodScheduled=False/Unschedulable), and C(maxUnavailable) (resolved like the controller, a
    percentage of desired rounded up) lets the controller replace no further old pod.
  - V(stalled) and V(complete) also need the status to count the pods listed as the controller
    counts them (per node its oldest pod). The controller writes its status after it deleted or
    created a pod, so for a moment the pod list is ahead of the numbers; the report never mixes the two.
  - The blocker comes from the Pending new pods' C(PodScheduled) messages, reduced to the reason on
    the pod's own node (a DaemonSet pod is pinned by C(matchFields metadata.name); the other nodes'
    C(didn't satisfy plugin(s) [NodeAffinity]) is noise). Kinds are C(insufficient-<resource>) (resource
    verbatim, e.g. C(insufficient-memory), C(insufficient-cpu), C(insufficient-nvidia.com/gpu),
    C(insufficient-pods)), C(taint), C(node-affinity), C(unknown); C(on-delete) for an OnDelete
    DaemonSet with old pods left. With a blocker, the node list is read once for the numbers
    behind it (request vs the own node's and the largest allocatable).
  - The API calls do not grow with the number of nodes. With O(wait_for), polls every 0.2 s until
    the phase is reached (bounded by O(timeout)) and returns how long that took.
  - With O(dest), writes the six-line report C(DESIRED=), C(UPDATED=), C(READY=) (from status),
    C(OLD_IMAGE_PODS=) (pods of an older template), C(MAX_UNAVAILABLE=) (as in the spec),
    C(BLOCKER=) (the kind, or C(none)).
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  namespace:
    description: Namespace of the DaemonSet.
    type: str
    required: true
  name:
    description: Name of the DaemonSet.
    type: str
    required: true
  dest:
    description: Write the six-line report here (mode 0644, atomically, only when the content differs).
    type: path
  wait_for:
    description:
      - Poll until the phase is this one. Without it the state is read once. A DaemonSet not yet
        found keeps the wait going.
    type: str
    choices: [stalled, complete]
  timeout:
    description: Seconds O(wait_for) may take; on timeout the task fails with the last state seen.
    type: float
    default: 60.0
extends_documentation_fragment:
  - gpuop.gates.k8s
attributes:
  check_mode:
    support: full
    description: Read-only against the cluster; O(dest) is not written.
  diff_mode:
    support: full
    description: Before and after of O(dest).
requirements:
  - kubernetes (python)
"""

EXAMPLES = r"""
- name: Wait for the toolkit rollout to stop and write why
  gpuop.gates.daemonset_rollout:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    namespace: gpu-operator
    name: nvidia-container-toolkit
    wait_for: stalled
    timeout: 60
    dest: "{{ gpuop_root }}/out/rollout.txt"
  register: __gpuop_rollout

- name: Read the state once
  gpuop.gates.daemonset_rollout:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    namespace: gpu-operator
    name: nvidia-container-toolkit
  register: __gpuop_rollout_now
"""

RETURN = r"""
name:
  description: The DaemonSet's name.
  returned: always
  type: str
  sample: nvidia-container-toolkit
namespace:
  description: The DaemonSet's namespace.
  returned: always
  type: str
  sample: gpu-operator
desired:
  description: C(status.desiredNumberScheduled).
  returned: always
  type: int
  sample: 3
current:
  description: C(status.currentNumberScheduled).
  returned: always
  type: int
  sample: 3
updated:
  description: C(status.updatedNumberScheduled).
  returned: always
  type: int
  sample: 1
ready:
  description: C(status.numberReady).
  returned: always
  type: int
  sample: 2
available:
  description: C(status.numberAvailable).
  returned: always
  type: int
  sample: 2
unavailable:
  description: C(status.numberUnavailable) (0 when the API leaves it out).
  returned: always
  type: int
  sample: 1
misscheduled:
  description: C(status.numberMisscheduled).
  returned: always
  type: int
  sample: 0
generation:
  description: C(metadata.generation).
  returned: always
  type: int
  sample: 2
observed_generation:
  description: C(status.observedGeneration).
  returned: always
  type: int
  sample: 2
observed_generation_current:
  description: Whether the controller has seen the current spec.
  returned: always
  type: bool
  sample: true
status_agrees_with_pods:
  description:
    - Whether the DaemonSet's status counts the pods listed the way the controller counts them (per node
      its oldest pod, for current, updated and Ready). The controller writes its status after it acted, so for a
      moment the pods have moved on; neither V(stalled) nor V(complete) is decided before they agree.
    - V(true) whenever the status reports misscheduled nodes (those are not recounted).
  returned: always
  type: bool
  sample: true
update_strategy:
  description: V(RollingUpdate) or V(OnDelete).
  returned: always
  type: str
  sample: RollingUpdate
max_unavailable_spec:
  description: C(maxUnavailable) as in the spec (int or percentage); null for OnDelete.
  returned: always
  type: raw
  sample: 1
max_unavailable:
  description: C(maxUnavailable) resolved like the controller (percentage of desired, rounded up).
  returned: always
  type: int
  sample: 1
max_surge:
  description: C(maxSurge) resolved the same way.
  returned: always
  type: int
  sample: 0
template_generation:
  description: The DaemonSet's template generation (annotation C(deprecated.daemonset.template.generation)).
  returned: always
  type: int
  sample: 2
template_hash:
  description: The C(controller-revision-hash) of the current template, as seen on a new pod; null before one exists.
  returned: always
  type: str
  sample: 5ff74669d5
new_pods:
  description: Pods of the current template (not terminating).
  returned: always
  type: int
  sample: 1
old_image_pods:
  description: Pods still on an older template (not terminating).
  returned: always
  type: int
  sample: 2
old_pods:
  description: Their names.
  returned: always
  type: list
  elements: str
terminating_pods:
  description: Names of the DaemonSet's pods being deleted (counted nowhere else).
  returned: always
  type: list
  elements: str
pods_per_node:
  description: Node name to the names of its old and new pods (a Pending pod under the node it is pinned to).
  returned: always
  type: dict
  sample: {lab-node-0: {old: [], new: [toolkit-x2b9k]}, lab-node-1: {old: [toolkit-7fd2q], new: []}}
phase:
  description: V(progressing), V(complete) or V(stalled), from state only.
  returned: always
  type: str
  sample: stalled
blocker:
  description:
    - Why the first Pending new pod (by node name) cannot be scheduled; null when none is.
    - C(requested), C(node_allocatable), C(largest_allocatable) are in the scheduler's unit
      (bytes for memory, millicores for cpu, counts otherwise), each with a C(_human) twin.
  returned: always
  type: dict
  contains:
    kind:
      description: C(insufficient-<resource>), C(taint), C(node-affinity), C(unknown) or C(on-delete).
      type: str
    pod:
      description: The Pending pod.
      type: str
    node:
      description: The node it is pinned to.
      type: str
    reason:
      description: The scheduler's reason on that node that decided the kind.
      type: str
    node_reasons:
      description: All the scheduler's reasons on that node.
      type: list
    message:
      description: The PodScheduled message, verbatim.
      type: str
    resource:
      description: For C(insufficient-*), the resource.
      type: str
    requested:
      description: For C(insufficient-*), the pod's request.
      type: int
    node_allocatable:
      description: For C(insufficient-*), the own node's allocatable.
      type: int
    largest_allocatable:
      description: For C(insufficient-*), the largest allocatable of any node.
      type: int
    largest_allocatable_node:
      description: Which node has it.
      type: str
    fits_any_node:
      description: Whether the request fits the largest allocatable at all.
      type: bool
    untolerated_taints:
      description: For C(taint), the node's taints the pod does not tolerate (C(key=value:Effect)).
      type: list
    node_exists:
      description: For C(node-affinity), whether the pinned node exists.
      type: bool
  sample:
    kind: insufficient-memory
    pod: nvidia-container-toolkit-x2b9k
    node: lab-node-0
    reason: Insufficient memory
    resource: memory
    requested: 68719476736
    requested_human: 64Gi
    node_allocatable: 34359738368
    largest_allocatable: 34359738368
    largest_allocatable_human: 32Gi
    fits_any_node: false
blockers:
  description: The same for every Pending unschedulable new pod.
  returned: always
  type: list
  elements: dict
report:
  description: The six-line report (what O(dest) holds).
  returned: always
  type: str
  sample: "DESIRED=3\nUPDATED=1\nREADY=2\nOLD_IMAGE_PODS=2\nMAX_UNAVAILABLE=1\nBLOCKER=insufficient-memory\n"
elapsed:
  description: Seconds until O(wait_for)'s phase was reached (0 without O(wait_for)).
  returned: always
  type: float
  sample: 0.41
reached_at:
  description: When the reported state was read (UTC, ISO 8601).
  returned: always
  type: str
  sample: "2026-12-02T15:49:40.123Z"
api_calls:
  description: Every API request made, as C(METHOD path), in order.
  returned: always
  type: list
  elements: str
dest:
  description: O(dest); null when not given.
  returned: always
  type: str
"""

import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster
from ansible_collections.gpuop.gates.plugins.module_utils.rollout import argument_spec, observe, report_text


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    changed, diff = False, None
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        analysis, elapsed = observe(cluster, params["namespace"], params["name"],
                                    wait_for=params["wait_for"], timeout=params["timeout"])
        reached_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        report = report_text(analysis)
        if params["dest"]:
            changed, diff = ensure_file(params["dest"], report, 0o644, module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    extra = {"diff": diff} if (module._diff and diff is not None) else {}
    module.exit_json(changed=changed, report=report, elapsed=elapsed, reached_at=reached_at,
                     api_calls=cluster.calls, dest=params["dest"], **dict(analysis, **extra))


if __name__ == "__main__":
    main()
