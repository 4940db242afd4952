# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The doctor's result in the formats other tools read: SARIF, JUnit, HTML, terminal lines, JSON v2.

Every function here is pure: it takes ``doctor.diagnose``'s result (and ``doctor.run``'s ``meta``)
and returns text or a new result, never touching the input. Same result, same bytes: no
timestamps, everything sorted. Standard library only.

The result may carry the fleet gate's keys or not:

* findings of gate ``containerd-nodes``: ``details.nodes`` (the node group sharing one verdict),
  and for file findings ``details.file`` (absolute path) and ``details.line`` (1-based, optional);
* ``result["nodes"]``: ``{node: {gate: state}}``, the node x gate matrix;
* ``result["rollout_rows"]``: ``[{"daemonset": "ns/name", "node": n, "state": "updated" | "old" |
  "pending", "blocker": text or None}]``.

Suppressions (``apply_suppressions``) never drop a finding: a suppressed one is kept, marked
``"suppressed": {"reason": ..., "index": i}``, shown by every output as suppressed, and ignored by
``failing`` / ``exit_code``. docs/doctor-outputs.md describes each output and the exit codes.
"""

import copy
import fnmatch
import hashlib
import html
import json
import posixpath
import re
import xml.etree.ElementTree as ET
from urllib.parse import quote

from ansible_collections.gpuop.gates.plugins.module_utils import doctor, fleet
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

SCHEMA_VERSION = 2
schema_version = SCHEMA_VERSION  # the name the JSON document uses for it

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FINDINGS = 2
EXIT_CODES = {
    EXIT_OK: "no unsuppressed finding at or above fail_on (fail_on=none always gives 0 when the doctor ran)",
    EXIT_TOOL_ERROR: "the doctor could not run: cluster unreachable, nodes or pods not listable, bad input "
                     "(options, suppressions); no verdict on the cluster",
    EXIT_FINDINGS: "at least one unsuppressed finding at or above fail_on",
}

FLEET_GATE = getattr(doctor, "FLEET_GATE", "containerd-nodes")
# The node x gate matrix's columns: doctor's gates, the fleet gate, then the fleet gate's own checks per node.
NODE_COLUMNS = tuple(column for column, _verdicts in getattr(doctor, "NODE_COLUMNS", ()))
# Codes that mean "could not be judged": their gate or node group is unknown, not broken.
UNKNOWN_CODES = ("node-unreadable", "read-failed")
GROUP_ABOVE = 200  # the HTML groups identical node rows / rollout rows beyond this many rows

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SARIF_LEVELS = {"critical": "error", "warning": "warning", "info": "note"}
TOOL_NAME = "gpuop-doctor"

# What each known code means (doctor.py's and the fleet gate's); an unknown code gets a generic line.
RULES = {
    "handler-not-loaded": ("warning", "A RuntimeClass's handler is not loaded on nodes that may run its pods"),
    "handler-unknown": ("warning", "Nodes report no runtime handlers: whether the handler is loaded is unknown"),
    "sandbox-failed": ("critical", "A live pod cannot get its sandbox (FailedCreatePodSandBox)"),
    "runtimeclass-missing": ("critical", "Pods name a RuntimeClass that does not exist"),
    "pod-insufficient-resource": ("critical", "A pod is Pending on an insufficient extended resource"),
    "sharing-config": ("info", "A device plugin sharing config: its slots and the memory guaranteed per slot"),
    "sharing-config-invalid": ("warning", "The device plugin would refuse this sharing config"),
    "advertisement-mismatch": ("warning", "GPU nodes advertise other than physical GPUs x replicas"),
    "physical-gpus-unknown": ("info", "GPU nodes not checked against the sharing config: physical GPU count unknown"),
    "rollout-stalled": ("critical", "A DaemonSet rollout is stalled"),
    "daemonset-missing": ("warning", "A selected DaemonSet does not exist"),
    "containerd-cri-fails": ("critical", "After a restart, containerd's CRI plugin would not load"),
    "containerd-runtime-dropped": ("warning", "After a restart, containerd would not load a written runtime"),
    "containerd-warning": ("warning", "containerd config merge warning"),
    "read-failed": ("warning", "A list the gate needs was refused: the gate is not judged"),
    "rollout-blast-radius": ("warning", "Nodes of a stalled DaemonSet where no pod of it runs: its handlers are gone"),
    # the fleet gate (module_utils fleet), defaults from fleet.SEVERITY
    "cri-fails-on-restart": (None, "A restart of the node's containerd would not load the CRI plugin"),
    "runtime-dropped-on-restart": (None, "A handler the daemon has loaded now would be gone after a restart"),
    "restart-pending": (None, "The files load a handler the running daemon has not: containerd not restarted"),
    "orphan-dropin": (None, "A TOML file in a containerd folder that no import of this version loads"),
    "runtime-incomplete": (None, "A runtime without runtime_type: loaded, unable to start a sandbox"),
    "plugin-path-ignored": (None, "A containerd 2.x plugin path under a 1.x daemon: ignored"),
    "dropin-minimal-on-1x": (None, "Under 1.x a drop-in's CRI section replaces the main file's keys"),
    "dropin-self-sufficient": (None, "A drop-in carries the CRI section whole (containerd 1.x replaces it per file)"),
    "node-unreadable": (None, "The node's containerd could not be read"),
}

_STATE_RANK = {doctor.STATE_BROKEN: 0, doctor.STATE_UNKNOWN: 1, doctor.STATE_OK: 2, doctor.STATE_NOT_APPLICABLE: 3}
_ROLLOUT_RANK = {"pending": 0, "old": 1, "updated": 2}
_SUPPRESSION_KEYS = ("code", "subject", "reason")
# XML 1.0 forbids most C0 controls; HTML shows them as nothing. Both get a visible \xNN instead.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


# ---------------------------------------------------------------------------------------------
# Shared readers

def _visible(text):
    return _CONTROL_RE.sub(lambda m: "\\x%02x" % ord(m.group(0)) if ord(m.group(0)) < 256
                           else "\\u%04x" % ord(m.group(0)), str(text))


def _severity_rank(item):
    return doctor.SEVERITY_RANK.get(item.get("severity"), len(doctor.SEVERITIES))


def gate_order(result):
    """doctor.GATES first, in their order, then the fleet gate, then any other gate by name."""
    extra = set(result.get("gates") or {}) | {f.get("gate") for f in result.get("findings") or []}
    known = list(doctor.GATES) + ([FLEET_GATE] if FLEET_GATE in extra else [])
    return known + sorted(g for g in extra if g and g not in known)


def matrix_columns(result):
    """The node x gate matrix's columns present in any row: gates in gate order, then the fleet checks."""
    present = set()
    for row in (result.get("nodes") or {}).values():
        present.update(row or {})
    order = [g for g in gate_order(result) if g in present] + [c for c in NODE_COLUMNS if c in present]
    return order + sorted(c for c in present if c not in order)


