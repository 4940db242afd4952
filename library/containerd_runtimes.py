#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module containerd_runtimes: thin shell over module_utils/gpuop/containerd_runtimes.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_runtimes
short_description: Ask a running containerd which runtime handlers it loaded, and what a restart would load
description:
  - The B(loaded) view (O(address)) asks the running daemon itself through its socket, C(ctr plugins ls)
    for the CRI plugin's state, then CRI Status (C(crictl info)) for the handlers, the keys of
    C(.config.containerd.runtimes). When the CRI plugin failed to load, the view has no handler and
    carries the plugin's load error (C(ctr plugins ls -d)) and crictl's own answer.
  - The B(after-restart) view (O(config)) runs C(containerd --config F config dump), which re-reads the
    files on disk now (main file and imports); it never asks the daemon.
  - Each view says which view it is and which containerd version gave it (the daemon's own version for
    C(loaded), the binary's for C(after-restart)).
  - O(probe_handlers) asks the daemon to start a pod sandbox (CRI RunPodSandbox) with each handler the
    loaded view lacks, and returns containerd's own refusal (for example
    C(no runtime for "nvidia" is configured)). A loaded handler is never probed.
  - Waits (socket up, CRI plugin loaded or failed, CRI Status answering) are bounded by
    O(wait_timeout) and poll every 0.2 s.
  - O(require) makes the answer a gate. The module fails, on one line, when the daemon's CRI plugin did not load
    that runtime. The failed result still carries every view (RV(loaded) too), so a registered result tells
    what the daemon loaded.
version_added: "0.1.0"
author:
  - gpuop contributors (!UNKNOWN)
requirements:
  - Python 3.8 or later on the host where it runs, nothing else (the config dump, TOML, is read with the standard
    library's tomllib from 3.11 on, else with gpuop's own reader, module_utils toml_compat).
options:
  address:
    description:
      - Socket of the running daemon (its C(--address)). Gives the C(loaded) view.
    type: path
  config:
    description:
      - Main config file for C(containerd config dump). Gives the C(after-restart) view.
    type: path
  containerd:
    description: The containerd binary used for C(config dump) and its version.
    type: path
    default: /usr/bin/containerd
  ctr:
    description: The ctr binary used to ask the daemon (version, plugins, placeholder image import).
    type: path
    default: /usr/bin/ctr
  crictl:
    description: The crictl binary (CRI Status and RunPodSandbox); a bare name is looked up on PATH.
    type: path
    default: crictl
  cwd:
    description:
      - Working directory of C(config dump). containerd 1.x globs a relative import against it, so give
        the daemon's own working directory. Must be absolute.
    type: path
    default: /
  wait_timeout:
    description: Seconds to wait for the daemon's socket and CRI plugin state.
    type: float
    default: 30.0
  probe_handlers:
    description:
      - Handlers to ask RunPodSandbox for when the loaded view lacks them (needs O(address)). On
        containerd 1.x an empty placeholder image named like the daemon's sandbox image is imported
        into its private store first (1.x looks the image up before the runtime). Skipped in check mode.
    type: list
    elements: str
    default: []
  require:
    description:
      - A runtime (handler) name the running daemon must have loaded (needs O(address)). When its CRI plugin
        did not load, or loaded without it, the module fails with
        C(<subject> containerd <version> has loaded <runtimes, or no runtime>, not <name>), followed by
        the CRI plugin's error in parentheses when it reported one. Unset, nothing is required.
    type: str
  subject:
    description:
      - 'Words put before the failure message of O(require), naming what was asked, for example
        V(gpu-node-a: after the restart) (a module does not know the inventory''s name of its host).'
    type: str
attributes:
  check_mode:
    support: full
    description: Observations only read; probes are skipped; O(require) still fails.
  diff_mode:
    support: none
    description: Returns no diff; it changes nothing to show.
notes:
  - Reports C(changed=false) always; a probe leaves nothing behind but the placeholder image in the
    daemon's own store.
seealso:
  - module: gpuop.gates.containerd_merge
"""

EXAMPLES = r"""
- name: What the lab's sandbox daemon loaded, and what a restart would load
  gpuop.gates.containerd_runtimes:
    address: /srv/lab/var/containerd-1/containerd.sock
    config: /srv/lab/etc/containerd/config.toml
    crictl: /root/.cache/gpuop/0123456789abcdef/bin/crictl
  register: views

- name: Fail unless the restarted daemon loaded nvidia (the failure names the node and what was loaded)
  gpuop.gates.containerd_runtimes:
    address: /run/containerd/containerd.sock
    require: nvidia
    subject: "{{ inventory_hostname }}: after the restart"
  register: restarted

- name: Containerd's own refusal of a pod with the nvidia handler
  gpuop.gates.containerd_runtimes:
    address: /srv/lab/var/containerd-2/containerd.sock
    ctr: /root/.cache/gpuop/0123456789abcdef/bin/ctr
    crictl: /root/.cache/gpuop/0123456789abcdef/bin/crictl
    probe_handlers:
      - nvidia
"""

RETURN = r"""
msg:
  description:
    - One line per view with its version, handlers, and the CRI error when there is one; when O(require)
      fails, the one line that names what was loaded instead.
  returned: always
  type: str
  sample: "gpu-node-a: after the restart containerd 2.4.2 has loaded runc, not nvidia"
loaded:
  description:
    - The C(loaded) view, or null without O(address); the failed result of O(require) carries it too. Keys
      C(view) (C(loaded)), C(containerd_version) (the daemon's), C(address), C(source) (the command that
      answered), C(cri_loaded), C(runtimes) (sorted handler names), C(default_runtime_name), C(error) (the CRI
      plugin's load error), C(plugin) (the failing plugin, C(type id)), C(crictl_error) (crictl's answer when CRI
      failed).
  returned: always
  type: dict
after_restart:
  description:
    - The C(after-restart) view, or null without O(config). Keys C(view) (C(after-restart)),
      C(containerd_version) (the binary's), C(source), C(cwd), C(cri_plugin) (the dump's plugin path that
      holds the runtimes), C(config_version) (the dump's C(version)), C(runtimes), C(default_runtime_name),
      C(cri_loads), C(daemon_starts) (false when C(config dump) itself refused the files), C(error).
  returned: always
  type: dict
probes:
  description:
    - One per O(probe_handlers) entry, C(handler), C(rpc) (C(RunPodSandbox)), C(message) (containerd's
      refusal, verbatim), C(placeholder_image) (the image imported first, or null), C(skipped) (why no
      probe was made, or null).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_runtimes import (
    argument_spec, handler_summary, missing_runtime, observe)
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = dict(module.params)
    if module.check_mode:
        params["probe_handlers"] = []
    error = None
    result = {}
    try:
        result = observe(params)
    except GpuopError as exc:
        error = exc.msg
    if error is not None:
        module.fail_json(msg=error)
    failure = missing_runtime(result["loaded"], params["require"], params["subject"])
    if failure is not None:
        # The views stay in the result, so a registered result still tells what the daemon loaded.
        module.fail_json(changed=False, msg=failure, **result)
    msg = "; ".join(t for t in (handler_summary(result["loaded"]), handler_summary(result["after_restart"])) if t)
    module.exit_json(changed=False, msg=msg, **result)


if __name__ == "__main__":
    main()
