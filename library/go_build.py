#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module go_build: thin shell over module_utils/gpuop/go_build.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: go_build
short_description: Build the commands of a pinned Go module into a cached folder, once, also when other runs build it too
description:
  - Makes O(dest)C(/bin) hold one file per binary of O(binaries), built with C(go build -trimpath) from the Go
    module in O(module_dir) (C(CGO_ENABLED=0), C(GOFLAGS=-mod=readonly), after one C(go mod download)).
  - Reports ok, building nothing, when every binary is there.
  - Builds in a temporary folder next to O(dest) (C(<dest>.tmp-XXXXXXXX)) and renames it into place at the end;
    a build that fails is removed, one that is killed never leaves a half folder under O(dest).
  - Runs that build the same O(dest) at the same moment take turns on C(<dest>.lock) (an exclusive flock, released
    when its process ends, however it ends), polled every 0.2 s for at most O(lock_timeout) seconds. The run that
    waited finds the other one's build complete and builds nothing.
  - Under the lock, temporary folders left by killed builds are removed, and a folder at O(dest) that lacks a
    binary is built again and replaced (the result's RV(replaced_incomplete) names what it lacked).
  - A failed build fails naming the command and the last 25 lines of its output; nothing is cached.
version_added: "1.1.0"
author:
  - gpuop contributors (!UNKNOWN)
options:
  dest:
    description: The cached build's folder; the binaries go to its C(bin) folder. Its parent is made if missing.
    type: path
    required: true
  module_dir:
    description: The Go module (C(go.mod), C(go.sum)) that pins the commands.
    type: path
    required: true
  go:
    description: The go command.
    type: str
    default: go
  binaries:
    description: The commands to build, each name once.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: File name of the binary in C(bin).
        type: str
        required: true
      package:
        description: Go package of the command, required by the module's tool block.
        type: str
        required: true
  ldflags:
    description: Passed to C(go build -ldflags).
    type: str
    default: ""
  tags:
    description: Go build tags passed with C(-tags).
    type: list
    elements: str
    default: []
  version_check:
    description: Run C(<binary> --version) after the build and fail unless its output contains O(version_check.expect).
    type: dict
    suboptions:
      binary:
        description: One of O(binaries)' names.
        type: str
        required: true
      expect:
        description: Text the output must contain.
        type: str
        required: true
  lock_timeout:
    description: Seconds to wait for another run's build of the same O(dest) before failing.
    type: int
    default: 3600
attributes:
  check_mode:
    support: full
    description: Says whether it would build; builds, removes and locks nothing.
  diff_mode:
    support: none
    description: The result says what was built; binaries have no useful diff.
notes:
  - Minutes for a large command (kube-apiserver alone compiles for about 4 minutes on 2 cores). Run it with
    C(async) and C(poll) to see a line every few seconds while it works.
"""

EXAMPLES = r"""
- name: Build containerd, ctr and crictl once per pin (polled, so that the run prints a line every 10 s)
  gpuop.gates.go_build:
    dest: ~/.cache/gpuop/0123456789abcdef
    module_dir: tools/containerd
    tags: [no_btrfs, no_devmapper, no_zfs]
    binaries:
      - {name: containerd, package: github.com/containerd/containerd/v2/cmd/containerd}
      - {name: ctr, package: github.com/containerd/containerd/v2/cmd/ctr}
      - {name: crictl, package: sigs.k8s.io/cri-tools/cmd/crictl}
  async: 3600
  poll: 10
"""

RETURN = r"""
dest:
  description: The cached build's folder (absolute).
  returned: always
  type: str
  sample: /root/.cache/gpuop/0123456789abcdef
bin_dir:
  description: Its C(bin) folder, which holds the binaries.
  returned: always
  type: str
  sample: /root/.cache/gpuop/0123456789abcdef/bin
built:
  description: The binaries this run built (or would build, in check mode); empty when they were there.
  returned: always
  type: list
  elements: str
  sample: [containerd, ctr, crictl]
seconds:
  description: Seconds each part of the build took (C(go mod download), then each binary).
  returned: always
  type: dict
  sample: {go mod download: 11.8, containerd: 61.2}
lock_waited:
  description: Seconds spent waiting for another run's build of the same folder.
  returned: always
  type: float
  sample: 0.0
replaced_incomplete:
  description: The binaries an incomplete folder at O(dest) lacked, when it was built again and replaced.
  returned: always
  type: list
  elements: str
  sample: [containerd]
removed_temps:
  description: Temporary folders of killed builds that were removed.
  returned: always
  type: list
  elements: str
  sample: [/root/.cache/gpuop/0123456789abcdef.tmp-7ovuc7nx]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuop.gates.plugins.module_utils.errors import call_or_fail
from ansible_collections.gpuop.gates.plugins.module_utils.go_build import argument_spec, ensure


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = call_or_fail(module, ensure, module.params, check_mode=module.check_mode)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
