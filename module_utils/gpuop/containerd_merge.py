# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""containerd config merge: which runtimes the files define, and what containerd 1.x / 2.x would load.

Pure logic (no AnsibleModule). Bad input raises :class:`GpuopError` with one user-facing message.

The two merge rules modelled here (see docs/facts.md for the sources):

* containerd 1.x (1.6, 1.7): the main file loads first, then every import breadth-first (a glob
  expands in sorted order). A whole ``plugins."<id>"`` section is *replaced* by the last file that
  declares it. The CRI plugin then decodes that one section onto its built-in defaults; a
  ``runtimes`` table replaces the built-in runtime map, an absent one keeps the built-in ``runc``
  (``SystemdCgroup = false``). A relative import *with* a ``*`` is globbed against the daemon's
  working directory; a relative import without one against the importing file's folder.
* containerd 2.x (modelled on 2.4.2, whose config version is 4): every import is resolved against
  the importing file's folder; any file whose ``version`` is above 4 makes the daemon refuse to
  start; every file below 4 is migrated on its own (``cri`` -> ``io.containerd.grpc.v1.cri`` ->
  ``io.containerd.cri.v1.runtime``, a key already set in the file's own new section wins), whatever
  the root file's version, and plugin sections are deep-merged over the built-in defaults (``runc``
  is always there). A drop-in of a higher version than the root file is therefore merged, not
  refused: seen with the real 2.4.2 daemon (tests/integration/test_containerd_sandbox.py).
"""

import fnmatch
import os
import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.toml_compat import load_module as _toml_module
from ansible_collections.gpuop.gates.plugins.module_utils.names import RUNTIME_NAME_RE

# The standard library's tomllib from Python 3.11 on, else gpuop's own TOML 1.0 reader (toml_compat), which
# gives the same answers and errors: nodes with Python 3.8 to 3.10 parse containerd's files too.
tomllib = _toml_module()

CRI_ID_V2 = "io.containerd.grpc.v1.cri"
CRI_ID_V3 = "io.containerd.cri.v1.runtime"
CRI_ID_V1 = "cri"
CRI_IDS = (CRI_ID_V1, CRI_ID_V2, CRI_ID_V3)
# containerd 2.4.2's version.ConfigVersion: files below it are migrated, files above it refused.
CONTAINERD_2_CONFIG_VERSION = 4
# Keys of the old CRI section's ``containerd`` table that 2.x moves to the image plugin, not the runtime one.
_MOVED_TO_IMAGES = ("snapshotter", "disable_snapshot_annotations", "discard_unpacked_layers")
DEFAULT_RUNTIME_NAME = "runc"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
BUILTIN = "built-in default"
MERGE_KEYS = ("MAIN_RUNTIMES", "DROPIN_RUNTIMES", "CONFLICT", "CONFLICT_TABLE", "LOADED_RUNTIMES")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_NAME = RUNTIME_NAME_RE
# Deepest nesting of tables and arrays read; containerd's own configs stay under 10.
MAX_DEPTH = 64


def argument_spec():
    """Options of the containerd_merge module."""
    return dict(
        config=dict(type="path", required=True),
        dest=dict(type="path"),
        report_dest=dict(type="path"),
        loaded_runtimes=dict(type="list", elements="str"),
        daemon_cwd=dict(type="path", default="/"),
    )


# --------------------------------------------------------------------------------------------
# TOML reading
# --------------------------------------------------------------------------------------------

def table_path(segments):
    """Render key segments as a TOML table path: bare keys as-is, others double-quoted."""
    out = []
    for seg in segments:
        if _BARE_KEY.fullmatch(seg):
            out.append(seg)
        else:
            out.append('"%s"' % seg.replace("\\", "\\\\").replace('"', '\\"'))
    return ".".join(out)


def parse_toml(path, text):
    """Parse ``text`` (read from ``path``); malformed TOML -> GpuopError naming file, line, column.

    Nesting deeper than MAX_DEPTH (tables or arrays) is refused too: no containerd config nests
    that deep, and the readers below walk the document recursively.
    """
    try:
        data = tomllib.loads(text)
    except RecursionError:
        return _raise("%s: malformed TOML: nested deeper than Python can parse" % path)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POS.search(message)
        if match:
            return _raise("%s:%s:%s: malformed TOML: %s"
                          % (path, match.group(1), match.group(2), message[:match.start()]))
        return _raise("%s: malformed TOML: %s" % (path, message))
    _check_depth(path, data)
    return data


def _check_depth(path, data):
    """Raise when tables or arrays nest deeper than MAX_DEPTH (iteratively: no recursion to exhaust)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise GpuopError("%s: tables or arrays nested deeper than %d levels: not a containerd config"
                             % (path, MAX_DEPTH))
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _raise(msg):
    raise GpuopError(msg)


