# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""out/runtime-views.md: written, loaded and after-restart per containerd version, predictions beside them.

Pure logic: the observations of a walk (plain data, as the containerd_sandbox role records them) in,
the report, the JSON record and the list of disagreements out. A disagreement is a failure of the
prediction (containerd_merge), never of the daemon: the daemon is what happened.

Each observation (one moment of the walk)::

    {"moment": "...", "daemons_read_files_now": bool,   # started or restarted just before this moment
     "written": {"main_runtimes": [...], "dropin_runtimes": [...], "files": [...]},
     "predicted": {"containerd_1": {...}, "containerd_2": {...}},   # containerd_merge on the files now
     "daemons": [{"name", "major", "version", "loaded": {...}, "after_restart": {...},
                  "probes": [...], "checks": {"check-runtime.sh": {"rc", "output"} | None,
                                              "check-loaded-runtime.sh": {"rc", "output"}}}]}
"""

import json
import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

# What changes from one walk to the next in the daemons' own words: a sandbox's random id, the time
# stamp of crictl's log line. The reports keep the words and drop these, so that the same files give
# the same report (a re-run, another root, a run killed and made again).
_SANDBOX_ID = re.compile(r"\b[0-9a-f]{64}\b")
_LOG_TIME = re.compile(r'time="[^"]*"\s*')

CHECK_MEANING = {
    "check-runtime.sh": {0: "found", 1: "not found", 2: "no containerd", 3: "dump failed"},
    "check-loaded-runtime.sh": {0: "loaded", 1: "not loaded", 2: "no crictl", 3: "no CRI answer"},
}


def stable(value):
    """``value`` (observations: dicts, lists, strings) with sandbox ids and log time stamps replaced."""
    if isinstance(value, str):
        return _LOG_TIME.sub("", _SANDBOX_ID.sub("<sandbox-id>", value))
    if isinstance(value, dict):
        return {key: stable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def _norm(text):
    """containerd 1.6 prints the CRI error with backticks; the prediction drops them (the facts doc)."""
    return " ".join((text or "").replace("`", "").split())


def code(text):
    """A Markdown code span that survives backticks inside (containerd 1.6 prints some)."""
    text = str(text)
    if "`" in text:
        return "`` %s ``" % text
    return "`%s`" % text


def _names(names):
    return ", ".join(names) if names else "none"


def expected_loaded(prediction):
    """What a daemon started on the predicted files has loaded: the runtimes, or none when CRI fails."""
    return sorted(prediction["runtimes"]) if prediction["cri_loads"] else []


def compare(observations):
    """Every prediction beside what the daemons did. Returns a list of rows (dicts), ``agree`` each."""
    rows = []
    at_start = None
    for obs in observations:
        if obs["daemons_read_files_now"]:
            at_start = obs["predicted"]
        for daemon in obs["daemons"]:
            key = "containerd_%d" % daemon["major"]
            if key not in obs["predicted"]:
                raise GpuopError("containerd_merge makes no prediction for containerd %s (major %d)"
                                 % (daemon["version"], daemon["major"]))
            now = obs["predicted"][key]
            after = daemon["after_restart"]
            rows.append({
                "moment": obs["moment"], "daemon": daemon["name"], "version": daemon["version"],
                "view": "after-restart (config dump)",
                "predicted": "%s; CRI %s" % (_names(now["runtimes"]), "loads" if now["cri_loads"] else "fails"),
                "observed": "%s; CRI %s" % (_names(after["runtimes"]),
                                            "loads" if after["cri_loads"] and after["daemon_starts"] else "fails"),
                "agree": (sorted(now["runtimes"]) == after["runtimes"]
                          and now["cri_loads"] == bool(after["cri_loads"] and after["daemon_starts"])),
            })
            if at_start is None:
                continue
            pred = at_start[key]
            loaded = daemon["loaded"]
            agree = expected_loaded(pred) == loaded["runtimes"] and pred["cri_loads"] == loaded["cri_loaded"]
            if agree and not pred["cri_loads"]:
                agree = bool(pred["error"]) and _norm(pred["error"]) in _norm(loaded["error"])
            rows.append({
                "moment": obs["moment"], "daemon": daemon["name"], "version": daemon["version"],
                "view": "loaded (daemon)",
                "predicted": "%s%s" % (_names(expected_loaded(pred)),
                                       "" if pred["cri_loads"] else "; CRI fails: %s" % code(pred["error"])),
                "observed": "%s%s" % (_names(loaded["runtimes"]),
                                      "" if loaded["cri_loaded"] else "; CRI failed: %s" % code(loaded["error"])),
                "agree": agree,
            })
    return rows


def _check(daemon, script):
    answer = (daemon.get("checks") or {}).get(script)
    if not answer:
        return "not installed yet"
    return "%d (%s)" % (answer["rc"], CHECK_MEANING[script].get(answer["rc"], "?"))


def _loaded_cell(loaded):
    if loaded["cri_loaded"]:
        return "**%s**" % _names(loaded["runtimes"])
    return "**no handler**: CRI plugin %s failed: %s" % (code(loaded["plugin"]), code(loaded["error"]))


def _after_cell(after):
    if not after["daemon_starts"]:
        return "daemon would not start: %s" % code(after["error"])
    if after["cri_loads"]:
        return _names(after["runtimes"])
    return "%s; CRI would fail (`default_runtime_name = \"%s\"` has no runtime)" % (
        _names(after["runtimes"]), after["default_runtime_name"])


def _probe_cell(daemon):
    cells = []
    for probe in daemon.get("probes") or []:
        if probe.get("skipped"):
            cells.append("%s: not asked (%s)" % (probe["handler"], probe["skipped"]))
        else:
            cells.append("%s: %s" % (probe["handler"], code(probe["message"])))
    return "<br>".join(cells) or "-"


def render(observations, config, cwd, rows):
    """The Markdown report (deterministic: no time, pid or path that changes between runs)."""
    observations = stable(observations)
    versions = []
    for obs in observations:
        for daemon in obs["daemons"]:
            if (daemon["name"], daemon["version"]) not in versions:
                versions.append((daemon["name"], daemon["version"]))
    lines = ["# Written, loaded, after restart: what real containerd daemons did", "",
             "Main config: `%s`; every daemon's working directory: `%s`." % (config, cwd), "",
             "- **written**: the runtimes the files on disk define (main file / drop-ins).",
             "- **loaded**: asked of the running daemon itself through its socket (CRI Status, `crictl info`; "
             "the CRI plugin's load error from `ctr plugins ls -d` when it failed).",
             "- **after restart**: `containerd --config <main> config dump`, which re-reads the files now and "
             "does not ask the daemon.",
             "- **predicted**: containerd_merge on the same files (what a daemon started on them loads).",
             "- **check-runtime.sh** (step 4, `config dump`) and **check-loaded-runtime.sh** (asks the daemon): "
             "exit code and meaning for the handler.",
             "- **RunPodSandbox**: the daemon's own answer to a pod sandbox with a handler it has not loaded.", ""]
    for name, version in versions:
        lines += ["## containerd %s (sandbox `%s`)" % (version, name), "",
                  "| moment | written | loaded (daemon) | after restart (config dump) | predicted (containerd_merge) "
                  "| check-runtime.sh | check-loaded-runtime.sh | RunPodSandbox |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for obs in observations:
            daemon = next((d for d in obs["daemons"] if d["name"] == name), None)
            if daemon is None:
                continue
            pred = obs["predicted"]["containerd_%d" % daemon["major"]]
            written = "main: %s; drop-ins: %s" % (_names(obs["written"]["main_runtimes"]),
                                                  _names(obs["written"]["dropin_runtimes"]))
            predicted = _names(pred["runtimes"]) + ("" if pred["cri_loads"] else "; CRI fails")
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                obs["moment"], written, _loaded_cell(daemon["loaded"]), _after_cell(daemon["after_restart"]),
                predicted, _check(daemon, "check-runtime.sh"), _check(daemon, "check-loaded-runtime.sh"),
                _probe_cell(daemon)))
        lines.append("")
    failed = [r for r in rows if not r["agree"]]
    lines += ["## containerd_merge's predictions against the daemons", "",
              "A disagreement is a failure of the prediction: the daemon is what happened.", "",
              "| containerd | moment | view | predicted | observed | result |",
              "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            row["version"], row["moment"], row["view"], row["predicted"], row["observed"],
            "agrees" if row["agree"] else "**PREDICTION FAILED**"))
    lines += ["", "%d of %d predictions agree with the daemons%s." % (
        len(rows) - len(failed), len(rows), "" if not failed else "; %d FAILED" % len(failed)), ""]
    return "\n".join(lines)


def record(observations, config, cwd, fingerprint, rows, loaded_runtimes):
    """The JSON record a later run reads back (sorted keys, trailing newline)."""
    return json.dumps({"config": config, "cwd": cwd, "fingerprint": fingerprint, "observations": stable(observations),
                       "agreement": rows, "loaded_before_restart": loaded_runtimes},
                      indent=2, sort_keys=True) + "\n"


def loaded_before_restart(observations, major):
    """The handlers the daemon of ``major`` had loaded after the drop-in appeared, before a restart:
    the observation that feeds LOADED_RUNTIMES. The last moment whose daemons did not re-read the files."""
    found = None
    for obs in observations:
        if obs["daemons_read_files_now"]:
            continue
        for daemon in obs["daemons"]:
            if daemon["major"] == major:
                found = daemon["loaded"]["runtimes"]
    return found