def worst_state(states):
    states = [s for s in states if s]
    return sorted(states, key=lambda s: (_STATE_RANK.get(s, 9), s))[0] if states else None


def finding_state(item):
    """The state a finding gives its gate or node group: unknown, broken, or ok (info)."""
    code = str(item.get("code") or "")
    if code in UNKNOWN_CODES or code.endswith("-unknown"):
        return doctor.STATE_UNKNOWN
    return doctor.STATE_BROKEN if item.get("severity") in ("critical", "warning") else doctor.STATE_OK


def _sort_key(order):
    rank = {g: i for i, g in enumerate(order)}
    return lambda f: (1 if f.get("suppressed") else 0, _severity_rank(f), rank.get(f.get("gate"), len(rank)),
                      str(f.get("subject")), str(f.get("text")))


def ordered_findings(result):
    """Unsuppressed findings worst first (severity, gate, subject, text), then the suppressed ones."""
    return sorted(result.get("findings") or [], key=_sort_key(gate_order(result)))


def node_group(item):
    """The node names a finding is about (``details.nodes`` when it is a list), else []."""
    nodes = (item.get("details") or {}).get("nodes")
    return sorted(str(n) for n in nodes) if isinstance(nodes, list) else []


def _file_location(item):
    """(absolute path, line or None) of a file finding: ``details.file``, else a ``file//abs`` subject."""
    details = item.get("details") or {}
    path = details.get("file")
    if not path and str(item.get("subject") or "").startswith("file//"):
        path = str(item["subject"])[len("file/"):]
    if not path or not isinstance(path, str):
        return None, None
    line = details.get("line")
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        line = None
    return path, line