def read_config(path, overlay=None):
    """Read and parse one config file; a missing or unreadable file is a GpuopError.

    ``overlay`` maps absolute paths to texts that stand in for the files on disk (a prediction of
    files not written yet: the drop-in and the main file as gpuop would write them).
    """
    if overlay and path in overlay:
        if overlay[path] is None:
            raise GpuopError("%s: no such file" % path)
        return parse_toml(path, overlay[path])
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise GpuopError("%s: no such file" % path)
    except IsADirectoryError:
        raise GpuopError("%s: is a directory, not a config file" % path)
    except OSError as exc:
        raise GpuopError("%s: cannot read: %s" % (path, exc.strerror or exc))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GpuopError("%s: malformed TOML: not UTF-8 (byte %d)" % (path, exc.start))
    return parse_toml(path, text)


def _tables(data, prefix=()):
    """Every table path (as segment tuples) of a parsed document, depth first."""
    found = []
    for key, value in data.items():
        if isinstance(value, dict):
            path = prefix + (key,)
            found.append(path)
            found.extend(_tables(value, path))
    return found


def describe_file(path, data):
    """Validate one parsed file and return what it defines.

    Returns a dict: path, version (0 when absent), imports, plugins, runtime_tables
    ({table path: [names]}), runtimes (sorted names), tables (sorted table paths).
    """
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise GpuopError("%s: version must be an integer, got %r" % (path, version))
    imports = data.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(item, str) for item in imports):
        raise GpuopError("%s: imports must be an array of strings, got %r" % (path, imports))
    plugins = data.get("plugins", {})
    if not isinstance(plugins, dict):
        raise GpuopError("%s: plugins must be a table, got %s %r" % (path, type(plugins).__name__, plugins))
    runtime_tables = {}
    runtimes = {}
    for plugin_id in CRI_IDS:
        if plugin_id not in plugins:
            continue
        segs = ["plugins", plugin_id]
        section = plugins[plugin_id]
        for key in ("", "containerd", "runtimes"):
            if key:
                segs.append(key)
                if key not in section:
                    section = None
                    break
                section = section[key]
            if not isinstance(section, dict):
                raise GpuopError("%s: %s must be a table, got %s %r"
                                 % (path, table_path(segs), type(section).__name__, section))
        if section is None:
            continue
        for name, body in section.items():
            if not _NAME.fullmatch(name):
                # merge.txt and the report list names comma-separated, one key per line.
                raise GpuopError("%s: %s: runtime name %r is not a runtime handler name (letters, digits, "
                                 "'.', '_', '-')" % (path, table_path(segs), name))
            if not isinstance(body, dict):
                raise GpuopError("%s: %s must be a table, got %s %r"
                                 % (path, table_path(segs + [name]), type(body).__name__, body))
            options = body.get("options", {})
            if not isinstance(options, dict):
                raise GpuopError("%s: %s must be a table, got %s %r"
                                 % (path, table_path(segs + [name, "options"]), type(options).__name__, options))
            runtimes[name] = True
        runtime_tables[table_path(segs)] = sorted(section)
    for plugin_id in CRI_IDS:
        default_name = _cri_section_containerd(plugins, (plugin_id,)).get("default_runtime_name")
        if default_name is not None and not isinstance(default_name, str):
            raise GpuopError("%s: %s must be a string, got %r"
                             % (path, table_path(["plugins", plugin_id, "containerd", "default_runtime_name"]),
                                default_name))
    return {
        "path": path,
        "version": version,
        "imports": list(imports),
        "plugins": plugins,
        "runtime_tables": runtime_tables,
        "runtimes": sorted(runtimes),
        "tables": sorted(table_path(t) for t in _tables(data)),
    }


