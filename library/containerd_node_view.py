#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_node_view: thin shell over module_utils/gpuop/fleet.py (read_node)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_node_view
short_description: Read a node's containerd as written, predicted and loaded, without changing anything
description:
  - Runs on the node, read-only. Reads the main config and every C(*.toml) under O(folders) (at most 200), the
    containerd binary's version, what a restart of that version would load (the merge prediction), and what
    the running daemon has loaded (C(crictl info) on O(address)).
  - The doctor's fleet gate (C(gpuop.gates.gpu_doctor) option C(nodes)) turns these views into verdicts.
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
requirements:
  - Python 3.8 or later on the node, nothing else; C(ctr) and C(crictl) to ask the daemon.
options:
  config:
    description: The main config.
    type: path
    default: /etc/containerd/config.toml
  folders:
    description: Folders searched for TOML files (an orphan drop-in is one no import loads).
    type: list
    elements: path
    default: [/etc/containerd]
  containerd:
    description: The containerd binary (its C(--version) picks the 1.x or 2.x rules).
    type: path
    default: /usr/bin/containerd
  address:
    description: The daemon's socket; no socket means no daemon runs.
    type: path
    default: /run/containerd/containerd.sock
  ctr:
    description: The C(ctr) client.
    type: path
    default: /usr/bin/ctr
  crictl:
    description: The C(crictl) client.
    type: path
    default: crictl
  daemon_cwd:
    description: The daemon's working directory (1.x globs a relative import against it).
    type: path
    default: /
  wait_timeout:
    description: Seconds to wait for a running daemon to answer.
    type: float
    default: 10.0
attributes:
  check_mode:
    support: full
    description: The same view; the module never writes.
  diff_mode:
    support: none
    description: Nothing is written, so there is no diff.
notes:
  - Never writes a file and never restarts containerd.
seealso:
  - module: gpuop.gates.gpu_doctor
  - module: gpuop.gates.containerd_dropin
"""

EXAMPLES = r"""
- name: Read each GPU node's containerd
  gpuop.gates.containerd_node_view:
  register: node_view
"""

RETURN = r"""
view:
  description:
    - C(config), C(containerd_version), C(containerd_major), C(load_order), C(files) (each C(path), C(loaded),
      C(error), C(version), C(plugin_ids), C(runtimes), C(imports), C(cri_keys), C(incomplete), C(cri_line)),
      C(predicted) (computed), C(loaded) (crictl info; null without a daemon), C(warnings).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_dropin import loaded_now
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_runtimes import binary_version
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.fleet import argument_spec, read_node


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    error = None
    try:
        view = read_node(module.params, binary_version, loaded_now)
    except GpuopError as exc:
        error = exc.msg
    if error is not None:
        module.fail_json(msg=error)
    module.exit_json(changed=False, view=view)


if __name__ == "__main__":
    main()
