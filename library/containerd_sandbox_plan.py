#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_sandbox_plan: thin shell over module_utils/gpuop/containerd_sandbox_plan.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_sandbox_plan
short_description: Name one containerd sandbox per major version, write their wrappers, and decide whether to walk
description:
  - Asks each binary of O(candidates) its version (C(containerd --version)) and names one sandbox per major
    version, C(containerd-<major>), with its socket, log and wrapper folder under O(var_dir). Two binaries of
    the same major version are refused.
  - Writes each sandbox's wrapper C(<var_dir>/containerd-<major>/bin/containerd) (mode 0755, folders 0700);
    it runs that binary with C(--config) O(config) from O(cwd). Put first on PATH, step 4's check script asks
    that containerd version.
  - Fingerprints O(fingerprint_inputs) (O(root) written C(@ROOT@)). The walk must be made unless the record
    O(record_dest) has that fingerprint and the report O(report_dest) exists; never in check mode, never when
    O(enabled) is false.
  - With O(enabled=false), names no sandbox and warns with O(disabled_reason).
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  candidates:
    description: The containerd binaries, each C(containerd) and C(ctr) (paths).
    type: list
    elements: dict
    required: true
  var_dir:
    description: The sandboxes' folder.
    type: path
    required: true
  config:
    description: The lab's main config, which the wrappers pass as C(--config).
    type: path
    required: true
  cwd:
    description: The daemons' working directory.
    type: path
    default: /
  enabled:
    description: Whether sandboxes can run here (root, and the tools built).
    type: bool
    default: true
  disabled_reason:
    description: Why not, when O(enabled=false); shown as a warning.
    type: str
    default: ""
  root:
    description: The lab's root, written C(@ROOT@) in the fingerprint.
    type: path
    required: true
  fingerprint_inputs:
    description: What the walk depends on. A key C(daemons) set to null is filled with the sandboxes' versions.
    type: raw
    default: {}
  record_dest:
    description: The record of the last walk (C(runtime-views.json)).
    type: path
    required: true
  report_dest:
    description: The report of the last walk (C(runtime-views.md)).
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Asks the versions, writes no wrapper, and never decides to walk.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - "Runs where the sandboxes run: the controller (C(hosts: localhost))."
requirements:
  - python >= 3.8
"""

EXAMPLES = r"""
- name: Name the sandboxes and decide the walk
  gpuop.gates.containerd_sandbox_plan:
    candidates:
      - {containerd: /usr/bin/containerd, ctr: /usr/bin/ctr}
    var_dir: "{{ gpuop_root }}/var"
    config: "{{ gpuop_root }}/etc/containerd/config.toml"
    root: "{{ gpuop_root }}"
    fingerprint_inputs: {main: "{{ gpuop_root }}/etc/containerd/config.toml", daemons: null}
    record_dest: "{{ gpuop_root }}/out/runtime-views.json"
    report_dest: "{{ gpuop_root }}/out/runtime-views.md"
  register: plan
"""

RETURN = r"""
daemons:
  description: One sandbox per major version (C(name), C(major), C(version), C(containerd), C(ctr), C(address), C(log), C(wrapper_dir)).
  returned: always
  type: list
  elements: dict
walk:
  description: Whether the walk must be made.
  returned: always
  type: bool
record_matches:
  description: Whether the record has this fingerprint.
  returned: always
  type: bool
recorded:
  description: The record of the last walk (empty when none).
  returned: always
  type: dict
fingerprint:
  description: The inputs' fingerprint.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_sandbox_plan import ARG_SPEC, plan
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def main():
    module = AnsibleModule(argument_spec=ARG_SPEC, supports_check_mode=True)
    try:
        result = plan(module.params, module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    if not result["enabled"]:
        module.warn("No containerd sandbox: %s. The recorded observations stay in use." % result["disabled_reason"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
