#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: write manifests and server-side apply objects, in one run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: k8s_apply
short_description: Write manifest files and apply Kubernetes objects in order (server-side apply), in one run
description:
  - Writes each of O(files) atomically (a temporary file in the same folder, then a rename), only
    when its content or mode differs, then applies each of O(objects) in the order given with
    server-side apply (field manager O(field_manager), conflicts forced). A re-run with the same
    objects is recognised by the API itself (the resourceVersion does not move) and reports C(changed=false).
  - One module run where a role would chain a folder, templates and one C(kubernetes.core.k8s) per object.
  - A namespaced object refused because its namespace's default ServiceAccount does not exist yet
    (the controller makes it just after the namespace) is applied again every 0.2 s until O(timeout).
  - The kinds it knows are v1 Namespace, ConfigMap, Pod and ServiceAccount, apps/v1 DaemonSet and
    node.k8s.io/v1 RuntimeClass; v1 Node may be read (O(read)), never applied. Another kind fails
    naming it, before anything is written.
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  objects:
    description:
      - Kubernetes objects (mappings with C(apiVersion), C(kind), C(metadata.name) and, for namespaced
        kinds, C(metadata.namespace)), applied in this order.
    type: list
    elements: dict
    default: []
  read:
    description:
      - Objects to read (C(apiVersion), C(kind), C(metadata.name), C(metadata.namespace) for namespaced
        kinds), each with one GET, before any file is written or object applied; returned in RV(read)
        as found. A cluster that does not answer fails the run before anything is written.
    type: list
    elements: dict
    default: []
  field_manager:
    description: Field manager of the server-side apply.
    type: str
    default: gpuop
  timeout:
    description: Seconds to retry an object refused for its namespace's missing default ServiceAccount.
    type: float
    default: 60.0
extends_documentation_fragment:
  - gpuop.gates.k8s
  - gpuop.gates.files
attributes:
  check_mode:
    support: full
    description:
      - Files are compared, not written; objects are applied with C(dryRun=All) (the API validates them
        and answers what it would store). An object in a namespace this run would create is reported as
        C(would create), as the API cannot dry-run it.
  diff_mode:
    support: full
    description:
      - Before and after of each changed file and each changed object, without status and the fields the API sets.
requirements:
  - kubernetes (the Python client, for the kubeconfig and the transport)
"""

EXAMPLES = r"""
- name: Write the pod's manifest and apply the namespace, then the pod
  gpuop.gates.k8s_apply:
    kubeconfig: "{{ gpuop_kubeconfig }}"
    files:
      - path: /tmp/lab/k8s/pod.yaml
        content: "{{ lookup('ansible.builtin.template', 'pod.yaml.j2') }}"
    objects:
      - {apiVersion: v1, kind: Namespace, metadata: {name: gpu-lab}}
      - apiVersion: v1
        kind: Pod
        metadata: {name: cuda-probe, namespace: gpu-lab}
        spec:
          containers: [{name: cuda, image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}]

- name: Read a DaemonSet as it is, then make sure its namespace exists
  gpuop.gates.k8s_apply:
    kubeconfig: "{{ gpuop_kubeconfig }}"
    read:
      - {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: nvidia-container-toolkit, namespace: gpu-operator}}
    objects:
      - {apiVersion: v1, kind: Namespace, metadata: {name: gpu-operator}}
  register: toolkit
"""

RETURN = r"""
read:
  description: Each object of O(read) as the API answered before anything was written (null where it does
    not exist), without C(metadata.managedFields).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: Namespace, metadata: {name: default}, status: {phase: Active}}]
files:
  description: Each file of O(files) and whether it was (or would be) written.
  returned: always
  type: list
  elements: dict
  sample: [{path: /tmp/lab/k8s/pod.yaml, changed: false}]
objects:
  description:
    - Each object of O(objects), what the apply did (created, configured, unchanged, would create) and, as
      C(object), what the API stored (the dry-run answer in check mode; absent for C(would create)),
      without C(metadata.managedFields).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: Namespace, name: gpu-lab, namespace: null, result: unchanged,
            object: {apiVersion: v1, kind: Namespace, metadata: {name: gpu-lab}}}]
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils import k8s_apply
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC, Cluster


def argument_spec():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update(k8s_apply.argument_spec())
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        result = k8s_apply.run(cluster, params, check_mode=module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