def file_uri(path):
    """``file:///etc/containerd/conf.d/x.toml``; a relative path stays a relative URI reference."""
    if path.startswith("/"):
        return "file://" + quote(posixpath.normpath(path), safe="/")
    return quote(path, safe="/")


def _gate_state(result, gate):
    return ((result.get("gates") or {}).get(gate) or {}).get("state") or doctor.STATE_NOT_APPLICABLE


def _summary(result):
    summary = dict(result.get("summary") or {})
    for severity in doctor.SEVERITIES:
        summary.setdefault(severity, sum(1 for f in result.get("findings") or [] if f.get("severity") == severity))
    summary.setdefault("total", len(result.get("findings") or []))
    summary.setdefault("suppressed", sum(1 for f in result.get("findings") or [] if f.get("suppressed")))
    return summary


def _evidence(item):
    return "$ %s" % item.get("command") if item.get("command") else "(no command)"


# ---------------------------------------------------------------------------------------------
# Suppressions and the verdict

def validate_suppressions(suppressions):
    """A list of ``{code, subject (fnmatch pattern, default *), reason}``; anything else is a GpuopError."""
    if suppressions is None:
        return []
    if not isinstance(suppressions, (list, tuple)):
        raise GpuopError("suppressions must be a list of {code, subject, reason}, got %s" % type(suppressions).__name__)
    clean = []
    for index, entry in enumerate(suppressions):
        where = "suppressions[%d]" % index
        if not isinstance(entry, dict):
            raise GpuopError("%s must be a mapping {code, subject, reason}, got %s" % (where, type(entry).__name__))
        for key in sorted(entry):
            if key not in _SUPPRESSION_KEYS:
                raise GpuopError("%s.%s: unknown field (allowed: %s)" % (where, key, ", ".join(_SUPPRESSION_KEYS)))
        for key in ("code", "reason"):
            if key not in entry or entry[key] is None:
                raise GpuopError("%s.%s is missing: every suppression needs a code and a reason" % (where, key))
        for key in _SUPPRESSION_KEYS:
            if key in entry and not isinstance(entry[key], str):
                raise GpuopError("%s.%s must be a string, got %s" % (where, key, type(entry[key]).__name__))
            if key in entry and not entry[key].strip():
                raise GpuopError("%s.%s must not be empty" % (where, key))
        clean.append({"code": entry["code"], "subject": entry.get("subject", "*"), "reason": entry["reason"]})
    return clean


def suppression_matches(entry, item):
    """Same code, and the pattern matches the subject, or every node of the finding's node group.

    A pattern that matches only some nodes of a group does not silence the others' verdict.
    """
    if item.get("code") != entry["code"]:
        return False
    if fnmatch.fnmatchcase(str(item.get("subject") or ""), entry["subject"]):
        return True
    nodes = node_group(item)
    return bool(nodes) and all(fnmatch.fnmatchcase(n, entry["subject"]) for n in nodes)


def apply_suppressions(result, suppressions):
    """A new result: matched findings kept and marked ``suppressed``, summary["suppressed"] counted.

    The first matching suppression (list order) wins. ``result["suppressions"]`` lists each one
    with how many findings it matched (0: stale, worth removing).
    """
    entries = validate_suppressions(suppressions)
    out = copy.deepcopy(result)
    used = [0] * len(entries)
    for item in out.get("findings") or []:
        item.pop("suppressed", None)
        for index, entry in enumerate(entries):
            if suppression_matches(entry, item):
                item["suppressed"] = {"reason": entry["reason"], "index": index}
                used[index] += 1
                break
    out["summary"] = dict(out.get("summary") or {})
    out["summary"]["suppressed"] = sum(used)
    out["suppressions"] = [dict(entry, index=i, matched=used[i]) for i, entry in enumerate(entries)]
    return out


def failing(result, fail_on):
    """Whether an unsuppressed finding of severity ``fail_on`` or worse exists (``none`` never fails)."""
    if fail_on not in doctor.FAIL_ON:
        raise GpuopError("fail_on must be one of %s, got %r" % (", ".join(doctor.FAIL_ON), fail_on))
    if fail_on == "none":
        return False
    limit = doctor.SEVERITY_RANK[fail_on]
    return any(_severity_rank(f) <= limit and not f.get("suppressed") for f in result.get("findings") or [])


