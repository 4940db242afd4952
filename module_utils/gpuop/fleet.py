# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The doctor's fleet gate: each GPU node's containerd as written, predicted and loaded, and its verdicts.

Two halves, both pure apart from :func:`read_node` (which reads files and asks the daemon, on the node):

* :func:`read_node` runs on the node (module ``containerd_node_view``), read-only: the main file and every
  TOML file under the containerd folders, the containerd binary's version, what a restart of that version
  would load (module_utils containerd_merge), and what the running daemon loaded (``crictl info`` on its
  socket; containerd_runtimes.loaded). It never writes and never restarts.
* :func:`verdicts` joins one node's view with what the API says of that node (``status.runtimeHandlers``,
  the pods on it and their RuntimeClass handlers) into verdicts, each with its evidence. The doctor groups
  nodes that share a verdict (:func:`group`), so a line stays short at 1,000 nodes.

Verdicts (severity):

* ``cri-fails-on-restart`` (critical): a restart of this node's containerd version would not load the CRI plugin.
* ``runtime-dropped-on-restart`` (critical): a handler the daemon has loaded now would be gone after a restart.
* ``handler-not-loaded`` (critical): pods on the node need a handler (their RuntimeClass) the daemon has not loaded.
* ``restart-pending`` (warning): the files would load a handler the daemon has not loaded: written, not restarted.
* ``orphan-dropin`` (warning): a TOML file in a containerd folder that no import of this version loads.
* ``runtime-incomplete`` (warning): a runtime without ``runtime_type``: loaded, unable to start a sandbox.
* ``plugin-path-ignored`` (warning): a 2.x plugin path (``io.containerd.cri.v1.runtime``) under a 1.x daemon.
* ``dropin-minimal-on-1x`` (warning): under 1.x a drop-in declares the CRI section without the main file's
  keys, so it replaces them (sandbox image, CNI paths, runtimes...); ``dropin-self-sufficient`` (info) when it
  carries them all.
