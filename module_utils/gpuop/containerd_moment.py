# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""One moment of the containerd walk, observed (module containerd_moment).

At a moment every sandbox daemon is asked what it loaded (containerd_runtimes: ``ctr``, ``crictl info``,
the probes) and ``config dump`` what a restart would load; containerd_merge predicts from the files on
disk now; step 4's check (``containerd config dump``, found on PATH) runs through each sandbox's wrapper,
and the second check asks each running daemon on its socket. The moment is appended to the walk's
observations, which containerd_views turns into runtime-views.md and its record.
"""

import os
import subprocess

from ansible_collections.gpuop.gates.plugins.module_utils.containerd_merge import analyze
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_runtimes import observe
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

# What a check script may answer: 0 loaded, 1 not loaded, 2 tool not found, 3 no answer. Anything else is a failure.
CHECK_CODES = (0, 1, 2, 3)
STEP4_CHECK = "check-runtime.sh"
LOADED_CHECK = "check-loaded-runtime.sh"

ARG_SPEC = {
    "moment": {"type": "str", "required": True},
    "daemons_read_files_now": {"type": "bool", "required": True},
    "daemons": {"type": "list", "elements": "dict", "required": True},
    "config": {"type": "path", "required": True},
    "cwd": {"type": "path", "default": "/"},
    "crictl": {"type": "path", "required": True},
    "wait_timeout": {"type": "float", "default": 30.0},
    "probe_handlers": {"type": "list", "elements": "str", "default": []},
    "step4_check": {"type": "path", "required": True},
    "loaded_check": {"type": "path", "required": True},
    "observations": {"type": "list", "elements": "dict", "default": []},
}


def run_check(argv, env=None, timeout=60):
    """``{'rc', 'output'}`` of a check script (stdout and stderr joined, trimmed); another exit code fails."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              env=env, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise GpuopError("%s could not run: %s" % (argv[0], err))
    if proc.returncode not in CHECK_CODES:
        raise GpuopError("%s exited %d (expected one of %s): %s"
                         % (argv[0], proc.returncode, list(CHECK_CODES), (proc.stdout + proc.stderr).strip()[-300:]))
    # As the command module returns them (each without its trailing newline), joined by a space.
    return {"rc": proc.returncode, "output": (proc.stdout.rstrip("\r\n") + " " + proc.stderr.rstrip("\r\n")).strip()}


def daemon_entry(daemon, view, dump, live):
    return {"name": daemon["name"], "major": daemon["major"], "version": daemon["version"],
            "loaded": view["loaded"], "after_restart": view["after_restart"], "probes": view["probes"],
            "checks": {STEP4_CHECK: dump, LOADED_CHECK: live}}


def moment_record(title, read_files_now, merge, daemons):
    return {"moment": title, "daemons_read_files_now": bool(read_files_now),
            "written": {"main_runtimes": merge["main_runtimes"], "dropin_runtimes": merge["dropin_runtimes"],
                        "files": [f["path"] for f in merge["files"]]},
            "predicted": merge["predicted"], "daemons": daemons}


def observe_moment(params, observe_daemon=observe, check=run_check, predict=analyze):
    """The observations so far, with this moment appended."""
    entries = []
    views = []
    for daemon in params["daemons"]:
        views.append(observe_daemon({
            "address": daemon["address"], "config": params["config"], "containerd": daemon["containerd"],
            "ctr": daemon["ctr"], "crictl": params["crictl"], "cwd": params["cwd"],
            "wait_timeout": params["wait_timeout"], "probe_handlers": params["probe_handlers"]}))
    merge = predict(params["config"], daemon_cwd=params["cwd"])
    step4 = os.path.isfile(params["step4_check"])
    for daemon, view in zip(params["daemons"], views):
        dump = None
        if step4:
            env = dict(os.environ, PATH=daemon["wrapper_dir"] + os.pathsep + os.environ.get("PATH", ""))
            dump = check([params["step4_check"]], env=env)
        live = check([params["loaded_check"], daemon["address"]])
        entries.append(daemon_entry(daemon, view, dump, live))
    return list(params["observations"]) + [moment_record(params["moment"], params["daemons_read_files_now"], merge, entries)]


__all__ = ["ARG_SPEC", "CHECK_CODES", "daemon_entry", "moment_record", "observe_moment", "run_check"]
