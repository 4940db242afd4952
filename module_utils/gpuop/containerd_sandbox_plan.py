# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Which containerd sandboxes run here, and whether the recorded walk still holds (module containerd_sandbox_plan).

- One sandbox per containerd major version: each candidate binary is asked its version
  (``containerd --version``); two of the same major are refused.
- Each sandbox gets a wrapper ``<var_dir>/containerd-<major>/bin/containerd`` that runs that binary on the
  lab's main file from the daemon's working directory: put first on PATH, step 4's check script
  (``containerd config dump``) asks that version.
- The walk's inputs are fingerprinted (the root named ``@ROOT@``, so that the same inputs under another root
  give the same record). When the record of the last walk has that fingerprint and the report exists, the
  walk is not made again; its recorded observation stays in use.
"""

import hashlib
import json
import os
import shlex

from ansible_collections.gpuop.gates.plugins.module_utils.containerd_runtimes import binary_version
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file, read_text

ARG_SPEC = {
    "candidates": {"type": "list", "elements": "dict", "required": True},
    "var_dir": {"type": "path", "required": True},
    "config": {"type": "path", "required": True},
    "cwd": {"type": "path", "default": "/"},
    "enabled": {"type": "bool", "default": True},
    "disabled_reason": {"type": "str", "default": ""},
    "root": {"type": "path", "required": True},
    "fingerprint_inputs": {"type": "raw", "default": {}},
    "record_dest": {"type": "path", "required": True},
    "report_dest": {"type": "path", "required": True},
}


def sandbox(var_dir, major, version, containerd, ctr):
    name = "containerd-%d" % major
    folder = os.path.join(var_dir, name)
    return {"name": name, "major": major, "version": version, "containerd": containerd, "ctr": ctr,
            "address": os.path.join(folder, "containerd.sock"), "log": os.path.join(folder, "containerd.log"),
            "wrapper_dir": os.path.join(folder, "bin")}


def name_sandboxes(var_dir, found):
    """``found``: [(containerd, ctr, version)] -> one sandbox per major version, in the given order."""
    daemons = []
    for containerd, ctr, version in found:
        major_text = version.split(".")[0]
        if not major_text.isdigit():
            raise GpuopError("%s reports version %r: no major version number" % (containerd, version))
        daemons.append(sandbox(var_dir, int(major_text), version, containerd, ctr))
    names = [d["name"] for d in daemons]
    if len(set(names)) != len(names):
        raise GpuopError("Two containerd binaries have the same major version (%s: %s); set "
                         "containerd_sandbox_system_containerd to a 1.x binary"
                         % ([d["containerd"] for d in daemons], [d["version"] for d in daemons]))
    return daemons


def wrapper_script(daemon, cwd, config):
    return ("#!/bin/sh\n"
            "# containerd as sandbox %s runs it: the lab's main file, from the daemon's working directory.\n"
            "# Put first on PATH for step 4's check-runtime.sh (which calls `containerd config dump`).\n"
            "# Written by the containerd_sandbox role; edits are overwritten.\n"
            "cd %s || exit 3\n"
            "exec %s --config %s \"$@\"\n"
            % (daemon["name"], shlex.quote(cwd), shlex.quote(daemon["containerd"]), shlex.quote(config)))


def fingerprint(inputs, root):
    """sha256 of the inputs as JSON, the root written @ROOT@ (the same inputs under another root match)."""
    text = json.dumps(inputs)
    if root:
        text = text.replace(root, "@ROOT@")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_record(path):
    text = read_text(path)
    if text is None:
        return {}
    try:
        record = json.loads(text)
    except ValueError as err:
        raise GpuopError("%s is not the JSON record of a walk (%s): remove it to walk again" % (path, err))
    return record if isinstance(record, dict) else {}


def decide(enabled, check_mode, report_exists, record, print_):
    """Whether the walk must be made: sandboxes can run, not check mode, and no matching record + report."""
    matches = record.get("fingerprint", "") == print_
    return {"walk": bool(enabled and not check_mode and not (report_exists and matches)), "record_matches": matches}


def plan(params, check_mode=False, version_of=binary_version):
    """The module's result: daemons, their wrappers written, and the walk decision."""
    daemons, changed = [], False
    if params["enabled"]:
        found = []
        for candidate in params["candidates"]:
            if not isinstance(candidate, dict) or not candidate.get("containerd") or not candidate.get("ctr"):
                raise GpuopError("candidates: %r needs containerd and ctr" % (candidate,))
            found.append((candidate["containerd"], candidate["ctr"], version_of(candidate["containerd"])))
        daemons = name_sandboxes(params["var_dir"], found)
        if not check_mode and not os.path.isdir(params["var_dir"]):
            os.makedirs(params["var_dir"], 0o700)
        for daemon in daemons:
            if not check_mode and not os.path.isdir(daemon["wrapper_dir"]):
                os.makedirs(daemon["wrapper_dir"], 0o700)
            wrote, _diff = ensure_file(os.path.join(daemon["wrapper_dir"], "containerd"),
                                       wrapper_script(daemon, params["cwd"], params["config"]), 0o755, check_mode)
            changed = changed or wrote
    inputs = params["fingerprint_inputs"]
    if isinstance(inputs, dict) and "daemons" in inputs and inputs["daemons"] is None:
        inputs = dict(inputs, daemons=[d["version"] for d in daemons])
    print_ = fingerprint(inputs, params["root"])
    record = read_record(params["record_dest"])
    decision = decide(params["enabled"], check_mode, os.path.isfile(params["report_dest"]), record, print_)
    return dict(decision, changed=changed, daemons=daemons, fingerprint=print_, recorded=record,
                enabled=params["enabled"], disabled_reason=params["disabled_reason"])


__all__ = ["ARG_SPEC", "decide", "fingerprint", "name_sandboxes", "plan", "wrapper_script"]
