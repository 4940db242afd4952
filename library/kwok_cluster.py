#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module kwok_cluster: thin shell over module_utils/gpuop/kwok_cluster.py (and kwok_nodes.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kwok_cluster
short_description: Create, start or repair a kwok cluster, write its kubeconfig, and ensure its kwok nodes
description:
  - Lists the kwok clusters (C(kwokctl get clusters)). A listed cluster whose API server answers
    C(/readyz) is kept. A listed one that does not answer is stopped (what a killed run left half
    running), started, and asked again. A missing one is created with C(kwokctl create cluster
    --runtime binary) and the binaries of O(bin_dir).
  - Before creating, writes the marker C(.gpuop-cluster-<name>) (mode 0600) beside O(kubeconfig), which says that
    gpuop created this cluster. A cluster that still does not answer after its start is deleted and
    created again only when that marker exists; otherwise the module fails with the reset command.
  - A new cluster that does not answer (C(kwokctl) exits 0 even then) is deleted and created once more;
    a second failure names the last error line of each component's log.
  - Copies kwokctl's kubeconfig of the cluster to O(kubeconfig), mode 0600, only when it differs.
    The user's C(~/.kube/config) is never written.
  - With O(nodes), then ensures those kwok-managed nodes (capacity = allocatable) and waits until
    they are Ready, as M(gpuop.gates.kwok_nodes) does.
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  name:
    description: Cluster name, a DNS label (kwokctl keeps its state in C(~/.kwok/clusters/<name>)).
    type: str
    required: true
  kubeconfig:
    description: Kubeconfig written for the cluster (mode 0600); its folder also holds the marker.
    type: path
    required: true
  bin_dir:
    description: Folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and kwokctl.
    type: path
    required: true
  create_args:
    description: Extra flags for C(kwokctl create cluster).
    type: list
    elements: str
    default: []
  wait_timeout:
    description: Seconds kwokctl waits for the cluster, then the module for the nodes to be Ready.
    type: int
    default: 60
  kwok_home:
    description: kwokctl's work folder; default C($KWOK_WORKDIR), else C(~/.kwok).
    type: path
  nodes:
    description: kwok-managed nodes to ensure; none when empty.
    type: list
    elements: str
    default: []
  capacity:
    description: Capacity and allocatable of each node; must hold C(cpu), C(memory) and C(pods).
    type: dict
    default: {}
  labels:
    description: Extra labels for created nodes.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Lists and asks the cluster; reports C(would create) or C(would start) and changes nothing.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - "Runs where kwokctl runs: the controller (C(hosts: localhost))."
requirements:
  - python >= 3.8
  - kubernetes >= 24.2.0 (with O(nodes))
"""

EXAMPLES = r"""
- name: The lab's cluster and three nodes
  gpuop.gates.kwok_cluster:
    name: gpuop
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    bin_dir: "{{ toolchain_bin_dir }}"
    nodes: [lab-node-0, lab-node-1, lab-node-2]
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
"""

RETURN = r"""
action:
  description: C(kept), C(started), C(created) or C(recreated) (C(would start), C(would create) in check mode).
  returned: always
  type: str
steps:
  description: The kwokctl commands run (C(stop cluster), C(start cluster), C(create cluster), C(delete cluster)).
  returned: always
  type: list
  elements: str
kubeconfig:
  description: The kubeconfig written.
  returned: always
  type: str
nodes:
  description: What M(gpuop.gates.kwok_nodes) returns (C(created), C(patched), C(allocatable), C(ready_after)); with O(nodes).
  returned: when O(nodes) is not empty
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.kwok_cluster import ARG_SPEC, ensure


def main():
    spec = dict(ARG_SPEC)
    spec.update({
        "nodes": {"type": "list", "elements": "str", "default": []},
        "capacity": {"type": "dict", "default": {}},
        "labels": {"type": "dict", "default": {}},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    path = params["bin_dir"] + os.pathsep + os.environ.get("PATH", "")

    def run(argv):
        return module.run_command(argv, environ_update={"PATH": path})

    try:
        result = ensure(params, run, module.check_mode)
        if params["nodes"]:
            from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster
            from ansible_collections.gpuop.gates.plugins.module_utils.kwok_nodes import ensure_nodes
            if module.check_mode and result["action"] != "kept":
                result["nodes"] = {"created": list(params["nodes"]), "patched": [], "allocatable": {}, "ready_after": 0.0}
            else:
                nodes = ensure_nodes(Cluster(params["kubeconfig"], None, 10), params["nodes"], params["capacity"],
                                     params["labels"], float(params["wait_timeout"]), module.check_mode)
                result["nodes"] = nodes
                result["changed"] = result["changed"] or bool(nodes.get("changed"))
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