def _cri_section_containerd(plugins, ids):
    """The merged view of ``<id>.containerd`` tables of the given ids (first listed wins)."""
    for plugin_id in ids:
        section = plugins.get(plugin_id)
        if isinstance(section, dict) and isinstance(section.get("containerd"), dict):
            return section["containerd"]
    return {}


# --------------------------------------------------------------------------------------------
# Import resolution
# --------------------------------------------------------------------------------------------

def exists(path, overlay=None):
    """Whether ``path`` exists on disk or in the overlay (where None stands for a file taken away)."""
    if overlay and path in overlay:
        return overlay[path] is not None
    return os.path.lexists(path)


def go_glob(pattern, overlay=None):
    """filepath.Glob as Go does it: sorted matches, ``*`` also matches names starting with a dot."""
    pattern = os.path.normpath(pattern)
    if not any(ch in pattern for ch in "*?["):
        return [pattern] if exists(pattern, overlay) else []
    folder, base = os.path.split(pattern)
    if any(ch in folder for ch in "*?["):
        folders = [d for d in go_glob(folder) if os.path.isdir(d)]
    else:
        folders = [folder]
    matches = []
    go_base = base.replace("[^", "[!")
    for one in folders:
        try:
            names = set(os.listdir(one or "."))
        except OSError:
            names = set()
        for path, text in (overlay or {}).items():
            if os.path.dirname(path) == os.path.normpath(one or "."):
                (names.add if text is not None else names.discard)(os.path.basename(path))
        names = sorted(names)
        matches.extend(os.path.join(one, name) for name in names if fnmatch.fnmatchcase(name, go_base))
    return matches


def resolve_import(parent, entry, major, daemon_cwd, overlay=None):
    """Resolve one ``imports`` entry of file ``parent`` as containerd ``major`` (1 or 2) does.

    Returns ``(pattern, is_glob, paths)``: the absolute pattern or path looked at, whether it
    is a glob (contains ``*``), and the files it names (sorted matches for a glob).
    """
    cleaned = os.path.normpath(entry)
    base = os.path.dirname(parent)
    if major == 1:
        if "*" in cleaned:
            # 1.x: filepath.Glob(path) on the raw entry: relative to the daemon's cwd.
            pattern = cleaned if os.path.isabs(cleaned) else os.path.normpath(os.path.join(daemon_cwd, cleaned))
            return pattern, True, go_glob(pattern, overlay)
        pattern = cleaned if os.path.isabs(cleaned) else os.path.normpath(os.path.join(base, cleaned))
        return pattern, False, [pattern]
    pattern = cleaned if os.path.isabs(cleaned) else os.path.normpath(os.path.join(base, cleaned))
    if "*" in pattern:
        return pattern, True, go_glob(pattern, overlay)
    return pattern, False, [pattern]


