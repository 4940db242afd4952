#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module nodes_report: thin shell over module_utils/gpuop/nodes_report.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nodes_report
short_description: Write the GPU nodes' report from the per-node records, and fail naming every node not done
description:
  - Reads every node's record that the role C(gpuop.gates.nvidia_runtime) wrote on the controller,
    C(<report_dir>/nodes/*.json), in file-name order (without regard to case). A record holds the node's
    B(written) view (its files), its B(predicted) view (what a restart of its containerd version would load)
    and its B(loaded) view (what the running daemon answered), and a verdict.
  - Writes C(<report_dir>/nodes.json), the list of records (4-space indented, keys sorted), and
    C(<report_dir>/nodes-report.md), one table row per node then each refused node's reasons. Each file is
    written through a temporary file in the same folder renamed over it, and only when it differs.
  - Then fails when a node's verdict is neither C(loaded) nor C(forced) (C(refused), C(not-loaded), C(error)),
    naming those nodes and their verdicts on one line, after the files are written.
  - A record file that is not JSON, not an object, or lacks a field the report shows fails the run, naming the
    file and the field, before anything is written.
version_added: "1.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  report_dir:
    description:
      - The report's folder (absolute). The records are read from its C(nodes/) folder; C(nodes.json) and
        C(nodes-report.md) are written in it. No record (or no C(nodes/) folder) gives a report of 0 nodes.
    type: path
    required: true
  runtime_name:
    description: The runtime the nodes were given, named in the report's title.
    type: str
    default: nvidia
attributes:
  check_mode:
    support: full
    description: The files are compared, nothing is written; the nodes not done still fail the run.
  diff_mode:
    support: full
    description: Before and after of each file that changes.
notes:
  - Runs on the controller, where the role keeps the records (in Ansible's worker, through its action plugin).
seealso:
  - module: gpuop.gates.containerd_dropin
  - module: gpuop.gates.containerd_runtimes
"""

EXAMPLES = r"""
- name: The nodes' report; fails naming every node refused or without the runtime loaded
  gpuop.gates.nodes_report:
    report_dir: /var/lib/gpuop/nodes
    runtime_name: nvidia
  register: report

- name: Every node and its verdict
  ansible.builtin.debug:
    var: report.nodes
"""

RETURN = r"""
msg:
  description:
    - 'On failure the nodes not done and their verdicts, in the report''s order, for example
      V(gpu-node-b, gpu-node-d: not done (refused, not-loaded\); see /var/lib/gpuop/nodes/nodes-report.md);
      otherwise how many nodes, all done.'
  returned: always
  type: str
  sample: "gpu-node-b: not done (refused); see /var/lib/gpuop/nodes/nodes-report.md"
nodes:
  description: Each record's node and verdict, in the report's order.
  returned: success, and when a node is not done
  type: list
  elements: dict
  sample: [{node: gpu-node-a, verdict: loaded}, {node: gpu-node-b, verdict: refused}]
not_done:
  description: The nodes whose verdict is neither C(loaded) nor C(forced), with it.
  returned: success, and when a node is not done
  type: list
  elements: dict
  sample: [{node: gpu-node-b, verdict: refused}]
files:
  description: C(nodes.json) and C(nodes-report.md), and whether each was (or in check mode would be) written.
  returned: success, and when a node is not done
  type: list
  elements: dict
  sample: [{path: /var/lib/gpuop/nodes/nodes.json, changed: false}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import call_or_fail
from ansible_collections.gpuop.gates.plugins.module_utils.nodes_report import argument_spec, run


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result, failure = call_or_fail(module, run, module.params, check_mode=module.check_mode)
    if not module._diff:
        result.pop("diff")
    if failure is not None:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
