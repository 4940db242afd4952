# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The O(files) option of the gpuop modules that write files (module_utils/gpuop/file_set.py FILES_SPEC)."""


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  files:
    description:
      - Files to write, in this order, each through a temporary file in its folder renamed over it,
        only when its content or mode differs.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Path of the file; its folder is made when missing.
        type: path
        required: true
      content:
        description: The whole content of the file.
        type: str
        required: true
      mode:
        description: Mode of the file, octal as a string (V("0644")) or a number.
        type: raw
        default: "0644"
"""