def load_chain(main_path, major, daemon_cwd, cache, overlay=None):
    """Files containerd ``major`` loads, in load order, plus warnings and a fatal error (or None).

    ``cache`` maps path -> described file (each file is read and validated once). Containerd
    loads breadth first and skips a path it has already loaded.
    """
    order, warnings, error = [], [], None
    pending, seen = [main_path], set()
    while pending:
        path = pending.pop(0)
        if path in seen:
            continue
        if path != main_path and not exists(path, overlay):
            error = "failed to load TOML: %s: open %s: no such file or directory" % (path, path)
            break
        if path not in cache:
            cache[path] = describe_file(path, read_config(path, overlay))
        described = cache[path]
        seen.add(path)
        order.append(described)
        for entry in described["imports"]:
            pattern, is_glob, paths = resolve_import(path, entry, major, daemon_cwd, overlay)
            if is_glob and not paths:
                how = ""
                if major == 1 and not os.path.isabs(os.path.normpath(entry)):
                    how = " (a relative glob is matched against the daemon's working directory %s, " \
                          "not against %s)" % (daemon_cwd, os.path.dirname(path))
                warnings.append("containerd %d.x: import %r of %s matches nothing as %s%s: no drop-in "
                                "is loaded from it" % (major, entry, path, pattern, how))
            pending.extend(paths)
    return order, warnings, error


# --------------------------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------------------------

def _builtin_runtimes():
    return {DEFAULT_RUNTIME_NAME: {"runtime_type": DEFAULT_RUNTIME_TYPE, "binary_name": "",
                                   "systemd_cgroup": False, "source": BUILTIN}}


def _runtime_details(table, source):
    details = {}
    for name, body in table.items():
        options = body.get("options", {})
        details[name] = {
            "runtime_type": body.get("runtime_type", ""),
            "binary_name": options.get("BinaryName", ""),
            "systemd_cgroup": options.get("SystemdCgroup", False) is True,
            "source": source,
        }
    return details


def _deep_merge(into, src):
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        elif isinstance(value, dict):
            into[key] = _deep_merge({}, value)
        else:
            into[key] = value
    return into


def _no_runtime_error(name):
    if name == "":
        return "invalid plugin config: default_runtime_name is empty"
    return ('invalid plugin config: no corresponding runtime configured in containerd.runtimes for '
            'containerd default_runtime_name = "%s"' % name)


def _prediction(files, runtimes, default_name, error, reason):
    loads = error is None and default_name in runtimes
    if error is None and not loads:
        error = _no_runtime_error(default_name)
    return {
        "runtimes": sorted(runtimes),
        "default_runtime_name": default_name,
        "cri_loads": loads,
        "error": error,
        "loaded_files": [f["path"] for f in files],
        "runtime_details": runtimes,
        "reason": reason,
    }


def predict_containerd_1(files, error=None):
    """What containerd 1.6/1.7 loads from ``files`` (load order): whole plugin sections replaced."""
    if error:
        return _failed(files, error, "containerd 1.x stops before any plugin loads")
    version, sections = 0, {}
    for described in files:
        if described["version"]:
            version = described["version"]
        for plugin_id, section in described["plugins"].items():
            sections[plugin_id] = (section, described["path"])
    cri_id = CRI_ID_V1 if version in (0, 1) else CRI_ID_V2
    label = 'plugins."%s"' % cri_id
    if cri_id not in sections:
        return _prediction(files, _builtin_runtimes(), DEFAULT_RUNTIME_NAME, None,
                           "no loaded file declares %s: the CRI plugin runs on its built-in defaults "
                           "(runc, SystemdCgroup = false)" % label)
    section, source = sections[cri_id]
    owners = [f["path"] for f in files if cri_id in f["plugins"]]
    containerd = section.get("containerd", {})
    if "runtimes" in containerd:
        runtimes = _runtime_details(containerd["runtimes"], source)
        how = "its runtimes table replaces the built-in one"
    else:
        runtimes = _builtin_runtimes()
        how = "it has no runtimes table, so the built-in runc (SystemdCgroup = false) is used"
    default_name = containerd.get("default_runtime_name", DEFAULT_RUNTIME_NAME)
    origin = source if "default_runtime_name" in containerd else BUILTIN
    if len(owners) > 1:
        head = ("containerd 1.x replaces a whole plugin section per file: %s is declared by %s; the "
                "last one, %s, wins alone" % (label, ", ".join(owners), source))
    else:
        head = "%s comes from %s only" % (label, source)
    reason = "%s; %s; default_runtime_name = \"%s\" (%s)" % (head, how, default_name, origin)
    return _prediction(files, runtimes, default_name, None, reason)


