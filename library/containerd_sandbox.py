#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_sandbox: thin shell over module_utils/gpuop/containerd_sandbox.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_sandbox
short_description: Start, restart or stop a real containerd daemon confined to the lab
description:
  - Runs containerd as root with C(--config) the lab's main file and C(--root), C(--state) and
    C(--address) in its own folder O(var_dir)/O(name) (C(root), C(state), C(containerd.sock)), its
    output appended to C(containerd.log) there, its working directory O(cwd) (containerd 1.x globs a
    relative import against it).
  - The daemon runs in a private mount namespace (C(unshare --mount --propagation private)) in which
    every folder of O(confine) is covered by an overlay whose upper layer is a tmpfs. What containerd
    creates there anyway (C(/opt/containerd), C(/etc/cni/net.d), C(/run/nri)) never reaches the host.
    The lab's config is read unchanged.
  - O(state=started) starts it unless this sandbox's daemon already runs with the same launch, and
    waits (poll 0.2 s, bounded by O(wait_timeout)) until it answers C(ctr version) on its socket.
    O(state=restarted) stops and starts it (it re-reads the files). O(state=stopped) sends SIGTERM to
    the recorded pid (SIGKILL after O(wait_timeout)) and waits until it is gone.
    O(state=absent) stops it as well and removes its stores (C(root), C(state), the confinement's
    upper layers), so that the next start is a fresh node's, with no image or sandbox of an earlier
    run. The log is kept.
  - A pid is signalled only when C(/proc) still shows the recorded process (start time and argv).
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  name:
    description: Sandbox name, also its folder under O(var_dir) (for example C(containerd-1)).
    type: str
    required: true
  state:
    description: What to do.
    type: str
    default: started
    choices: [started, restarted, stopped, absent]
  var_dir:
    description: Absolute folder of the sandboxes (the lab's C(var)); must lie outside O(confine).
    type: path
    required: true
  config:
    description: The lab's main config (C(--config)); required unless O(state=stopped).
    type: path
  containerd:
    description: containerd binary.
    type: path
    default: /usr/bin/containerd
  ctr:
    description: ctr binary used to see that the daemon answers.
    type: path
    default: /usr/bin/ctr
  cwd:
    description: The daemon's working directory (systemd uses C(/)).
    type: path
    default: /
  confine:
    description: Host folders covered by a throwaway overlay in the daemon's mount namespace.
    type: list
    elements: path
    default: [/etc, /opt, /run]
  log_level:
    description: containerd's C(--log-level).
    type: str
    default: info
    choices: [debug, info, warn, error]
  wait_timeout:
    description: Seconds to wait for the daemon to answer, or to exit.
    type: float
    default: 30.0
attributes:
  check_mode:
    support: full
    description: Reports whether it would start, restart or stop; does nothing.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - Needs root (mount namespaces, overlay mounts).
"""

EXAMPLES = r"""
- name: Start Debian's containerd 1.6 on the lab's main file
  gpuop.gates.containerd_sandbox:
    name: containerd-1
    var_dir: /srv/lab/var
    config: /srv/lab/etc/containerd/config.toml

- name: Stop it
  gpuop.gates.containerd_sandbox:
    name: containerd-1
    var_dir: /srv/lab/var
    state: stopped

- name: Stop it and forget its images and sandboxes (the next start is a fresh node's)
  gpuop.gates.containerd_sandbox:
    name: containerd-1
    var_dir: /srv/lab/var
    state: absent
"""

RETURN = r"""
pid:
  description: The daemon's pid (null when stopped).
  returned: always
  type: int
address:
  description: Its socket.
  returned: always
  type: str
log:
  description: Its log file.
  returned: always
  type: str
argv:
  description: containerd's own argv.
  returned: when running
  type: list
  elements: str
cwd:
  description: Its working directory.
  returned: always
  type: str
confined_writes:
  description: Host paths containerd created inside its namespace only (seen through /proc/PID/root).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_sandbox import (argument_spec, confined_writes, paths, remove, restart,
                                                                                     running, start, stop, stores, validate)
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_if=[("state", "started", ("config",)), ("state", "restarted", ("config",))])
    params = module.params
    error = None
    changed, record = False, None
    try:
        where = validate(params["name"], params["var_dir"], params["config"], params["containerd"], params["cwd"],
                         params["confine"], need_config=params["state"] in ("started", "restarted"))
        if module.check_mode:
            current = running(where)
            if params["state"] == "absent":
                changed = bool(current) or bool(stores(where))
            else:
                changed = params["state"] == "restarted" or (params["state"] == "stopped") == bool(current)
            record = current
        elif params["state"] == "started":
            changed, record = start(params)
        elif params["state"] == "restarted":
            changed, record = restart(params)
        elif params["state"] == "stopped":
            changed, _gone = stop(params)
        else:
            changed, _gone = remove(params)
    except GpuopError as exc:
        error = exc.msg
    if error is not None:
        module.fail_json(msg=error)
    where = paths(params["var_dir"], params["name"])
    alive = record if params["state"] in ("started", "restarted") else None
    module.exit_json(changed=changed, pid=alive["pid"] if alive else None, address=where["address"], log=where["log"],
                     argv=alive["argv"] if alive else None, cwd=params["cwd"],
                     confined_writes=confined_writes(alive["pid"], alive["confine"]) if alive else [])


if __name__ == "__main__":
    main()
