# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Add one runtime (nvidia) to a node's containerd through a drop-in, and gate the restart on a prediction.

Pure logic over the node's files and binaries (no AnsibleModule); failures raise :class:`GpuopError`.
It runs on the node itself with the standard library only (Python 3.8 and later: TOML is read with
tomllib or gpuop's own reader, and written with module_utils toml_write).

What it writes, and nothing else:

* the drop-in (``/etc/containerd/conf.d/99-nvidia.toml``). Under containerd 2.x it is minimal: one
  runtime table, deep-merged by 2.x over the rest. Under 1.x a file that declares the CRI section
  replaces the whole section, so the drop-in is self-sufficient: a copy of the CRI section that 1.x
  loads from the node's other files, plus the runtime (what NVIDIA's toolkit does for 1.x).
* in the main file, when no import names the drop-in, one import of the drop-in's own path (never a
  glob, which would load other files too). Every other byte of the main file stays.

Before writing, it predicts (module_utils containerd_merge, with the files as they would be written)
what the node's containerd version loads after a restart, and refuses when the CRI plugin would
fail, when the runtime would not load, or when a runtime in use would vanish: the node's default,
one the daemon has loaded now, or one a RuntimeClass names.
"""

import os
import re
import stat

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge as merge
from ansible_collections.gpuop.gates.plugins.module_utils import toml_write
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_runtimes import binary_version, loaded
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import atomic_write
from ansible_collections.gpuop.gates.plugins.module_utils.names import RUNTIME_NAME_RE

HEADER_MINIMAL = ("Written by gpuop.gates (nvidia_runtime) for containerd {version}: the {name} runtime only.\n"
                  "containerd 2.x deep-merges this file over the main config; do not edit, re-run the role.")
HEADER_COPY = ("Written by gpuop.gates (nvidia_runtime) for containerd {version}: containerd 1.x replaces the\n"
               "whole CRI section with the last file that declares it, so this file carries a copy of the\n"
               "section it loads from {source}, plus the {name} runtime. Do not edit: change\n"
               "{source} and re-run the role.")
_IMPORTS_LINE = re.compile(r"^(\s*)imports\s*=")
_VERSION_LINE = re.compile(r"^\s*version\s*=")
_TABLE_LINE = re.compile(r"^\s*\[")


def argument_spec():
    """Options of the containerd_dropin module."""
    return dict(
        config=dict(type="path", default="/etc/containerd/config.toml"),
        dropin=dict(type="path", default="/etc/containerd/conf.d/99-nvidia.toml"),
        runtime_name=dict(type="str", default="nvidia"),
        runtime_type=dict(type="str", default="io.containerd.runc.v2"),
        binary_name=dict(type="path", default="/usr/bin/nvidia-container-runtime"),
        containerd=dict(type="path", default="/usr/bin/containerd"),
        address=dict(type="path", default="/run/containerd/containerd.sock"),
        ctr=dict(type="path", default="/usr/bin/ctr"),
        crictl=dict(type="path", default="crictl"),
        handlers_in_use=dict(type="list", elements="str", default=[]),
        force=dict(type="bool", default=False),
        daemon_cwd=dict(type="path", default="/"),
        wait_timeout=dict(type="float", default=10.0),
    )


# --------------------------------------------------------------------------------------------
# Reading the node
# --------------------------------------------------------------------------------------------

def read_exact(path):
    """The file's text with its line endings as they are, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GpuopError("%s: cannot read: %s" % (path, exc.strerror or exc))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GpuopError("%s: not UTF-8 (byte %d): not a containerd config" % (path, exc.start))


def major_of(version):
    """``1.6.20~ds1`` -> 1, ``2.4.2+unknown`` -> 2; another major is refused."""
    match = re.match(r"^(\d+)\.", version or "")
    if not match or int(match.group(1)) not in (1, 2):
        raise GpuopError("containerd %r: only containerd 1.x and 2.x are known" % version)
    return int(match.group(1))


def loaded_now(address, ctr, crictl, wait_timeout):
    """What the running daemon has loaded (crictl info), or None when no daemon listens on ``address``."""
    if not os.path.exists(address):
        return None
    try:
        view = loaded(address, ctr, crictl, wait_timeout)
    except GpuopError as exc:
        return {"runtimes": [], "default_runtime_name": None, "cri_loaded": False, "error": str(exc),
                "containerd_version": None}
    return view


