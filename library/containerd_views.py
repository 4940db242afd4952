#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_views: thin shell over module_utils/gpuop/containerd_sandbox_views.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_views
short_description: Write runtime-views.md and its JSON record from a walk's observations
description:
  - Renders written, loaded and after-restart per containerd version and moment, with containerd_merge's
    predictions beside them, both checks' answers and the daemon's RunPodSandbox answer.
  - Compares every prediction with what the daemons did; a disagreement is listed as a failure of the
    prediction (and fails the task when O(fail_on_disagreement)), after the files are written.
  - Returns the handlers loaded before the restart (the observation behind C(LOADED_RUNTIMES)).
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  observations:
    description: The moments recorded by the role's observe tasks, in order.
    type: list
    elements: dict
    required: true
  config:
    description: The lab's main config (named in the report).
    type: path
    required: true
  cwd:
    description: The daemons' working directory (named in the report).
    type: path
    required: true
  fingerprint:
    description: Hash of the walk's inputs, stored in the record so a later run can recognise it.
    type: str
    required: true
  dest:
    description: Where runtime-views.md goes.
    type: path
    required: true
  record_dest:
    description: Where the JSON record goes.
    type: path
    required: true
  incident_major:
    description: containerd major version whose before-restart observation is returned first.
    type: int
    default: 1
  fail_on_disagreement:
    description: Fail after writing when a prediction disagrees with a daemon.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Computes everything; writes nothing.
  diff_mode:
    support: full
    description: Before and after of each file that changes.
"""

EXAMPLES = r"""
# The role's observe tasks fill containerd_sandbox_observations; an empty walk writes an empty report.
- name: Write the views
  gpuop.gates.containerd_views:
    observations: []
    config: /srv/lab/etc/containerd/config.toml
    cwd: /
    fingerprint: 0123abcd
    dest: /srv/lab/out/runtime-views.md
    record_dest: /srv/lab/out/runtime-views.json
"""

RETURN = r"""
rows:
  description: Every prediction beside the daemon's answer (version, moment, view, predicted, observed, agree).
  returned: always
  type: list
  elements: dict
disagreements:
  description: The rows whose prediction failed.
  returned: always
  type: list
  elements: dict
loaded_before_restart:
  description: Handlers the incident version's daemon had loaded after the drop-in appeared (null if none observed).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_sandbox_views import compare, loaded_before_restart, record, render
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file


def main():
    module = AnsibleModule(argument_spec=dict(
        observations=dict(type="list", elements="dict", required=True),
        config=dict(type="path", required=True),
        cwd=dict(type="path", required=True),
        fingerprint=dict(type="str", required=True),
        dest=dict(type="path", required=True),
        record_dest=dict(type="path", required=True),
        incident_major=dict(type="int", default=1),
        fail_on_disagreement=dict(type="bool", default=True),
    ), supports_check_mode=True)
    params = module.params
    error = None
    result = dict(changed=False, rows=[], disagreements=[], loaded_before_restart=None)
    try:
        obs = params["observations"]
        rows = compare(obs)
        result["rows"] = rows
        result["disagreements"] = [r for r in rows if not r["agree"]]
        majors = [params["incident_major"]] + sorted({d["major"] for o in obs for d in o["daemons"]})
        for major in majors:
            found = loaded_before_restart(obs, major)
            if found is not None:
                result["loaded_before_restart"] = found
                break
        diffs = []
        for path, content in ((params["dest"], render(obs, params["config"], params["cwd"], rows)),
                              (params["record_dest"], record(obs, params["config"], params["cwd"],
                                                             params["fingerprint"], rows,
                                                             result["loaded_before_restart"]))):
            changed, diff = ensure_file(path, content, 0o644, module.check_mode)
            result["changed"] = result["changed"] or changed
            if changed:
                diffs.append(diff)
        if module._diff and diffs:
            result["diff"] = diffs
    except GpuopError as exc:
        error = exc.msg
    except (KeyError, TypeError) as exc:
        error = "observations are not a walk's record: missing or wrong %s" % exc
    if error is not None:
        module.fail_json(msg=error, **result)
    if params["fail_on_disagreement"] and result["disagreements"]:
        module.fail_json(msg="containerd_merge's prediction failed against the daemons: %s" % "; ".join(
            "%s %s %s: predicted %s, observed %s" % (r["version"], r["moment"], r["view"], r["predicted"], r["observed"])
            for r in result["disagreements"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
