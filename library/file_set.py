#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module file_set: thin shell over module_utils/gpuop/file_set.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: file_set
short_description: Make folders, write files (atomically, only when they differ) and remove files in one module run
description:
  - Makes each folder of O(directories) (parents too) and gives it its mode, then writes each file of
    O(files) when its content or mode differs, through a temporary file in the same folder renamed over
    it (a reader, or a run killed half-way, sees the old file or the new one, never a part).
  - One module run where a role would chain a C(ansible.builtin.file) loop and one C(ansible.builtin.template)
    per file; render the contents on the controller (C(lookup('ansible.builtin.template', ...))).
  - Bad input (a relative path, a mode that is not octal) fails before anything is made.
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  directories:
    description: Folders to make, in this order, before any file is written.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the folder.
        type: path
        required: true
      mode:
        description: Its mode, octal as a string (V("0755")) or a number.
        type: raw
        default: "0755"
  absent:
    description:
      - Files to remove when they are there, after the folders and files are made. A folder in the way is
        refused; a path both in O(files) and here is refused before anything is made.
    type: list
    elements: path
    default: []
    version_added: "1.1.0"
extends_documentation_fragment:
  - gpuop.gates.files
attributes:
  check_mode:
    support: full
    description: Folders and files are compared, nothing is made or written.
  diff_mode:
    support: full
    description: Before and after of each changed file's content, and of each changed folder's mode.
seealso:
  - module: ansible.builtin.file
  - module: ansible.builtin.template
"""

EXAMPLES = r"""
- name: Make the lab's folders and write its main config and drop-in
  gpuop.gates.file_set:
    directories:
      - path: /srv/lab/etc/containerd/conf.d
      - path: /srv/lab/var
        mode: "0700"
    files:
      - path: /srv/lab/etc/containerd/config.toml
        content: "{{ lookup('ansible.builtin.template', 'config.toml.j2') }}"
      - path: /srv/lab/bin/wrapper.sh
        content: "#!/bin/sh\nexec /usr/bin/containerd \"$@\"\n"
        mode: "0755"

- name: The main file alone, no drop-in yet
  gpuop.gates.file_set:
    files:
      - path: /srv/lab/etc/containerd/config.toml
        content: "{{ lookup('ansible.builtin.template', 'config.toml.j2') }}"
    absent:
      - /srv/lab/etc/containerd/conf.d/99-nvidia.toml
"""

RETURN = r"""
directories:
  description: Each folder of O(directories) and whether it was (or would be) made or given its mode.
  returned: always
  type: list
  elements: dict
  sample: [{path: /srv/lab/etc/containerd/conf.d, changed: false}]
files:
  description: Each file of O(files) and whether it was (or would be) written.
  returned: always
  type: list
  elements: dict
  sample: [{path: /srv/lab/etc/containerd/config.toml, changed: true}]
absent:
  description: Each path of O(absent) and whether it was (or would be) removed.
  returned: always
  type: list
  elements: dict
  sample: [{path: /srv/lab/etc/containerd/conf.d/99-nvidia.toml, changed: true}]
  version_added: "1.1.0"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import call_or_fail
from ansible_collections.gpuop.gates.plugins.module_utils.file_set import argument_spec, run


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = call_or_fail(module, run, module.params, check_mode=module.check_mode)
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