# --------------------------------------------------------------------------------------------
# The main file's one import line
# --------------------------------------------------------------------------------------------

def add_import(path, text, entry):
    """``text`` (the main file) with ``entry`` added to its ``imports``, every other byte kept.

    An existing one-line ``imports = [...]`` gets the entry before its ``]``; a multi-line array gets
    one line before its closing ``]``; a file without ``imports`` gets ``imports = ["entry"]`` after
    its ``version`` line (or before its first table). The result is read back: unless it equals the
    original with exactly that entry appended, nothing is written and the error says what to add.
    """
    before = merge.parse_toml(path, text)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(True)
    candidates = []
    start = _top_level_imports(lines)
    if start is None:
        insert_at = next((i + 1 for i, line in enumerate(lines) if _VERSION_LINE.match(line)), None)
        if insert_at is None:
            insert_at = next((i for i, line in enumerate(lines) if _TABLE_LINE.match(line)), len(lines))
        new = 'imports = [%s]%s' % (toml_write.string(entry), newline)
        head = lines[:insert_at]
        if head and not head[-1].endswith(("\n", "\r")):
            head = head[:-1] + [head[-1] + newline]
        candidates.append("".join(head + [new] + lines[insert_at:]))
    else:
        end = _array_end(lines, start)
        if end == start:
            # Before the array's closing "]": the last "]" of the line unless a comment holds one.
            line = lines[start]
            sep = ", " if before.get("imports") else ""
            for close in [i for i, char in enumerate(line) if char == "]"][::-1]:
                # After the last element (the spaces before "]" stay after the new one); in "[ ]", before "]".
                at = len(line[:close].rstrip()) if sep else close
                candidates.append("".join(lines[:start] + [line[:at] + sep + toml_write.string(entry) + line[at:]]
                                          + lines[start + 1:]))
        elif end is not None and lines[end].lstrip().startswith("]"):
            indent = re.match(r"^\s*", lines[end - 1]).group(0) if end - 1 > start else "  "
            new = "%s%s,%s" % (indent, toml_write.string(entry), newline)
            candidates.append("".join(lines[:end] + [new] + lines[end:]))
            previous = lines[end - 1]
            body = previous.rstrip("\r\n")
            if end - 1 > start and not body.rstrip().endswith((",", "[")):
                ending = previous[len(body):]
                candidates.append("".join(lines[:end - 1] + [body.rstrip() + "," + ending, new] + lines[end:]))
    wanted = dict(before)
    wanted["imports"] = list(before.get("imports", [])) + [entry]
    for candidate in candidates:
        try:
            if merge.parse_toml(path, candidate) == wanted:
                return candidate
        except GpuopError:
            continue
    raise GpuopError("%s: cannot add the import of %s in place without changing anything else: add %s to its "
                     "imports by hand, then re-run" % (path, entry, toml_write.string(entry)))


def _top_level_imports(lines):
    for index, line in enumerate(lines):
        if _TABLE_LINE.match(line):
            return None
        if _IMPORTS_LINE.match(line):
            return index
    return None


def _array_end(lines, start):
    """Index of the line that closes the ``imports`` array begun at ``start`` (read with the TOML reader)."""
    for end in range(start, min(len(lines), start + 200)):
        try:
            merge.tomllib.loads("".join(lines[start:end + 1]))
            return end
        except merge.tomllib.TOMLDecodeError:
            continue
    return None


# --------------------------------------------------------------------------------------------
# The drop-in
# --------------------------------------------------------------------------------------------

def runtime_table(params, systemd_cgroup):
    options = {"BinaryName": params["binary_name"]}
    if systemd_cgroup:
        options["SystemdCgroup"] = True
    return {"runtime_type": params["runtime_type"], "options": options}