def _failed(files, error, why):
    return {"runtimes": [], "default_runtime_name": None, "cri_loads": False, "error": error,
            "loaded_files": [f["path"] for f in files], "runtime_details": {}, "reason": why}


def _containerd_section_2x(described):
    """The CRI runtime plugin's ``containerd`` table of one file, after containerd 2.x migrated it.

    A file below CONTAINERD_2_CONFIG_VERSION has its old section (``io.containerd.grpc.v1.cri``,
    ``cri`` for version 0/1) copied key by key into the new one, where the new one lacks the key
    (plugins/cri/runtime/plugin.go migrateConfig). A file at the current version is read as written.
    """
    def containerd_of(plugin_id):
        section = described["plugins"].get(plugin_id, {})
        table = section.get("containerd", {}) if isinstance(section, dict) else {}
        return table if isinstance(table, dict) else {}

    merged = dict(containerd_of(CRI_ID_V3))
    if described["version"] < CONTAINERD_2_CONFIG_VERSION:
        for plugin_id in ([CRI_ID_V2, CRI_ID_V1] if described["version"] <= 1 else [CRI_ID_V2]):
            for key, value in containerd_of(plugin_id).items():
                if key not in _MOVED_TO_IMAGES:
                    merged.setdefault(key, value)
    return merged


def predict_containerd_2(files, error=None):
    """What containerd 2.x loads from ``files`` (load order): migrate each file, then deep-merge."""
    if error:
        return _failed(files, error, "containerd 2.x refuses the configuration and does not start")
    too_new = [d for d in files if d["version"] > CONTAINERD_2_CONFIG_VERSION]
    if too_new:
        # The daemon checks the merged version once every file is read, and names the last file read.
        versions = [d["version"] for d in files if d["version"]]
        got = versions[-1] if versions[-1] > CONTAINERD_2_CONFIG_VERSION else max(versions)
        return _failed(files, "failed to load TOML from %s: expected containerd config version equal to or less "
                       "than %d, got %d" % (files[-1]["path"], CONTAINERD_2_CONFIG_VERSION, got),
                       "containerd 2.x refuses a file of a config version above its own (%d: %s) and does not start"
                       % (CONTAINERD_2_CONFIG_VERSION, ", ".join(d["path"] for d in too_new)))
    merged, sources = {}, {}
    for described in files:
        containerd = _containerd_section_2x(described)
        _deep_merge(merged, containerd)
        for name in containerd.get("runtimes", {}) if isinstance(containerd.get("runtimes"), dict) else {}:
            sources.setdefault(name, []).append(described["path"])
    runtimes = _builtin_runtimes()
    for name, details in _runtime_details(merged.get("runtimes", {}), "").items():
        details["source"] = ", ".join(sources[name])
        runtimes[name] = details
    default_name = merged.get("default_runtime_name", DEFAULT_RUNTIME_NAME)
    reason = ("containerd 2.x migrates each file to the current version and deep-merges plugin "
              "sections over the built-in defaults: runtimes %s; default_runtime_name = \"%s\""
              % (", ".join("%s (%s)" % (n, runtimes[n]["source"]) for n in sorted(runtimes)), default_name))
    return _prediction(files, runtimes, default_name, None, reason)


# --------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------

def normalize_names(names):
    """Sorted, de-duplicated runtime names; a name with a comma, space or newline is bad input."""
    out = set()
    for name in names or []:
        name = str(name).strip()
        if not name:
            continue
        if not _NAME.fullmatch(name):
            raise GpuopError("loaded_runtimes: %r is not a runtime name (letters, digits, '.', '_', '-')" % name)
        out.add(name)
    return sorted(out)


