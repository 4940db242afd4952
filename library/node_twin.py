#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module node_twin: thin shell over module_utils/gpuop/node_twin.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_twin
short_description: Start or stop a node twin, a stand-in GPU node on this machine reached over real SSH
description:
  - A twin has its own mount and UTS namespaces. C(/etc), C(/opt), C(/run) and C(/var/lib) are covered by
    overlays whose upper layers live on the twin's tmpfs, so C(/etc/containerd), C(/run/containerd) and
    C(/var/lib/containerd) are the standard paths and private to the twin. The host's files are never written.
  - Its hostname is O(name). Its sshd listens on 127.0.0.1:O(port) with key authentication only; the client key
    is C(<dir>/key/id).
  - Inside the twin it writes the containerd service shim C(/etc/gpuop-twin/containerd-service) (start, stop,
    restart, status by pid file; a twin has no systemd) and, with O(main_config), C(/etc/containerd/config.toml),
    then starts O(containerd) through the shim unless O(start_containerd=false).
  - O(state=stopped) stops every process in the twin's mount namespace, by pid (never by name), SIGTERM then
    SIGKILL after O(wait_timeout); the overlays and everything written inside vanish with them.
version_added: "1.0.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  name:
    description: The twin's name and hostname, a DNS label.
    type: str
    required: true
  state:
    description: Whether the twin runs.
    type: str
    default: started
    choices: [started, stopped]
  dir:
    description: The twin's folder on the host (keys, its init script, its record and sshd log); not under a covered folder.
    type: path
    required: true
  port:
    description: The sshd's port on 127.0.0.1; required with O(state=started).
    type: int
  containerd:
    description: The containerd binary the twin runs (Debian's 1.6, or a built 2.x).
    type: path
    default: /usr/bin/containerd
  main_config:
    description: The twin's C(/etc/containerd/config.toml); empty keeps the distribution's own.
    type: str
    default: ""
  start_containerd:
    description: Start containerd through the shim.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the sshd to answer, or for the twin's processes to exit.
    type: float
    default: 30.0
attributes:
  check_mode:
    support: full
    description: Reports whether the twin would start or stop; does nothing.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - "Runs on the machine that hosts the twins, as root (namespaces, mounts): C(hosts: localhost)."
requirements:
  - python >= 3.8
  - openssh-server (C(/usr/sbin/sshd)), util-linux (C(unshare), C(nsenter))
"""

EXAMPLES = r"""
- name: A twin running Debian's containerd 1.6
  gpuop.gates.node_twin:
    name: gpu-twin-1
    dir: /var/tmp/gpuop-twins/gpu-twin-1
    port: 2201
"""

RETURN = r"""
record:
  description: The running twin (C(name), C(pid) of its sshd, C(start_time), C(mnt_ns), C(port), C(client_key)); null when stopped.
  returned: always
  type: dict
stopped:
  description: The pids stopped.
  returned: when O(state=stopped)
  type: list
  elements: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.node_twin import ARG_SPEC, ensure


def main():
    module = AnsibleModule(argument_spec=ARG_SPEC, supports_check_mode=True)
    try:
        result = ensure(module.params, module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