def render_minimal(params, main_version, systemd_cgroup, version):
    """containerd 2.x: the runtime's table only, at the plugin path of the main file's config version."""
    plugin = merge.CRI_ID_V3 if main_version >= 3 else merge.CRI_ID_V2
    document = {"version": max(main_version, 2),
                "plugins": {plugin: {"containerd": {"runtimes": {
                    params["runtime_name"]: runtime_table(params, systemd_cgroup)}}}}}
    return toml_write.dumps(document, HEADER_MINIMAL.format(version=version, name=params["runtime_name"]))


def render_copy(params, section, source, systemd_cgroup, version):
    """containerd 1.x: the CRI section it loads now (``section`` from ``source``), plus the runtime."""
    import copy
    section = copy.deepcopy(section) if isinstance(section, dict) else {}
    containerd = section.setdefault("containerd", {})
    if not isinstance(containerd, dict):
        raise GpuopError("%s: plugins.\"%s\".containerd must be a table" % (source, merge.CRI_ID_V2))
    runtimes = containerd.get("runtimes")
    if runtimes is None:
        # A runtimes table replaces 1.x's built-in one: keep the built-in runc that the node runs on now.
        runtimes = containerd["runtimes"] = {merge.DEFAULT_RUNTIME_NAME: {"runtime_type": merge.DEFAULT_RUNTIME_TYPE}}
    runtimes[params["runtime_name"]] = runtime_table(params, systemd_cgroup)
    document = {"version": 2, "plugins": {merge.CRI_ID_V2: section}}
    return toml_write.dumps(document, HEADER_COPY.format(version=version, name=params["runtime_name"], source=source))


def cri_owner_1x(files):
    """(section, path) of the last file 1.x loads that declares the CRI section, or (None, None)."""
    section, source = None, None
    for described in files:
        if merge.CRI_ID_V2 in described["plugins"]:
            section, source = described["plugins"][merge.CRI_ID_V2], described["path"]
    return section, source


# --------------------------------------------------------------------------------------------
# The plan: what to write, what a restart would load, and whether it may restart
# --------------------------------------------------------------------------------------------

def _prediction_view(analysis, major, files):
    pred = analysis["predicted"]["containerd_%d" % major]
    owners = [d["path"] for d in files if merge.CRI_ID_V2 in d["plugins"] or merge.CRI_ID_V3 in d["plugins"]]
    if major == 1:
        winner = cri_owner_1x(files)[1]
    else:
        winner = None
    return {"containerd_major": major, "runtimes": pred["runtimes"], "default_runtime_name": pred["default_runtime_name"],
            "cri_loads": pred["cri_loads"], "error": pred["error"], "loaded_files": pred["loaded_files"],
            "cri_table_files": owners, "cri_table_winner": winner, "reason": pred["reason"],
            "runtime_details": pred["runtime_details"]}