def analyze(config, daemon_cwd="/", loaded_runtimes=None, overlay=None):
    """Read ``config`` and its imports; return the whole analysis as plain data.

    ``overlay`` (absolute path -> text) predicts files as they would be written (read_config).

    Raises GpuopError for a missing main file, malformed TOML, or tables that are not tables.
    """
    if not os.path.isabs(daemon_cwd):
        raise GpuopError("daemon_cwd must be an absolute path, got %r" % daemon_cwd)
    config = os.path.abspath(config)
    daemon_cwd = os.path.normpath(daemon_cwd)
    if not exists(config, overlay):
        raise GpuopError("%s: main config file does not exist" % config)
    observed = normalize_names(loaded_runtimes)
    cache = {}
    chains = {}
    for major in (1, 2):
        chains[major] = load_chain(config, major, daemon_cwd, cache, overlay)
    # The files as written: imports resolved against the importing file's folder (containerd 2.x).
    files = chains[2][0]
    main, dropins = files[0], files[1:]
    warnings = []
    for major in (1, 2):
        warnings.extend(chains[major][1])
        if chains[major][2]:
            warnings.append("containerd %d.x: %s" % (major, chains[major][2]))
    for described in dropins:
        if described["version"] > main["version"]:
            warnings.append("%s: drop-in version %d is higher than the main file's version %d: containerd "
                            "2.x migrates each file on its own and merges them (it refuses only a version above %d)"
                            % (described["path"], described["version"], main["version"],
                               CONTAINERD_2_CONFIG_VERSION))
    table_owners = {}
    for described in files:
        for table in described["tables"]:
            table_owners.setdefault(table, []).append(described["path"])
    runtime_owners = {}
    for described in files:
        for table, names in described["runtime_tables"].items():
            if names:
                runtime_owners.setdefault(table, []).append(described["path"])
    conflict_tables = sorted(t for t, owners in runtime_owners.items() if len(owners) > 1)
    sections = {}
    for described in files:
        for plugin_id in described["plugins"]:
            sections.setdefault(table_path(["plugins", plugin_id]), []).append(described["path"])
    dropin_names = sorted({n for d in dropins for n in d["runtimes"]})
    return {
        "config": config,
        "daemon_cwd": daemon_cwd,
        "files": [{"path": d["path"], "role": "main" if i == 0 else "drop-in", "version": d["version"],
                   "imports": d["imports"], "runtimes": d["runtimes"], "runtime_tables": d["runtime_tables"],
                   "tables": d["tables"]} for i, d in enumerate(files)],
        "main_runtimes": main["runtimes"],
        "dropin_runtimes": dropin_names,
        "shared_tables": [{"table": t, "files": o} for t, o in sorted(table_owners.items()) if len(o) > 1],
        "shared_sections": [{"section": s, "files": o} for s, o in sorted(sections.items()) if len(o) > 1],
        "conflict": bool(conflict_tables),
        "conflict_table": ",".join(conflict_tables),
        "loaded_runtimes": observed,
        "predicted": {
            "containerd_1": predict_containerd_1(chains[1][0], chains[1][2]),
            "containerd_2": predict_containerd_2(chains[2][0], chains[2][2]),
        },
        "warnings": warnings,
    }


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

def merge_lines(result):
    """The five ``KEY=value`` pairs of merge.txt, in order."""
    return [
        ("MAIN_RUNTIMES", ",".join(result["main_runtimes"])),
        ("DROPIN_RUNTIMES", ",".join(result["dropin_runtimes"])),
        ("CONFLICT", "yes" if result["conflict"] else "no"),
        ("CONFLICT_TABLE", result["conflict_table"] if result["conflict"] else ""),
        ("LOADED_RUNTIMES", ",".join(result["loaded_runtimes"])),
    ]


def render_merge_txt(result):
    """merge.txt: exactly five lines with a trailing newline."""
    return "".join("%s=%s\n" % pair for pair in merge_lines(result))