def exit_code(result, fail_on):
    """EXIT_FINDINGS (2) when ``failing``, else EXIT_OK (0). EXIT_TOOL_ERROR (1) is for a GpuopError."""
    return EXIT_FINDINGS if failing(result, fail_on) else EXIT_OK


# ---------------------------------------------------------------------------------------------
# JSON v2 and terminal lines

def render_json_v2(result, meta):
    """doctor.render_json's document plus ``schema_version`` and the optional fleet/suppression keys."""
    doc = dict(meta, **{k: result[k] for k in ("summary", "findings", "gates", "server_version", "counts")})
    for key in ("nodes", "rollout_rows", "suppressions"):
        if key in result:
            doc[key] = result[key]
    doc["schema_version"] = SCHEMA_VERSION
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def summary_text(result):
    s = _summary(result)
    gates = ", ".join("%s %s" % (g, _gate_state(result, g)) for g in gate_order(result))
    if not s["total"]:
        return "gpu doctor: no finding (gates: %s)" % gates
    return "gpu doctor: %d critical, %d warning, %d info, %d suppressed (gates: %s)" % (
        s["critical"], s["warning"], s["info"], s["suppressed"], gates)


def render_terminal(result):
    """Lines to print: a summary, then per finding ``SEVERITY gate subject: text`` and ``  $ command``.

    The command line is the command exactly as built (never folded or shortened), so it can be
    copied; only line breaks inside a finding's text become spaces, to keep one finding per line.
    """
    lines = [summary_text(result)]
    for item in ordered_findings(result):
        text = " ".join(str(item.get("text") or "").splitlines())
        line = "%-8s %s %s: %s" % (str(item.get("severity")).upper(), item.get("gate"), item.get("subject"), text)
        if item.get("suppressed"):
            line += " [suppressed: %s]" % item["suppressed"].get("reason")
        lines.append(line)
        lines.append("  " + _evidence(item))
    return lines


# ---------------------------------------------------------------------------------------------
# SARIF 2.1.0

def _fingerprint(item):
    key = "\0".join(str(item.get(k) or "") for k in ("gate", "code", "subject"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _rules(findings):
    worst = {}
    for item in findings:
        code = str(item.get("code"))
        if code not in worst or _severity_rank(item) < doctor.SEVERITY_RANK.get(worst[code], 9):
            worst[code] = item.get("severity")
    rules = []
    for code in sorted(worst):
        severity, description = RULES.get(code, (None, "gpuop doctor finding %s" % code))
        severity = severity or fleet.SEVERITY.get(code) or worst[code]
        gates = sorted({str(f.get("gate")) for f in findings if str(f.get("code")) == code})
        rules.append({"id": code, "name": code, "shortDescription": {"text": description},
                      "defaultConfiguration": {"level": SARIF_LEVELS.get(severity, "note")},
                      "properties": {"gates": gates}})
    return rules


def _sarif_result(item, rule_index):
    path, line = _file_location(item)
    subject = str(item.get("subject") or "")
    location = {"logicalLocations": [{"name": subject, "fullyQualifiedName": subject, "kind": "resource"}]}
    if path:
        physical = {"artifactLocation": {"uri": file_uri(path)}}
        if line:
            physical["region"] = {"startLine": line}
        location["physicalLocation"] = physical
    text = "%s\nEvidence: %s" % (item.get("text") or "", _evidence(item))
    properties = {"gate": item.get("gate"), "code": item.get("code"), "severity": item.get("severity"),
                  "subject": subject, "nodes": node_group(item)}
    if item.get("command"):
        properties["command"] = item["command"]
    out = {"ruleId": str(item.get("code")), "ruleIndex": rule_index[str(item.get("code"))],
           "level": SARIF_LEVELS.get(item.get("severity"), "note"), "message": {"text": text},
           "locations": [location], "partialFingerprints": {"gpuopFinding/v1": _fingerprint(item)},
           "properties": properties}
    if item.get("suppressed"):
        out["suppressions"] = [{"kind": "external", "status": "accepted",
                                "justification": str(item["suppressed"].get("reason") or "")}]
    return out


def sarif_document(result, meta):
    findings = ordered_findings(result)
    rules = _rules(findings)
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    meta = meta or {}
    run_properties = {"server": meta.get("server"), "kubeconfig": meta.get("kubeconfig"),
                      "context": meta.get("context"), "fail_on": meta.get("fail_on"),
                      "api_calls": list(meta.get("api_calls") or []), "server_version": result.get("server_version"),
                      "summary": _summary(result),
                      "gates": {g: _gate_state(result, g) for g in gate_order(result)}}
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {"name": TOOL_NAME, "rules": rules}},
            "invocations": [{"executionSuccessful": True}],
            "results": [_sarif_result(item, rule_index) for item in findings],
            "properties": run_properties,
        }],
    }


