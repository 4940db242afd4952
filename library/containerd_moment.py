#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_moment: thin shell over module_utils/gpuop/containerd_moment.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_moment
short_description: Observe one moment of the containerd walk on every sandbox daemon
description:
  - For each daemon of O(daemons) (as M(gpuop.gates.containerd_sandbox_plan) names them), asks what it loaded
    (C(ctr plugins ls), C(crictl info), a RunPodSandbox probe per O(probe_handlers)) and what
    C(containerd config dump) says a restart would load, as M(gpuop.gates.containerd_runtimes) does.
  - Predicts from the files on disk now, as M(gpuop.gates.containerd_merge) does.
  - Runs step 4's check O(step4_check) (when it exists) with the daemon's wrapper first on PATH, and the
    second check O(loaded_check) with the daemon's socket. A check that exits other than 0 to 3 fails the task.
  - Returns O(observations) with this moment appended; it writes nothing.
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  moment:
    description: The moment's title (for example C(2. drop-in written, not restarted)).
    type: str
    required: true
  daemons_read_files_now:
    description: Whether the daemons (re)started on the files as they are now (moments 1 and 3), or the files changed since (moment 2).
    type: bool
    required: true
  daemons:
    description: The sandboxes (C(name), C(major), C(version), C(containerd), C(ctr), C(address), C(wrapper_dir)).
    type: list
    elements: dict
    required: true
  config:
    description: The lab's main config.
    type: path
    required: true
  cwd:
    description: The daemons' working directory.
    type: path
    default: /
  crictl:
    description: The crictl binary.
    type: path
    required: true
  wait_timeout:
    description: Seconds to wait for a daemon's answer.
    type: float
    default: 30.0
  probe_handlers:
    description: Handlers to probe with a RunPodSandbox.
    type: list
    elements: str
    default: []
  step4_check:
    description: Step 4's check script (C(check-runtime.sh)); not run when it does not exist.
    type: path
    required: true
  loaded_check:
    description: The second check (C(check-loaded-runtime.sh)), which asks the running daemon.
    type: path
    required: true
  observations:
    description: The walk's moments so far.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    support: none
    description: The walk never runs in check mode.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - "Runs where the sandboxes run: the controller (C(hosts: localhost)), as root."
requirements:
  - python >= 3.8
"""

EXAMPLES = r"""
- name: Moment 2 - the drop-in written, not restarted
  gpuop.gates.containerd_moment:
    moment: 2. drop-in written, not restarted
    daemons_read_files_now: false
    daemons:
      - name: containerd-1
        major: 1
        version: 1.6.20~ds1
        containerd: /usr/bin/containerd
        ctr: /usr/bin/ctr
        address: /root/gpuop/var/containerd-1/containerd.sock
        wrapper_dir: /root/gpuop/var/containerd-1/bin
    config: /root/gpuop/etc/containerd/config.toml
    crictl: /root/.cache/gpuop/bin/crictl
    step4_check: /root/gpuop/bin/check-runtime.sh
    loaded_check: /root/gpuop/bin/check-loaded-runtime.sh
    observations: []
  register: moment
"""

RETURN = r"""
observations:
  description: The walk's moments, this one last (C(moment), C(daemons_read_files_now), C(written), C(predicted), C(daemons)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_moment import ARG_SPEC, observe_moment
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def main():
    module = AnsibleModule(argument_spec=ARG_SPEC, supports_check_mode=False)
    try:
        observations = observe_moment(module.params)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(changed=False, observations=observations)


if __name__ == "__main__":
    main()