def _fmt_prediction(title, pred):
    lines = ["## %s" % title, ""]
    lines.append("- runtimes: %s" % (", ".join("`%s`" % n for n in pred["runtimes"]) or "none"))
    lines.append("- default_runtime_name: %s" % ("`%s`" % pred["default_runtime_name"]
                                                 if pred["default_runtime_name"] is not None else "none"))
    lines.append("- CRI plugin loads: %s" % ("yes" if pred["cri_loads"] else "**no**"))
    if pred["error"]:
        lines.append("- error: `%s`" % pred["error"])
    lines.append("- files loaded, in order: %s" % (", ".join("`%s`" % p for p in pred["loaded_files"]) or "none"))
    for name in sorted(pred["runtime_details"]):
        det = pred["runtime_details"][name]
        lines.append("  - `%s`: runtime_type `%s`, BinaryName `%s`, SystemdCgroup %s, from %s"
                     % (name, det["runtime_type"], det["binary_name"], str(det["systemd_cgroup"]).lower(),
                        det["source"]))
    lines.append("- why: %s" % pred["reason"])
    lines.append("")
    return lines


def render_report(result):
    """merge-report.md: what each merge.txt line is (written / computed / observed) and the predictions."""
    pairs = dict(merge_lines(result))
    lines = ["# containerd merge report", "", "Main config: `%s` (containerd 1.x working directory assumed: `%s`)."
             % (result["config"], result["daemon_cwd"]), "", "## Files (written)", "",
             "What the files on disk say, imports resolved against the importing file's folder.", ""]
    for described in result["files"]:
        lines.append("- `%s` (%s, version %s): runtimes %s" % (
            described["path"], described["role"], described["version"] or "absent",
            ", ".join("`%s`" % n for n in described["runtimes"]) or "none"))
    lines += ["", "## merge.txt", "", "| line | value | kind |", "| --- | --- | --- |"]
    kinds = {
        "MAIN_RUNTIMES": "written: names the main file defines itself",
        "DROPIN_RUNTIMES": "written: names the imported files define",
        "CONFLICT": "computed: more than one file defines runtime tables under the same path",
        "CONFLICT_TABLE": "computed: that path",
        "LOADED_RUNTIMES": "observed: what the running daemon had loaded, never computed from the files",
    }
    for key in MERGE_KEYS:
        lines.append("| `%s` | %s | %s |" % (key, "`%s`" % pairs[key] if pairs[key] else "(empty)", kinds[key]))
    lines.append("")
    if result["shared_sections"]:
        lines += ["Plugin sections declared by more than one file (containerd 1.x keeps only the last):", ""]
        lines += ["- `%s`: %s" % (s["section"], ", ".join("`%s`" % p for p in s["files"]))
                  for s in result["shared_sections"]]
        lines.append("")
    lines += _fmt_prediction("Predicted after a restart: containerd 1.x (1.6, 1.7)", result["predicted"]["containerd_1"])
    lines += _fmt_prediction("Predicted after a restart: containerd 2.x", result["predicted"]["containerd_2"])
    observed = result["loaded_runtimes"]
    lines += ["## Observed", "", "Loaded runtimes (observation): %s." % (", ".join("`%s`" % n for n in observed) or "none given"),
              "A prediction says what a restart would load; only the observation says what is loaded now.", ""]
    if result["warnings"]:
        lines += ["## Warnings", ""] + ["- %s" % w for w in result["warnings"]] + [""]
    return "\n".join(lines)


def summary(result):
    """One line with both predictions, for the module's ``msg``."""
    parts = []
    for key, label in (("containerd_1", "containerd 1.x"), ("containerd_2", "containerd 2.x")):
        pred = result["predicted"][key]
        state = "CRI loads" if pred["cri_loads"] else "CRI fails: %s" % pred["error"]
        parts.append("%s: runtimes [%s], default_runtime_name %s, %s" % (
            label, ",".join(pred["runtimes"]), pred["default_runtime_name"], state))
    return "; ".join(parts)