def render_sarif(result, meta):
    """SARIF 2.1.0 JSON text: one run, one rule per finding code, one result per finding."""
    return json.dumps(sarif_document(result, meta), indent=1, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------------------
# JUnit XML

def _finding_block(item):
    text = "%s %s %s: %s\n  %s" % (str(item.get("severity")).upper(), item.get("gate"), item.get("subject"),
                                   item.get("text"), _evidence(item))
    nodes = node_group(item)
    if nodes:
        text += "\n  nodes (%d): %s" % (len(nodes), " ".join(nodes))
    return text


def _suppressed_block(items):
    return "\n".join("[suppressed: %s] %s" % (f["suppressed"].get("reason"), _finding_block(f)) for f in items)


def _verdict(case, state, active, suppressed, label):
    """Fill a <testcase>: failure (broken), error (unknown), skipped (not-applicable), else pass."""
    if state in (doctor.STATE_BROKEN, doctor.STATE_UNKNOWN) and (active or not suppressed):
        worst = min((f for f in active), key=_severity_rank) if active else None
        severity = worst.get("severity") if worst else ("warning" if state == doctor.STATE_UNKNOWN else "critical")
        message = ("%d finding(s), worst %s: %s" % (len(active), severity, worst.get("text"))
                   if worst else "%s is %s with no finding" % (label, state))
        element = ET.SubElement(case, "failure" if state == doctor.STATE_BROKEN else "error",
                                message=_visible(message), type=str(severity))
        element.text = _visible("\n".join(_finding_block(f) for f in active) or message)
    elif state == doctor.STATE_NOT_APPLICABLE and not active and not suppressed:
        ET.SubElement(case, "skipped", message="not-applicable")
    lines = []
    if suppressed:
        lines.append(_suppressed_block(suppressed))
    info = [f for f in active if state not in (doctor.STATE_BROKEN, doctor.STATE_UNKNOWN)]
    if info:
        lines.append("\n".join(_finding_block(f) for f in info))
    return lines


def _fleet_groups(result):
    """(name, state, active findings, suppressed findings, nodes) per node group of the fleet gate.

    A group is a fleet finding with ``details.nodes`` (state: ``finding_state``); nodes of the matrix in
    no such finding are grouped by their row's state, the fleet gate's column or else the worst of the
    row (``containerd-nodes: ok (997 nodes)``).
    """
    matrix = result.get("nodes") or {}
    groups, covered, seen = [], set(), {}
    for item in ordered_findings(result):
        nodes = node_group(item)
        if item.get("gate") != FLEET_GATE or not nodes:
            continue
        covered.update(nodes)
        verdict = str(item.get("code"))
        seen[verdict] = seen.get(verdict, 0) + 1
        groups.append([verdict, item, finding_state(item), nodes])
    out = []
    for verdict, item, state, nodes in groups:
        if seen[verdict] > 1:  # two groups with one verdict: the subject tells them apart
            verdict = "%s %s" % (verdict, item.get("subject"))
        suppressed = bool(item.get("suppressed"))
        out.append(("%s: %s (%d nodes)" % (FLEET_GATE, verdict, len(nodes)), state,
                    [] if suppressed else [item], [item] if suppressed else [], nodes))
    by_state = {}
    for node, row in sorted(matrix.items()):
        row = row or {}
        state = row.get(FLEET_GATE) or worst_state(row.values())
        if node in covered or state is None:
            continue
        by_state.setdefault(state, []).append(node)
    for state in sorted(by_state, key=lambda s: (_STATE_RANK.get(s, 9), s)):
        nodes = by_state[state]
        out.append(("%s: %s (%d nodes)" % (FLEET_GATE, state, len(nodes)), state, [], [], nodes))
    return out


def _indent(element, level=0):
    """ElementTree.indent (Python 3.9+) for every Python this collection supports."""
    children = list(element)
    if children:
        if not (element.text or "").strip():
            element.text = "\n" + " " * (level + 1)
        for child in children:
            _indent(child, level + 1)
            child.tail = "\n" + " " * (level + 1)
        children[-1].tail = "\n" + " " * level


def render_junit(result, meta):
    """JUnit XML text: one <testsuite name="gpuop-doctor">, a testcase per gate and per fleet node group."""
    meta = meta or {}
    findings = ordered_findings(result)
    suite = ET.Element("testsuite", name=TOOL_NAME)
    props = ET.SubElement(suite, "properties")
    for key in ("server", "kubeconfig", "context", "fail_on"):
        if meta.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=_visible(meta[key]))
    if result.get("server_version"):
        ET.SubElement(props, "property", name="server_version", value=_visible(result["server_version"]))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    all_suppressed = []

    def add(name, state, active, suppressed, nodes=None, listed=True):
        case = ET.SubElement(suite, "testcase", classname="gpuop.doctor", name=_visible(name))
        out = _verdict(case, state, active, suppressed, name)
        if nodes and not active and not suppressed:  # a finding's block names its nodes already
            out.append("nodes (%d): %s" % (len(nodes), " ".join(nodes)))
        if out:
            ET.SubElement(case, "system-out").text = _visible("\n".join(out))
        counts["tests"] += 1
        for tag, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            if case.find(tag) is not None:
                counts[key] += 1
        if listed:
            all_suppressed.extend(suppressed)

    for gate in gate_order(result):
        mine = [f for f in findings if f.get("gate") == gate]
        add(gate, _gate_state(result, gate), [f for f in mine if not f.get("suppressed")],
            [f for f in mine if f.get("suppressed")])
    for name, state, active, suppressed, nodes in _fleet_groups(result):
        add(name, state, active, suppressed, nodes, listed=False)  # already listed with its gate
    if all_suppressed:
        ET.SubElement(suite, "system-out").text = _visible(_suppressed_block(all_suppressed))
    for key in ("tests", "failures", "errors", "skipped"):
        suite.set(key, str(counts[key]))
    suite.set("time", "0")
    _indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


