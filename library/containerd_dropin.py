#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_dropin: thin shell over module_utils/gpuop/containerd_dropin.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_dropin
short_description: Add a runtime to a node's containerd through one drop-in, refusing a restart that would break it
description:
  - Runs on the node. Reads its containerd main config and the files it imports, the containerd binary's
    version, and what the running daemon has loaded (C(crictl info) on its socket).
  - Writes only O(dropin) and, when no import of the main file names it, one import of the drop-in's own
    path in the main file. Every other byte of the main file stays, its mode and owner too; both files are
    replaced atomically (a temp file in the same folder, then a rename).
  - Under containerd 2.x the drop-in is minimal (the runtime's table; 2.x deep-merges it). Under 1.x a file
    that declares the CRI section replaces that whole section, so the drop-in carries a copy of the section
    1.x loads from the node's other files, plus the runtime.
  - Before writing it predicts, for the node's containerd version and with the files as they would be
    written, what a restart would load. It B(refuses) (writes nothing, RV(refused=true), RV(refusals) name
    the file that wins the CRI table and the reason) when the CRI plugin would fail, when the runtime would
    not load, or when a runtime in use would vanish (the default, one the daemon has loaded now, or one in
    O(handlers_in_use)). O(force=true) writes anyway.
  - It never restarts containerd; RV(restart_needed) says whether a restart is due (files changed, or the
    daemon lacks the runtime).
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
requirements:
  - Python 3.8 or later on the node, nothing else (TOML is read with tomllib or gpuop's own reader).
  - C(ctr) and C(crictl) on the node to read the running daemon's view.
options:
  config:
    description: The main config (what C(containerd --config) reads).
    type: path
    default: /etc/containerd/config.toml
  dropin:
    description: The drop-in gpuop owns.
    type: path
    default: /etc/containerd/conf.d/99-nvidia.toml
  runtime_name:
    description: The runtime's name (the RuntimeClass handler).
    type: str
    default: nvidia
  runtime_type:
    description: The runtime's C(runtime_type).
    type: str
    default: io.containerd.runc.v2
  binary_name:
    description: The runtime's C(options.BinaryName). C(SystemdCgroup) follows the node's default runtime.
    type: path
    default: /usr/bin/nvidia-container-runtime
  containerd:
    description: The containerd binary a restart starts (its C(--version) picks the 1.x or 2.x rules).
    type: path
    default: /usr/bin/containerd
  address:
    description: The running daemon's socket. No socket means no daemon runs.
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
  handlers_in_use:
    description: Handlers that must stay loaded, such as those the cluster's RuntimeClasses name.
    type: list
    elements: str
    default: []
  force:
    description: Write even where the prediction refuses. The refusals are still returned.
    type: bool
    default: false
  daemon_cwd:
    description: The daemon's working directory (containerd 1.x globs a relative import against it).
    type: path
    default: /
  wait_timeout:
    description: Seconds to wait for a running daemon to answer.
    type: float
    default: 10.0
attributes:
  check_mode:
    support: full
    description: Plans, predicts and gates; writes nothing.
  diff_mode:
    support: full
    description: The main file's and the drop-in's before and after.
notes:
  - Never restarts containerd and never writes a file other than the two above.
seealso:
  - module: gpuop.gates.containerd_merge
  - module: gpuop.gates.containerd_runtimes
"""

EXAMPLES = r"""
- name: Add the nvidia runtime's drop-in (refused where a restart would break)
  gpuop.gates.containerd_dropin:
    handlers_in_use: [nvidia, runc]
  register: dropin

- name: Restart containerd only where needed and allowed
  ansible.builtin.systemd_service:
    name: containerd
    state: restarted
  when: dropin.restart_needed
"""

RETURN = r"""
msg:
  description: One line, the prediction or the refusals.
  returned: always
  type: str
refused:
  description: Whether the prediction refused (and nothing was written).
  returned: always
  type: bool
forced:
  description: Whether O(force) wrote past refusals.
  returned: always
  type: bool
refusals:
  description: Each reason, naming the containerd version and the file that wins the CRI table.
  returned: always
  type: list
  elements: str
restart_needed:
  description: Whether a restart is due (not refused, and the files changed or the daemon lacks the runtime).
  returned: always
  type: bool
containerd_version:
  description: The binary's version.
  returned: always
  type: str
  sample: 1.6.20~ds1
containerd_major:
  description: 1 or 2.
  returned: always
  type: int
written:
  description: C(main), C(main_changed), C(main_lines_added), C(dropin), C(dropin_changed), C(dropin_kind).
  returned: always
  type: dict
files:
  description:
    - The written view after this run (as the files were, when refused or in check mode) C(main), C(main_imports),
      C(dropin), C(dropin_present), C(dropin_runtimes).
  returned: always
  type: dict
service_manager:
  description: C(systemd) when the node runs systemd (C(/run/systemd/system) exists), else C(none).
  returned: always
  type: str
predicted_now:
  description: What a restart with the files as they are would load (computed).
  returned: always
  type: dict
predicted:
  description:
    - What a restart with the files as written by this module would load (computed), for the node's
      version. C(runtimes), C(default_runtime_name), C(cri_loads), C(error), C(loaded_files),
      C(cri_table_files), C(cri_table_winner) (1.x), C(reason).
  returned: always
  type: dict
loaded_before:
  description: What the running daemon had loaded (crictl info), null when no daemon ran.
  returned: always
  type: dict
warnings_found:
  description: The merge prediction's warnings.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_dropin import argument_spec, run
from ansible_collections.gpuop.gates.plugins.module_utils.errors import call_or_fail


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = call_or_fail(module, run, module.params, module.check_mode)
    diff = result.pop("diff")
    for warning in result["warnings_found"]:
        module.warn(warning)
    if module._diff and result["changed"]:
        result["diff"] = [one for one in diff if one["before"] != one["after"]]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
