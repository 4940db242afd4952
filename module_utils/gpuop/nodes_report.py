# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The GPU nodes' report of the role nvidia_runtime, on the controller (the ``nodes_report`` module).

Pure logic over :mod:`gpuop.file_set` (its file writing). Each node's record (``<report_dir>/nodes/<node>.json``, written by the
role for every node it reached: the written, predicted and loaded views and a verdict) is read in file-name
order; ``nodes.json`` (the list of records) and ``nodes-report.md`` (one table row per node, then the
refusals) are written atomically, only when they differ; every node whose verdict is not done (``loaded``
or ``forced``) is named in one message.
"""

import glob
import json
import os

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils import file_set

# The verdicts of a node that has the runtime loaded: by the prediction's leave, or past a refusal (force).
DONE = ("loaded", "forced")
# The verdict of a node whose run failed before its containerd was known (the record then has ``error``).
ERROR = "error"
REPORT_JSON = "nodes.json"
REPORT_MD = "nodes-report.md"
MODE = 0o644

# The fields a record needs, by verdict (dotted: a key of a key).
_ERROR_FIELDS = ("node", "verdict", "error")
_STATE_FIELDS = ("node", "verdict", "containerd_version", "written.dropin_present", "written.dropin_runtimes",
                 "predicted.cri_loads", "predicted.runtimes", "loaded.cri_loaded", "loaded.runtimes", "loaded.error",
                 "refusals")


def argument_spec():
    """Options of the nodes_report module."""
    return {
        "report_dir": {"type": "path", "required": True},
        "runtime_name": {"type": "str", "default": "nvidia"},
    }


# --------------------------------------------------------------------------------------------
# Reading the records
# --------------------------------------------------------------------------------------------

def record_paths(report_dir):
    """The per-node record files, ``<report_dir>/nodes/*.json`` (regular files, no hidden ones), sorted by
    name without regard to case (as the role sorted them: Jinja's ``sort``)."""
    found = [p for p in glob.glob(os.path.join(glob.escape(report_dir), "nodes", "*.json")) if os.path.isfile(p)]
    return sorted(found, key=lambda p: p.lower())


def _get(record, dotted):
    value = record
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(dotted)
        value = value[key]
    return value


def check_record(record, where):
    """Refuse a record the report cannot show: not an object, a field missing, node or verdict not text."""
    if not isinstance(record, dict):
        raise GpuopError("%s: a node's record must be a JSON object, not %s" % (where, _json_kind(record)))
    for field in ("node", "verdict"):
        if not isinstance(record.get(field), str) or not record.get(field):
            raise GpuopError("%s: the record has no %s (a non-empty string)" % (where, field))
    for field in _ERROR_FIELDS if record["verdict"] == ERROR else _STATE_FIELDS:
        try:
            _get(record, field)
        except KeyError:
            raise GpuopError("%s: the record of node %s has no %s" % (where, record["node"], field))
    return record


def _json_kind(value):
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def read_records(paths):
    """Each file's record, in the order given; a file that cannot be read or is not a record fails, named."""
    records = []
    for path in paths:
        try:
            with open(path, "r", encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise GpuopError("cannot read %s: %s" % (path, exc.strerror or exc))
        except UnicodeDecodeError as exc:
            raise GpuopError("cannot read %s: it is not UTF-8 text (byte %d)" % (path, exc.start))
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise GpuopError("%s: not JSON: %s" % (path, exc))
        records.append(check_record(record, path))
    return records


# --------------------------------------------------------------------------------------------
# Rendering (pure: records in, text out)
# --------------------------------------------------------------------------------------------

def render_json(records):
    """``nodes.json``: the list of records, 4-space indented, keys sorted, one final newline."""
    return json.dumps(records, indent=4, sort_keys=True) + "\n"


def _text(value):
    """A value as a ``{{ }}`` of the report shows it: null shows as nothing, other values as Python prints them."""
    return "" if value is None else str(value)


def _join(values):
    return ",".join(str(v) for v in values)


def table_row(record):
    """One node's row: containerd, the drop-in's runtimes, the predicted and the loaded ones, the verdict."""
    if record["verdict"] == ERROR:
        error = str(record["error"]).replace("|", "/").replace("\n", " ")
        return "| %s | | | | | error: %s |\n" % (_text(record["node"]), error)
    written, predicted, loaded = record["written"], record["predicted"], record["loaded"]
    cells = [
        _text(record["node"]),
        _text(record["containerd_version"]),
        _join(written["dropin_runtimes"]) if written["dropin_present"] else "no drop-in",
        _join(predicted["runtimes"]) if predicted["cri_loads"] else "CRI fails",
        _join(loaded["runtimes"]) if loaded["cri_loaded"] else "CRI not loaded: %s" % (loaded["error"],),
        _text(record["verdict"]),
    ]
    return "| %s |\n" % " | ".join(cells)


def render_markdown(records, runtime_name):
    """``nodes-report.md``: what each view is, one table row per node, then each refused node's reasons."""
    lines = [
        "# GPU nodes: the %s runtime\n" % _text(runtime_name),
        "\n",
        "Written by gpuop.gates.nvidia_runtime (%d nodes). Three views per node:\n" % len(records),
        "\n",
        "- **written**: the files on the node (the main file's imports, the drop-in's runtimes);\n",
        "- **predicted** (computed): what a restart of that node's containerd version would load from them;\n",
        "- **loaded**: what the running daemon answered (`crictl info` on its socket). Only this one counts.\n",
        "\n",
        "| node | containerd | written (drop-in runtimes) | predicted after restart | loaded | verdict |\n",
        "| --- | --- | --- | --- | --- | --- |\n",
    ]
    lines.extend(table_row(record) for record in records)
    for record in records:
        if record.get("refusals"):
            lines.append("\n## %s: %s\n\n" % (_text(record["node"]), _text(record["verdict"])))
            lines.extend("- %s\n" % _text(reason) for reason in record["refusals"])
    return "".join(lines)


def not_done(records):
    """[{node, verdict}] of each record whose verdict is not done, in the records' order."""
    return [{"node": r["node"], "verdict": r["verdict"]} for r in records if r["verdict"] not in DONE]


def failure(records, report_md):
    """The run's one failure line naming every node not done, or None when every node is done."""
    bad = not_done(records)
    if not bad:
        return None
    nodes = ", ".join(b["node"] for b in bad)
    verdicts = ", ".join(b["verdict"] for b in bad)
    return "%s: not done (%s); see %s" % (nodes, verdicts, report_md)


# --------------------------------------------------------------------------------------------
# The module's run
# --------------------------------------------------------------------------------------------

def run(params, check_mode=False):
    """Read the records, write the two files where they differ (not in check mode). Returns
    ``(result, failure message or None)``: the files are written even when a node is not done."""
    report_dir = params.get("report_dir") or ""
    if not os.path.isabs(report_dir):
        raise GpuopError("report_dir (%s): must be an absolute path" % report_dir)
    records = read_records(record_paths(report_dir))
    report_json = os.path.join(report_dir, REPORT_JSON)
    report_md = os.path.join(report_dir, REPORT_MD)
    result = {"changed": False, "files": [], "diff": [],
              "nodes": [{"node": r["node"], "verdict": r["verdict"]} for r in records],
              "not_done": not_done(records)}
    files = [{"path": report_json, "content": render_json(records)},
             {"path": report_md, "content": render_markdown(records, params.get("runtime_name"))}]
    file_set.make("files", files, [MODE] * len(files), result, check_mode)
    message = failure(records, report_md)
    result["msg"] = message or "%d nodes, all done (%s); see %s" % (len(records), ", ".join(DONE), report_md)
    return result, message