# ---------------------------------------------------------------------------------------------
# HTML

_CSS = "\n".join((
    'body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:16px 24px;color:#1b1f24;background:#fff}',
    'h1{font-size:22px;margin:0 0 4px}',
    'h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}',
    '.meta{color:#57606a;margin:0 0 10px}',
    '.chips span{display:inline-block;margin:2px 6px 2px 0;padding:2px 8px;border-radius:10px;font-weight:600}',
    'table{border-collapse:collapse;width:100%}',
    'table.grid{width:auto;min-width:50%}',
    'th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}',
    'thead th{position:sticky;top:0;background:#f6f8fa;z-index:1}',
    'code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere}',
    'code{background:#f6f8fa;padding:1px 4px;border-radius:4px;display:block;margin-top:3px}',
    '.sev-critical{background:#ffebe9;color:#a40e26}',
    '.sev-warning{background:#fff8c5;color:#7d4e00}',
    '.sev-info{background:#ddf4ff;color:#0550ae}',
    '.sev-suppressed{background:#eaeef2;color:#57606a}',
    'tr.suppressed td{color:#6e7781}',
    '.s-broken{background:#cf222e;color:#fff}',
    '.s-unknown{background:#d4a72c;color:#1b1f24}',
    '.s-ok{background:#2da44e;color:#fff}',
    '.s-not-applicable{background:#d0d7de;color:#57606a}',
    '.s-none{background:#fff;color:#8c959f}',
    '.r-updated{background:#2da44e;color:#fff}',
    '.r-old{background:#d4a72c}',
    '.r-pending{background:#cf222e;color:#fff}',
    'td.cell{text-align:center;font-size:12px;white-space:nowrap;min-width:7em}',
    '.names{font:12px/1.4 ui-monospace,monospace;max-height:12em;overflow:auto}',
    'details summary{cursor:pointer;font-weight:600}',
    '.num{text-align:right}',
    '.ok-line{color:#1a7f37;font-weight:600}',
))


def _e(text):
    return html.escape(_visible("" if text is None else text), quote=True)