* ``node-unreadable`` (warning): the node could not be read (unreachable, no containerd).
"""

import os
import re

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge as merge
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_dropin import major_of, read_exact
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

SEVERITY = {
    "cri-fails-on-restart": "critical",
    "runtime-dropped-on-restart": "critical",
    "handler-not-loaded": "critical",
    "restart-pending": "warning",
    "orphan-dropin": "warning",
    "runtime-incomplete": "warning",
    "plugin-path-ignored": "warning",
    "dropin-minimal-on-1x": "warning",
    "node-unreadable": "warning",
    "dropin-self-sufficient": "info",
}
VERDICTS = tuple(SEVERITY)
MAX_FILES = 200


def argument_spec():
    """Options of the containerd_node_view module."""
    return dict(
        config=dict(type="path", default="/etc/containerd/config.toml"),
        folders=dict(type="list", elements="path", default=["/etc/containerd"]),
        containerd=dict(type="path", default="/usr/bin/containerd"),
        address=dict(type="path", default="/run/containerd/containerd.sock"),
        ctr=dict(type="path", default="/usr/bin/ctr"),
        crictl=dict(type="path", default="crictl"),
        daemon_cwd=dict(type="path", default="/"),
        wait_timeout=dict(type="float", default=10.0),
    )


# --------------------------------------------------------------------------------------------
# On the node (read-only)

def toml_files(folders):
    """Every ``*.toml`` under ``folders`` (recursive, sorted, at most MAX_FILES)."""
    found = []
    for folder in folders:
        for base, dirs, names in os.walk(folder):
            dirs.sort()
            found.extend(os.path.join(base, name) for name in sorted(names) if name.endswith(".toml"))
    return sorted(set(found))[:MAX_FILES]


def header_line(text, segments, prefix=False):
    """1-based line of the table header ``[a.b."c"]`` whose path is ``segments`` (with ``prefix``: or a sub-table of
    it); None when not found."""
    wanted = merge.table_path(segments)
    pattern = re.compile(r"^\s*\[\s*%s\s*%s" % (re.escape(wanted), r"[\].]" if prefix else r"\]"))
    for number, line in enumerate((text or "").splitlines(), 1):
        if pattern.match(line):
            return number
    return None


def read_node(params, version_of, loaded_of):
    """The node's view; ``version_of(containerd)`` and ``loaded_of(address, ctr, crictl, timeout)`` are injected."""
    config = os.path.abspath(params["config"])
    if read_exact(config) is None:
        raise GpuopError("%s: no such file: no containerd main config on this node" % config)
    version = version_of(params["containerd"])
    major = major_of(version)
    cwd = params.get("daemon_cwd") or "/"
    analysis = merge.analyze(config, cwd)
    chain = merge.load_chain(config, major, cwd, {})[0]
    files = []
    for path in toml_files(params.get("folders") or [os.path.dirname(config)]):
        text = read_exact(path)
        entry = {"path": path, "loaded": path in [d["path"] for d in chain], "error": None}
        try:
            described = merge.describe_file(path, merge.parse_toml(path, text))
        except GpuopError as exc:
            entry["error"] = str(exc)
            files.append(entry)
            continue
        entry.update(version=described["version"], plugin_ids=sorted(described["plugins"]),
                     runtimes=described["runtimes"], imports=described["imports"])
        entry["cri_keys"] = {pid: sorted(section) for pid, section in described["plugins"].items()
                             if pid in merge.CRI_IDS and isinstance(section, dict)}
        entry["incomplete"] = []
        for plugin_id in merge.CRI_IDS:
            section = described["plugins"].get(plugin_id)
            runtimes = ((section or {}).get("containerd") or {}).get("runtimes") if isinstance(section, dict) else None
            for name, body in sorted((runtimes or {}).items()):
                if isinstance(body, dict) and not body.get("runtime_type"):
                    entry["incomplete"].append({"runtime": name, "line": header_line(
                        text, ["plugins", plugin_id, "containerd", "runtimes", name])})
        entry["cri_line"] = (header_line(text, ["plugins", merge.CRI_ID_V2], True)
                             or header_line(text, ["plugins", merge.CRI_ID_V3], True))
        files.append(entry)
    pred = analysis["predicted"]["containerd_%d" % major]
    loaded = loaded_of(params["address"], params["ctr"], params["crictl"], params["wait_timeout"])
    return {
        "config": config,
        "containerd_version": version,
        "containerd_major": major,
        "load_order": [d["path"] for d in chain],
        "files": files,
        "predicted": {"runtimes": pred["runtimes"], "default_runtime_name": pred["default_runtime_name"],
                      "cri_loads": pred["cri_loads"], "error": pred["error"], "reason": pred["reason"]},
        "loaded": None if loaded is None else {
            "runtimes": sorted(loaded.get("runtimes") or []), "default_runtime_name": loaded.get("default_runtime_name"),
            "cri_loaded": bool(loaded.get("cri_loaded")), "error": loaded.get("error")},
        "warnings": analysis["warnings"],
    }


# --------------------------------------------------------------------------------------------
# Verdicts (pure)

def _v(code, text, command, **details):
    return {"verdict": code, "severity": SEVERITY[code], "text": text, "command": command, "details": details}