def plan(params, version=None, loaded_view=None):
    """Everything the module decides, from the node's files; writes nothing.

    ``version`` is the containerd binary's version, ``loaded_view`` what the running daemon loaded
    (None: no daemon). Returns a dict with ``main`` and ``dropin`` (path, before, after), the
    ``predicted`` views now and after, and ``refusals``.
    """
    name = params["runtime_name"]
    if not RUNTIME_NAME_RE.fullmatch(name or ""):
        raise GpuopError("runtime_name: %r is not a runtime handler name (letters, digits, '.', '_', '-')" % name)
    for handler in params.get("handlers_in_use") or []:
        if not RUNTIME_NAME_RE.fullmatch(handler or ""):
            raise GpuopError("handlers_in_use: %r is not a runtime handler name" % (handler,))
    config = os.path.abspath(params["config"])
    dropin = os.path.abspath(params["dropin"])
    if dropin == config:
        raise GpuopError("dropin must not be the main file %s" % config)
    major = major_of(version)
    cwd = params.get("daemon_cwd") or "/"
    main_text = read_exact(config)
    if main_text is None:
        raise GpuopError("%s: no such file: the node's containerd main config is where containerd --config reads it"
                         % config)
    main_doc = merge.parse_toml(config, main_text)
    main_version = merge.describe_file(config, main_doc)["version"]
    dropin_before = read_exact(dropin)

    # Now, as the files are: the view a restart without gpuop would load.
    now = merge.analyze(config, cwd)
    now_files = merge.load_chain(config, major, cwd, {})[0]
    now_view = _prediction_view(now, major, now_files)

    # Without the drop-in (as if gpuop had never written it): what the drop-in is derived from. An empty
    # file stands in for it, so an import that names it keeps resolving and the file adds nothing.
    without = {dropin: ""}
    order, _warnings, error = merge.load_chain(config, major, cwd, {}, without)
    if error:
        raise GpuopError("containerd %s would not start with %s as it is: %s" % (version, config, error))
    base = merge.analyze(config, cwd, overlay=without)["predicted"]["containerd_%d" % major]
    default = base["runtime_details"].get(base["default_runtime_name"] or "", {})
    systemd_cgroup = bool(default.get("systemd_cgroup"))

    # The main file: imported as it is, or with one import of the drop-in's own path.
    probe = merge.load_chain(config, major, cwd, {}, {dropin: 'version = 2\n'})[0]
    main_after = main_text
    if dropin not in [d["path"] for d in probe]:
        main_after = add_import(config, main_text, dropin)

    if major == 1:
        section, source = cri_owner_1x(order)
        dropin_after = render_copy(params, section, source or "containerd's built-in defaults", systemd_cgroup, version)
    else:
        dropin_after = render_minimal(params, main_version, systemd_cgroup, version)

    overlay = {config: main_after, dropin: dropin_after}
    after = merge.analyze(config, cwd, overlay=overlay)
    after_files = merge.load_chain(config, major, cwd, {}, overlay)[0]
    after_view = _prediction_view(after, major, after_files)
    refusals = gate(name, after_view, now_view, loaded_view, params.get("handlers_in_use") or [], version, dropin)
    return {
        "config": config, "containerd_version": version, "containerd_major": major,
        "main": {"path": config, "before": main_text, "after": main_after},
        "dropin": {"path": dropin, "before": dropin_before, "after": dropin_after},
        "predicted_now": now_view, "predicted": after_view, "refusals": refusals,
        "warnings": after["warnings"],
    }


def gate(name, after, now, loaded_view, handlers_in_use, version, dropin):
    """Reasons a restart with the new files must not happen (empty: it may)."""
    where = after["cri_table_winner"] or ", ".join(after["cri_table_files"]) or "no file (built-in defaults)"
    table = 'plugins."%s"' % (merge.CRI_ID_V2 if after["containerd_major"] == 1 else "<CRI>")
    reasons = []
    if not after["cri_loads"]:
        reasons.append("the CRI plugin would fail under containerd %s (%s wins %s): %s"
                       % (version, where, table, after["error"]))
    elif name not in after["runtimes"]:
        if after["cri_table_winner"] and after["cri_table_winner"] != dropin:
            reasons.append("the %s runtime would not load under containerd %s: %s is loaded after %s and wins %s "
                           "alone (containerd 1.x replaces the whole section)"
                           % (name, version, after["cri_table_winner"], dropin, table))
        else:
            reasons.append("the %s runtime would not load under containerd %s (%s)" % (name, version, after["reason"]))
    in_use = {}
    if loaded_view and loaded_view.get("cri_loaded"):
        for handler in loaded_view.get("runtimes") or []:
            in_use.setdefault(handler, "loaded by the running daemon")
        if loaded_view.get("default_runtime_name"):
            in_use[loaded_view["default_runtime_name"]] = "the running daemon's default runtime"
    if now.get("default_runtime_name"):
        in_use.setdefault(now["default_runtime_name"], "the default runtime")
    for handler in handlers_in_use:
        in_use.setdefault(handler, "named by a RuntimeClass")
    if after["cri_loads"]:
        for handler in sorted(in_use):
            if handler != name and handler not in after["runtimes"]:
                reasons.append("runtime %s (%s) would vanish under containerd %s: %s wins %s"
                               % (handler, in_use[handler], version, where, table))
    return reasons


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

def write_exact(path, text, default_mode=0o644):
    """Replace ``path`` atomically with ``text``, keeping its mode and owner; a new file gets ``default_mode``."""
    try:
        info = os.stat(path)
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    except FileNotFoundError:
        mode, owner = default_mode, None
    try:
        atomic_write(path, text, mode, owner)
    except OSError as exc:
        raise GpuopError("cannot write %s: %s" % (path, exc.strerror or exc))