def _cls(text):
    return re.sub(r"[^a-z0-9-]", "-", str(text).lower())


def _names_details(names):
    """A group's node names folded in a <details> (one node: its name, nothing to fold)."""
    if len(names) == 1:
        return _e(names[0])
    return ("<details><summary>%d nodes</summary><div class=\"names\">%s</div></details>"
            % (len(names), _e(" ".join(names))))


def _html_header(result, meta):
    s = _summary(result)
    context = ", context %s" % meta["context"] if meta.get("context") else ""
    counts = ", ".join("%s %s" % (k, v) for k, v in sorted((result.get("counts") or {}).items()))
    parts = ["<h1>GPU doctor report</h1>",
             "<p class=\"meta\">Cluster %s (kubeconfig %s%s), Kubernetes %s. Read with %d API calls, none of them "
             "a write%s.</p>" % (_e(meta.get("server") or "(unknown)"), _e(meta.get("kubeconfig") or "(unknown)"),
                                 _e(context), _e(result.get("server_version") or "version unknown"),
                                 len(meta.get("api_calls") or []), ": " + _e(counts) if counts else "")]
    chips = ["<span class=\"sev-%s\">%d %s</span>" % (sev, s[sev], sev) for sev in doctor.SEVERITIES]
    chips.append("<span class=\"sev-suppressed\">%d suppressed</span>" % s["suppressed"])
    if meta.get("fail_on") in doctor.FAIL_ON:
        verdict = "fails" if failing(result, meta["fail_on"]) else "passes"
        chips.append("<span class=\"%s\">fail_on=%s: %s (exit %d)</span>"
                     % ("s-broken" if verdict == "fails" else "s-ok", _e(meta["fail_on"]), verdict,
                        exit_code(result, meta["fail_on"])))
    parts.append("<div class=\"chips\">%s</div>" % "".join(chips))
    parts.append("<div class=\"chips\">%s</div>" % "".join(
        "<span class=\"s-%s\">%s: %s</span>" % (_cls(_gate_state(result, g)), _e(g), _e(_gate_state(result, g)))
        for g in gate_order(result)))
    nav = [("findings", "Findings")]
    if result.get("nodes"):
        nav.append(("nodes", "Nodes x gates"))
    if result.get("rollout_rows"):
        nav.append(("rollout", "Rollout"))
    parts.append("<p>%s</p>" % " | ".join("<a href=\"#%s\">%s</a>" % (a, t) for a, t in nav))
    return parts


def _html_findings(result):
    findings = ordered_findings(result)
    parts = ["<h2 id=\"findings\">Findings, worst first (%d)</h2>" % len(findings)]
    if not findings:
        parts.append("<p class=\"ok-line\">No finding: no gate found anything broken or unknown.</p>")
        return parts
    parts.append("<table><thead><tr><th>#</th><th>severity</th><th>gate</th><th>subject</th>"
                 "<th>finding and evidence</th><th>suppressed</th></tr></thead><tbody>")
    for number, item in enumerate(findings, 1):
        nodes = node_group(item)
        path, line = _file_location(item)
        where = ""
        if path:
            where = "<div>file %s%s</div>" % (_e(path), ":%d" % line if line else "")
        suppressed = item.get("suppressed")
        parts.append(
            "<tr%s><td class=\"num\">%d</td><td class=\"sev-%s\">%s</td><td>%s</td><td>%s</td>"
            "<td>%s%s<code>$ %s</code>%s</td><td>%s</td></tr>"
            % (" class=\"suppressed\"" if suppressed else "", number, _cls(item.get("severity")),
               _e(item.get("severity")), _e(item.get("gate")), _e(item.get("subject")), _e(item.get("text")), where,
               _e(item.get("command") or ""),
               "" if not nodes else _names_details(nodes) if len(nodes) > 1 else "<div>node %s</div>" % _e(nodes[0]),
               _e(suppressed.get("reason")) if suppressed else ""))
    parts.append("</tbody></table>")
    return parts


def _state_cells(states):
    return "".join("<td class=\"cell s-%s\">%s</td>" % (_cls(s) if s else "none", _e(s) if s else "&mdash;")
                   for s in states)


