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
    server-side apply (field manager O(field_manager); conflicts forced only with O(take_over)). A re-run
    with the same objects is recognised by the API itself (the resourceVersion does not move) and reports
    C(changed=false).
  - No take-over. Each of O(objects) is read (GET) before any file is written or object applied. One that
    exists and is not gpuop's fails the run, before anything is written, with one message naming each
    such object and its managers (and RV(refused)), unless O(take_over).
  - Whose an object is. Its owners are the managers of its C(metadata.managedFields) entries with
    operation C(Apply) or C(Update) on the object itself; an entry on a subresource (C(status), C(scale))
    does not count, so the scheduler, the controllers, the kubelet or kwok writing the status of a Pod or
    a DaemonSet own nothing. No manager is ignored by name; a C(kube-controller-manager) or
    C(kube-apiserver) entry on the object itself means that component made it. The object is gpuop's when
    it has no owner but O(field_manager), and it carries the label C(app.kubernetes.io/managed-by=gpuop)
    or, without that label, O(field_manager) owns it (applied before gpuop labelled what it applies).
  - A Namespace that exists and is not gpuop's (C(default), or one another tool made) is used as it is,
    never labelled or modified (even with O(take_over)), and reported C(skipped).
  - Every applied object carries the label C(app.kubernetes.io/managed-by=gpuop), added to the applied
    copy only (a manifest of O(files) keeps its bytes). An object of O(objects) that sets that label to
    another value fails the run before anything is written.
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
  take_over:
    description:
      - Apply objects that exist and are not gpuop's (see the description), conflicts forced. A Namespace
        that is not gpuop's is still skipped.
      - Their other managers keep the fields gpuop does not set, so a later run without O(take_over)
        refuses them again.
      - Without it, the apply is not forced, so a field another manager took between the GET and the
        apply is a conflict the API refuses (the run fails naming the object).
    type: bool
    default: false
extends_documentation_fragment:
  - gpuop.gates.k8s
  - gpuop.gates.files
attributes:
  check_mode:
    support: full
    description:
      - Files are compared, not written; objects are applied with C(dryRun=All) (the API validates them
        and answers what it would store). An object in a namespace this run would create is reported as
        C(would create), as the API cannot dry-run it. Objects that are not gpuop's are refused (or
        skipped, for a Namespace) as in a real run.
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

- name: Apply the sharing config over a ConfigMap another tool made (it is refused without take_over)
  gpuop.gates.k8s_apply:
    kubeconfig: "{{ gpuop_kubeconfig }}"
    objects:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: time-slicing-config, namespace: gpu-operator}
        data: {any: "version: v1"}
    take_over: true
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
    - Each object of O(objects), what the apply did (created, configured, unchanged, would create, or
      skipped for a Namespace that is not gpuop's) and, as C(object), what the API stored (the dry-run
      answer in check mode; as found for C(skipped); absent for C(would create)), without
      C(metadata.managedFields).
    - C(foreign), only for an object that existed and was not gpuop's (skipped, or applied with
      O(take_over)), says why, for example C(is managed by "helm" (not created by gpuop)).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: Namespace, name: gpu-lab, namespace: null, result: unchanged,
            object: {apiVersion: v1, kind: Namespace,
                     metadata: {name: gpu-lab, labels: {app.kubernetes.io/managed-by: gpuop}}}},
           {apiVersion: v1, kind: Namespace, name: default, namespace: null, result: skipped,
            foreign: 'is managed by "kube-apiserver" (not created by gpuop)',
            object: {apiVersion: v1, kind: Namespace, metadata: {name: default}}}]
refused:
  description:
    - When the run fails because objects are not gpuop's (without O(take_over)), each of them
      (C(apiVersion), C(kind), C(name), C(namespace)), C(object) (its C(Kind namespace/name)), its
      owners as C(managers) and why it is not gpuop's as C(reason). Nothing was written or applied.
  returned: failure, when objects are refused
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: ConfigMap, name: time-slicing-config, namespace: gpu-operator,
            object: ConfigMap gpu-operator/time-slicing-config, managers: [helm],
            reason: 'is managed by "helm" (not created by gpuop)'}]
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
        module.fail_json(msg=exc.msg, **({"refused": exc.details["refused"]} if "refused" in exc.details else {}))
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
