# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What the incident showed, one line per step with its view, from the outputs themselves.

site.yml's last task prints these lines (lookup ``gpuop.gates.incident_summary``). Every value comes from
an output file of the run, never from a variable: the summary says what the files say. A file that is
missing (a run limited by tags) gives ``?`` or ``not recorded`` in its line, never an error.

``summary_lines(texts)`` takes the texts of the outputs by file name (``None`` for a missing one) and
is pure; ``OUTPUTS`` names the files it reads.
"""

import json
import re

OUTPUTS = ("merge.txt", "slots.txt", "rollout.txt", "runtime-views.json", "unscheduled.txt", "node-gpu.txt")

# KEY=value lines of merge.txt, slots.txt and rollout.txt (the seed's format); a later file wins a key.
_KV_RE = re.compile(r"(?m)^([A-Z_]+)=(.*)$")
_KV_FILES = ("merge.txt", "slots.txt", "rollout.txt")


def key_values(texts):
    values = {}
    for name in _KV_FILES:
        for key, value in _KV_RE.findall(texts.get(name) or ""):
            values[key] = value
    return values


def after_restart(views_text):
    """The daemons of the last observation in runtime-views.json: [(version, loaded runtimes or None, error)]."""
    try:
        views = json.loads(views_text or "{}")
    except ValueError:
        return []
    observations = views.get("observations") if isinstance(views, dict) else None
    if not observations or not isinstance(observations, list) or not isinstance(observations[-1], dict):
        return []
    daemons = []
    for daemon in observations[-1].get("daemons") or []:
        loaded = (daemon or {}).get("loaded") or {}
        daemons.append((loaded.get("containerd_version"),
                        list(loaded.get("runtimes") or []) if loaded.get("cri_loaded") else None,
                        loaded.get("error")))
    return daemons


def summary_lines(texts):
    kv = key_values(texts)

    def get(key):
        return kv.get(key, "?")

    loaded_before = kv.get("LOADED_RUNTIMES", "?") or "not observed"
    line4 = "%s before the restart" % loaded_before
    for version, runtimes, error in after_restart(texts.get("runtime-views.json")):
        line4 += "; after it containerd %s: %s" % (version, ",".join(runtimes) if runtimes is not None else "CRI plugin failed: %s" % error)
    unscheduled = ": ".join((texts.get("unscheduled.txt") or "").splitlines()).strip() or "not recorded"
    advertised = ", ".join(re.sub(r"\s+", "=", line) for line in (texts.get("node-gpu.txt") or "").splitlines() if line) or "none"
    return [
        "1-2 written:   main file runtimes %s; drop-in runtimes %s" % (get("MAIN_RUNTIMES"), get("DROPIN_RUNTIMES")),
        "3   computed:  same runtimes table in both files: %s (%s)" % (get("CONFLICT"), kv.get("CONFLICT_TABLE", "")),
        "4   loaded:    %s" % line4,
        "5   scheduled: %s" % unscheduled,
        "6   scheduled: advertised nvidia.com/gpu when the pod ran: %s" % advertised,
        "7   computed:  %s GPUs x %s replicas, memory guaranteed per slot %s GiB of %s (isolation %s); scheduled: the node advertises %s"
        % (get("PHYSICAL_GPUS"), get("REPLICAS"), get("VRAM_GUARANTEED_PER_SLOT_GIB"), get("VRAM_PER_GPU_GIB"), get("ISOLATION"),
           get("ADVERTISED")),
        "8   scheduled: rollout updated %s of %s, blocker %s" % (get("UPDATED"), get("DESIRED"), get("BLOCKER")),
    ]