def run(params, check_mode=False, version_of=binary_version, loaded_of=loaded_now):
    """Plan, gate, and (unless refused or in check mode) write. Returns the module's result."""
    version = version_of(params["containerd"])
    loaded_view = loaded_of(params["address"], params["ctr"], params["crictl"], params["wait_timeout"])
    decided = plan(params, version, loaded_view)
    refused = bool(decided["refusals"]) and not params.get("force")
    main, dropin = decided["main"], decided["dropin"]
    main_changed = main["after"] != main["before"]
    dropin_changed = dropin["after"] != dropin["before"]
    if not refused and not check_mode:
        # The drop-in first: a run stopped between the two writes leaves a drop-in nothing imports yet.
        if dropin_changed:
            write_exact(dropin["path"], dropin["after"])
        if main_changed:
            write_exact(main["path"], main["after"])
    name = params["runtime_name"]
    loaded_names = (loaded_view or {}).get("runtimes") or []
    daemon_has_it = bool(loaded_view and loaded_view.get("cri_loaded") and name in loaded_names)
    changed = not refused and (main_changed or dropin_changed)
    wrote = not refused and not check_mode
    result = {
        "changed": changed,
        "refused": refused,
        "forced": bool(decided["refusals"]) and bool(params.get("force")),
        "refusals": decided["refusals"],
        "restart_needed": not refused and (changed or not daemon_has_it),
        "containerd_version": version,
        "containerd_major": decided["containerd_major"],
        "written": {
            "main": main["path"], "main_changed": main_changed,
            "main_lines_added": _added_lines(main["before"], main["after"]),
            "dropin": dropin["path"], "dropin_changed": dropin_changed,
            "dropin_kind": "self-sufficient copy of the CRI section" if decided["containerd_major"] == 1 else "minimal",
        },
        "files": files_view(main["path"], main["after"] if wrote else main["before"],
                            dropin["path"], dropin["after"] if wrote else dropin["before"]),
        "service_manager": "systemd" if os.path.isdir("/run/systemd/system") else "none",
        "predicted_now": _brief(decided["predicted_now"]),
        "predicted": _brief(decided["predicted"]),
        "loaded_before": None if loaded_view is None else {
            "runtimes": loaded_names, "default_runtime_name": loaded_view.get("default_runtime_name"),
            "cri_loaded": bool(loaded_view.get("cri_loaded")), "error": loaded_view.get("error")},
        "warnings_found": decided["warnings"],
        "diff": [
            {"before": main["before"], "after": main["after"], "before_header": main["path"], "after_header": main["path"]},
            {"before": dropin["before"] or "", "after": dropin["after"], "before_header": dropin["path"],
             "after_header": dropin["path"]},
        ],
    }
    result["msg"] = summary(params, result)
    return result


def files_view(main_path, main_text, dropin_path, dropin_text):
    """The written view, as the files are after this run: the main file's imports, the drop-in's runtimes."""
    imports = merge.describe_file(main_path, merge.parse_toml(main_path, main_text))["imports"]
    runtimes = []
    if dropin_text is not None:
        runtimes = merge.describe_file(dropin_path, merge.parse_toml(dropin_path, dropin_text))["runtimes"]
    return {"main": main_path, "main_imports": imports, "dropin": dropin_path, "dropin_present": dropin_text is not None,
            "dropin_runtimes": runtimes}


def _added_lines(before, after):
    old = before.splitlines()
    return [line for line in after.splitlines() if line not in old]


def _brief(view):
    return {key: view[key] for key in ("containerd_major", "runtimes", "default_runtime_name", "cri_loads", "error",
                                       "loaded_files", "cri_table_files", "cri_table_winner", "reason")}


def summary(params, result):
    if result["refused"]:
        return "refused: %s" % "; ".join(result["refusals"])
    pred = result["predicted"]
    text = "containerd %s: a restart would load %s (default %s)" % (
        result["containerd_version"], ",".join(pred["runtimes"]), pred["default_runtime_name"])
    if result["forced"]:
        text += "; FORCED past: %s" % "; ".join(result["refusals"])
    return text
