#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_merge: thin shell over module_utils/gpuop/containerd_merge.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_merge
short_description: Decide containerd runtime conflicts and predict what containerd 1.x and 2.x load
description:
  - Reads a containerd main config and the files its C(imports) name (with the TOML parser), and
    reports per file the runtime names and table paths it defines, the tables defined by more than
    one file, and whether more than one file defines runtime tables under the same
    C(containerd.runtimes) path (the conflict).
  - Predicts, for containerd 1.x (1.6, 1.7) and 2.x separately, which runtimes the CRI plugin would
    load after a restart, its C(default_runtime_name), and whether the CRI plugin loads at all.
    containerd 1.x replaces a whole C(plugins."<id>") section per file and globs a relative import
    against the daemon's working directory; 2.x migrates and deep-merges, resolves relative imports
    against the importing file's folder, and refuses a drop-in whose C(version) is higher than the
    main file's. Defaults containerd fills in are included (the built-in C(runc) with
    C(SystemdCgroup = false)).
  - Optionally writes C(merge.txt) (five C(KEY=value) lines) and a human-readable Markdown report.
  - An import glob that matches nothing, and a drop-in version above the main file's, are warnings.
    A missing main file, malformed TOML (file, line, column), and C(plugins), C(containerd) or
    C(runtimes) entries that are not tables fail the task; nothing is written then.
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
requirements:
  - Python 3.8 or later on the host where it runs, nothing else (TOML is read with the standard library's
    tomllib from 3.11 on, else with gpuop's own reader, module_utils toml_compat)
options:
  config:
    description:
      - Path of the containerd main config file (what C(containerd --config) gets).
      - A relative path is taken from the module's working directory.
    type: path
    required: true
  dest:
    description:
      - Where to write C(merge.txt) (C(MAIN_RUNTIMES), C(DROPIN_RUNTIMES), C(CONFLICT),
        C(CONFLICT_TABLE), C(LOADED_RUNTIMES)). When omitted nothing is written.
    type: path
  report_dest:
    description:
      - Where to write the Markdown report (which lines are written, computed, observed, and the
        two predictions with their reasons). When omitted no report is written.
    type: path
  loaded_runtimes:
    description:
      - The runtime handlers a running containerd was B(observed) to have loaded (for example from
        C(crictl info)). Written as C(LOADED_RUNTIMES), sorted and comma-separated; never computed
        from the files. Omitted means an empty C(LOADED_RUNTIMES=).
    type: list
    elements: str
  daemon_cwd:
    description:
      - The working directory a containerd 1.x daemon runs in (systemd starts it in C(/)). A relative
        import glob is matched against it by containerd 1.x. Must be absolute.
    type: path
    default: /
attributes:
  check_mode:
    support: full
    description: Computes everything and reports C(changed); writes nothing.
  diff_mode:
    support: full
    description: Shows the before and after content of each output file that changes.
notes:
  - Reads files only; it never runs or restarts containerd.
seealso:
  - module: gpuop.gates.runtime_check
"""

EXAMPLES = r"""
- name: Predict what containerd loads from the lab's files
  gpuop.gates.containerd_merge:
    config: /srv/lab/etc/containerd/config.toml

- name: Write merge.txt and the report, with the handlers seen on the node
  gpuop.gates.containerd_merge:
    config: /srv/lab/etc/containerd/config.toml
    dest: /srv/lab/out/merge.txt
    report_dest: /srv/lab/out/merge-report.md
    loaded_runtimes:
      - runc
  register: merge

- name: Fail when containerd 1.x would not load the CRI plugin
  ansible.builtin.assert:
    that: merge.predicted.containerd_1.cri_loads
    fail_msg: "{{ merge.predicted.containerd_1.error }}"
"""

RETURN = r"""
msg:
  description: One line with both predictions.
  returned: always
  type: str
config:
  description: Absolute path of the main config.
  returned: always
  type: str
daemon_cwd:
  description: The containerd 1.x working directory used for relative globs.
  returned: always
  type: str
files:
  description:
    - The main file then every imported file, imports resolved against the importing file's folder.
    - Each has C(path), C(role) (C(main) or C(drop-in)), C(version) (0 when absent), C(imports),
      C(runtimes) (sorted names), C(runtime_tables) (runtimes table path to names) and C(tables)
      (every table path the file defines).
  returned: always
  type: list
  elements: dict
main_runtimes:
  description: Runtime names the main file defines itself.
  returned: always
  type: list
  elements: str
  sample: [runc]
dropin_runtimes:
  description: Runtime names the imported files define.
  returned: always
  type: list
  elements: str
  sample: [nvidia]
shared_tables:
  description: Table paths defined by more than one file, each with C(table) and C(files).
  returned: always
  type: list
  elements: dict
shared_sections:
  description: C(plugins."<id>") sections declared by more than one file (containerd 1.x keeps the last).
  returned: always
  type: list
  elements: dict
conflict:
  description: Whether more than one file defines runtime tables under the same runtimes path.
  returned: always
  type: bool
conflict_table:
  description: That path (comma-separated if several), empty without a conflict.
  returned: always
  type: str
  sample: plugins."io.containerd.grpc.v1.cri".containerd.runtimes
loaded_runtimes:
  description: The observation given in C(loaded_runtimes), sorted and de-duplicated.
  returned: always
  type: list
  elements: str
predicted:
  description:
    - C(containerd_1) and C(containerd_2), each with C(runtimes) (sorted names),
      C(default_runtime_name), C(cri_loads), C(error) (null or containerd's message),
      C(loaded_files) (load order), C(runtime_details) (per name C(runtime_type), C(binary_name),
      C(systemd_cgroup), C(source)) and C(reason).
  returned: always
  type: dict
  sample:
    containerd_1:
      runtimes: [nvidia]
      default_runtime_name: runc
      cri_loads: false
      error: invalid plugin config, no corresponding runtime configured in containerd.runtimes for containerd default_runtime_name = "runc"
    containerd_2:
      runtimes: [nvidia, runc]
      default_runtime_name: runc
      cri_loads: true
      error: null
warnings_found:
  description: The warnings (also shown as task warnings), such as an import glob matching nothing.
  returned: always
  type: list
  elements: str
merge_txt:
  description: The five lines of merge.txt (also when C(dest) is omitted).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_merge import analyze, argument_spec, render_merge_txt, render_report, summary
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    error = None
    try:
        result = analyze(params["config"], params["daemon_cwd"], params["loaded_runtimes"])
        outputs = []
        if params["dest"]:
            outputs.append((params["dest"], render_merge_txt(result)))
        if params["report_dest"]:
            outputs.append((params["report_dest"], render_report(result)))
        changed, diffs = False, []
        for path, content in outputs:
            one_changed, diff = ensure_file(path, content, 0o644, module.check_mode)
            if one_changed:
                changed = True
                diffs.append(diff)
    except GpuopError as exc:
        error = exc.msg
    except OSError as exc:
        error = "cannot write output: %s" % exc
    if error is not None:
        # Outside the except block: Ansible then attaches no traceback to the failure.
        module.fail_json(msg=error)
    warnings = result.pop("warnings")
    for warning in warnings:
        module.warn(warning)
    out = dict(result, changed=changed, msg=summary(result), merge_txt=render_merge_txt(result),
               warnings_found=warnings)
    if module._diff and diffs:
        out["diff"] = diffs
    module.exit_json(**out)


if __name__ == "__main__":
    main()