def verdicts(name, view, api_node=None, pods=(), handler_of=None):
    """One node's verdicts: ``view`` from :func:`read_node` (None: unreadable, ``error`` in ``api_node``?),
    ``api_node`` the Node object (or None), ``pods`` the live pods on it, ``handler_of`` RuntimeClass -> handler."""
    if not view or view.get("error"):
        why = (view or {}).get("error") or "not read"
        return [_v("node-unreadable", "the node's containerd could not be read: %s" % why,
                   "ansible %s -m ansible.builtin.ping" % name)]
    out = []
    crictl = "crictl --runtime-endpoint unix:///run/containerd/containerd.sock info | jq '.config.containerd.runtimes | keys'"
    dump = "containerd --config %s config dump" % view["config"]
    pred, loaded, major = view["predicted"], view.get("loaded"), view["containerd_major"]
    if not pred["cri_loads"]:
        out.append(_v("cri-fails-on-restart", "a restart of containerd %s would not load the CRI plugin: %s"
                      % (view["containerd_version"], pred["error"]), dump, reason=pred["reason"]))
    loaded_names = set((loaded or {}).get("runtimes") or []) if loaded and loaded.get("cri_loaded") else set()
    if pred["cri_loads"] and loaded_names:
        dropped = sorted(loaded_names - set(pred["runtimes"]))
        if dropped:
            out.append(_v("runtime-dropped-on-restart", "loaded now, gone after a restart of containerd %s: %s (%s)"
                          % (view["containerd_version"], ", ".join(dropped), pred["reason"]), dump, runtimes=dropped))
    if pred["cri_loads"] and loaded and loaded.get("cri_loaded"):
        pending = sorted(set(pred["runtimes"]) - loaded_names)
        if pending:
            out.append(_v("restart-pending", "the files load %s, the running daemon has not: containerd was not "
                          "restarted since they were written" % ", ".join(pending), crictl, runtimes=pending))
    needed = {}
    for pod in pods or ():
        rc = (pod.get("spec") or {}).get("runtimeClassName")
        handler = (handler_of or {}).get(rc)
        if handler:
            meta = pod.get("metadata") or {}
            needed.setdefault(handler, []).append("%s/%s" % (meta.get("namespace"), meta.get("name")))
    for handler in sorted(needed):
        if loaded is not None and handler not in loaded_names:
            # The pods are in the details, not the text: nodes with the same verdict make one line at any scale.
            out.append(_v("handler-not-loaded", "pods on the node need handler %s (their RuntimeClass), which the "
                          "daemon has not loaded" % handler, crictl, handler=handler, pods=sorted(needed[handler])))
    for entry in view["files"]:
        path = entry["path"]
        if path == view["config"]:
            continue
        if not entry["loaded"]:
            out.append(_v("orphan-dropin", "%s is imported by nothing containerd %s loads: it is never read"
                          % (path, view["containerd_version"]), "grep -n imports %s" % view["config"], file=path, line=1))
            continue
        if entry.get("error"):
            continue
        for item in entry.get("incomplete") or []:
            out.append(_v("runtime-incomplete", "%s: runtime %s has no runtime_type: it loads but cannot start a sandbox"
                          % (path, item["runtime"]), "grep -n -A3 'runtimes.%s' %s" % (item["runtime"], path),
                          file=path, line=item["line"], runtime=item["runtime"]))
        if major == 1 and merge.CRI_ID_V3 in entry.get("plugin_ids", []):
            out.append(_v("plugin-path-ignored", '%s: plugins."%s" is a containerd 2.x path; containerd %s ignores it'
                          % (path, merge.CRI_ID_V3, view["containerd_version"]), "grep -n '%s' %s" % (merge.CRI_ID_V3, path),
                          file=path, line=entry.get("cri_line")))
        if major == 1 and merge.CRI_ID_V2 in (entry.get("cri_keys") or {}):
            main = next((f for f in view["files"] if f["path"] == view["config"]), {})
            main_keys = set((main.get("cri_keys") or {}).get(merge.CRI_ID_V2) or [])
            missing = sorted(main_keys - set(entry["cri_keys"][merge.CRI_ID_V2]))
            if missing:
                text = ('%s declares plugins."%s" without %s of the main file: containerd %s replaces the whole section '
                        "with this file's" % (path, merge.CRI_ID_V2, ", ".join(missing), view["containerd_version"]))
                out.append(_v("dropin-minimal-on-1x", text, dump, file=path, line=entry.get("cri_line"), missing=missing))
            elif main_keys:
                out.append(_v("dropin-self-sufficient", '%s carries the CRI section whole (containerd 1.x replaces the '
                              "section per file)" % path, dump, file=path, line=entry.get("cri_line")))
    return out


def group(per_node):
    """``{node: [verdict, ...]}`` -> one entry per (verdict code, text with the node's name taken out): nodes
    sharing it, sorted, worst first."""
    groups = {}
    for node in sorted(per_node):
        for item in per_node[node]:
            # A node's own name (as a whole word: an ssh error, an ansible command) stands as <node> in the key.
            word = re.compile(r"(?<![\w.-])%s(?![\w.-])" % re.escape(node))
            key = (item["verdict"], word.sub("<node>", item["text"]), word.sub("<node>", item["command"]))
            entry = groups.setdefault(key, dict(item, text=key[1], command=key[2], nodes=[], details=dict(item["details"])))
            entry["nodes"].append(node)
            if entry["details"] is not item["details"] and "pods" in item["details"]:
                entry["details"]["pods"] = sorted(set(entry["details"].get("pods", [])) | set(item["details"]["pods"]))
    rank = {"critical": 0, "warning": 1, "info": 2}
    return sorted(groups.values(), key=lambda g: (rank[g["severity"]], g["verdict"], g["text"], g["nodes"]))
