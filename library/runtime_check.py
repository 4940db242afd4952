#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module runtime_check: thin shell over module_utils/gpuop/runtime_check.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: runtime_check
short_description: Install and run a check that asks containerd's loaded configuration for a runtime handler
description:
  - Installs C(check-runtime.sh) (deterministic content, mode 0755) for one runtime handler name.
    The script runs C(containerd config dump) found on C(PATH) and exits 0 when a runtime named
    exactly I(handler) exists under C(plugins.<CRI plugin>.containerd.runtimes) (containerd 1.x
    dumps, C(io.containerd.grpc.v1.cri); 2.x dumps, C(io.containerd.cri.v1.runtime)), 1 when not,
    2 when containerd is not on C(PATH), 3 when the dump fails; it never reads a config file.
  - With I(run=true) it runs the script and returns C(handler_loaded). With I(expect_loaded) set,
    the task fails when the answer differs. A check that cannot answer (exit 2 or 3) fails the task
    with the script's one-line reason.
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  dest:
    description: Where to install the script.
    type: path
    required: true
  handler:
    description: The runtime handler name to look for (letters, digits, C(.), C(_), C(-)).
    type: str
    default: nvidia
  run:
    description: Run the script after installing it and return its answer.
    type: bool
    default: false
  path:
    description:
      - Folders put first on C(PATH) when running the script (C(:)-separated), so a wrapper or a fake
        C(containerd) is found first. Only used with I(run=true).
    type: str
  expect_loaded:
    description:
      - When set, fail the task if C(handler_loaded) differs. Implies I(run=true).
    type: bool
attributes:
  check_mode:
    support: full
    description: Reports whether the script would change without writing it; a requested run reads the dump only.
  diff_mode:
    support: full
    description: Shows the script's before and after content when it changes.
seealso:
  - module: gpuop.gates.containerd_merge
"""

EXAMPLES = r"""
- name: Install bin/check-runtime.sh for the nvidia handler
  gpuop.gates.runtime_check:
    dest: /srv/lab/bin/check-runtime.sh

- name: Assert that nvidia is loaded on this node
  gpuop.gates.runtime_check:
    dest: /usr/local/bin/check-runtime.sh
    handler: nvidia
    expect_loaded: true

- name: Ask a fake containerd first on PATH
  gpuop.gates.runtime_check:
    dest: /srv/lab/bin/check-runtime.sh
    run: true
    path: /srv/lab/fake-bin
  register: check
"""

RETURN = r"""
dest:
  description: Path of the script.
  returned: always
  type: str
handler:
  description: The handler name looked for.
  returned: always
  type: str
handler_loaded:
  description: Whether the dump has the handler; null when the script was not run.
  returned: always
  type: bool
exit_code:
  description: The script's exit code (0 found, 1 not found); null when not run. Not named C(rc), which Ansible reads as failure.
  returned: always
  type: int
stderr:
  description: The script's one-line reason on stderr (empty when found or not run).
  returned: always
  type: str
stdout:
  description: The script's stdout when run.
  returned: always
  type: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file
from ansible_collections.gpuop.gates.plugins.module_utils.runtime_check import argument_spec, run_check, script_content


def _run(module, content, installed):
    """Run the installed script, or (check mode, script not yet as wanted) a temporary copy."""
    params = module.params
    if installed:
        return run_check(params["dest"], params["handler"], params["path"])
    fd, tmp = tempfile.mkstemp(prefix="check-runtime.", suffix=".sh", dir=module.tmpdir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(tmp, 0o755)
        return run_check(tmp, params["handler"], params["path"])
    finally:
        os.unlink(tmp)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    result = dict(changed=False, dest=params["dest"], handler=params["handler"], handler_loaded=None,
                  exit_code=None, stderr="", stdout="")
    error = None
    try:
        content = script_content(params["handler"])
        changed, diff = ensure_file(params["dest"], content, 0o755, module.check_mode)
        result["changed"] = changed
        if changed and module._diff:
            result["diff"] = diff
        if params["run"] or params["expect_loaded"] is not None:
            answer = _run(module, content, not (changed and module.check_mode))
            result.update(handler_loaded=answer["handler_loaded"], exit_code=answer["exit_code"],
                          stderr=answer["stderr"], stdout=answer["stdout"])
    except GpuopError as exc:
        error = exc.msg
        result.update({k: v for k, v in exc.details.items() if k in ("exit_code", "stderr")})
    except OSError as exc:
        error = "cannot install %s: %s" % (params["dest"], exc)
    if error is not None:
        # Outside the except block: Ansible then attaches no traceback to the failure.
        module.fail_json(msg=error, **result)
    expected = params["expect_loaded"]
    if expected is not None and result["handler_loaded"] != expected:
        module.fail_json(msg="runtime handler %r is %s in containerd's loaded configuration, expected %s%s"
                         % (params["handler"], "loaded" if result["handler_loaded"] else "not loaded",
                            "loaded" if expected else "not loaded",
                            ": " + result["stderr"] if result["stderr"] else ""), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