def _html_matrix(result):
    matrix = result.get("nodes") or {}
    if not matrix:
        return []
    gates = matrix_columns(result)
    head = "".join("<th>%s</th>" % _e(g) for g in gates)
    rows = sorted((str(n), tuple((matrix[n] or {}).get(g) for g in gates)) for n in matrix)
    parts = ["<h2 id=\"nodes\">Nodes x gates (%d nodes)</h2>" % len(rows)]
    checks = [c for c in gates if c in NODE_COLUMNS]
    if checks:
        parts.append("<p>Columns %s: the %s gate's checks on each node.</p>" % (_e(", ".join(checks)), _e(FLEET_GATE)))
    if len(rows) <= GROUP_ABOVE:
        parts.append("<table class=\"grid\"><thead><tr><th>node</th>%s</tr></thead><tbody>" % head)
        for name, states in rows:
            parts.append("<tr><th>%s</th>%s</tr>" % (_e(name), _state_cells(states)))
    else:
        groups = {}
        for name, states in rows:
            groups.setdefault(states, []).append(name)
        order = sorted(groups, key=lambda st: (min([_STATE_RANK.get(s, 9) for s in st] or [9]),
                                               [_STATE_RANK.get(s, 9) for s in st], -len(groups[st]), groups[st][0]))
        parts.append("<p>%d nodes in %d groups of identical rows, worst first.</p>" % (len(rows), len(groups)))
        parts.append("<table class=\"grid\"><thead><tr><th>nodes</th>%s</tr></thead><tbody>" % head)
        for states in order:
            parts.append("<tr><th>%s</th>%s</tr>" % (_names_details(groups[states]), _state_cells(states)))
    parts.append("</tbody></table>")
    return parts


def _rollout_state(state):
    return "Pending" if state == "pending" else str(state)


def _html_rollout(result):
    rows = result.get("rollout_rows") or []
    if not rows:
        return []
    rows = sorted(rows, key=lambda r: (str(r.get("daemonset")), _ROLLOUT_RANK.get(r.get("state"), 9),
                                       str(r.get("blocker") or ""), str(r.get("node"))))
    parts = ["<h2 id=\"rollout\">Rollout (%d rows)</h2>" % len(rows),
             "<table class=\"grid\"><thead><tr><th>daemonset</th><th>node</th><th>state</th><th>blocker</th></tr></thead><tbody>"]
    if len(rows) <= GROUP_ABOVE:
        for row in rows:
            parts.append("<tr><td>%s</td><td>%s</td><td class=\"cell r-%s\">%s</td><td>%s</td></tr>"
                         % (_e(row.get("daemonset")), _e(row.get("node")), _cls(row.get("state")),
                            _e(_rollout_state(row.get("state"))), _e(row.get("blocker") or "")))
    else:
        groups = {}
        for row in rows:
            key = (str(row.get("daemonset")), _ROLLOUT_RANK.get(row.get("state"), 9), str(row.get("state")),
                   str(row.get("blocker") or ""))
            groups.setdefault(key, []).append(str(row.get("node")))
        for key in sorted(groups):
            daemonset, _rank, state, blocker = key
            parts.append("<tr><td>%s</td><td>%s</td><td class=\"cell r-%s\">%s</td><td>%s</td></tr>"
                         % (_e(daemonset), _names_details(groups[key]), _cls(state), _e(_rollout_state(state)),
                            _e(blocker)))
    parts.append("</tbody></table>")
    return parts


def render_html(result, meta):
    """One self-contained page (inline CSS, no script, no external resource), readable at 1,000 nodes."""
    meta = meta or {}
    body = _html_header(result, meta) + _html_findings(result) + _html_matrix(result) + _html_rollout(result)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>GPU doctor report: %s</title>\n<style>%s</style>\n</head>\n<body>\n%s\n</body>\n</html>\n"
            % (_e(meta.get("server") or "cluster"), _CSS.strip(), "\n".join(body)))


# ---------------------------------------------------------------------------------------------

OUTPUTS = (
    ("doctor.json", render_json_v2),
    ("doctor.sarif", render_sarif),
    ("doctor.junit.xml", render_junit),
    ("doctor.html", render_html),
    ("doctor.txt", lambda result, meta: "\n".join(render_terminal(result)) + "\n"),
)


def render_all(result, meta):
    """``{file name: text}`` for every output above (suggested names; the caller picks where they go)."""
    return {name: render(result, meta) for name, render in OUTPUTS}
