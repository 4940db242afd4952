"""gpuop.doctor_outputs: the doctor's result as SARIF, JUnit, HTML, terminal lines and JSON v2.

The base result is ``doctor.diagnose`` on the lab's real step8 snapshot (tests/fixtures/doctor,
read from a live kwok cluster): a stalled toolkit rollout, handlers unknown on kwok nodes, a
sharing mismatch and a sharing config. ``with_fleet`` adds what the fleet gate ``containerd-nodes``
will add (node-group findings with details.nodes/file/line, the node x gate matrix, rollout rows),
built by hand since that gate does not exist yet. SARIF is validated against the official OASIS
schema vendored in tests/fixtures/sarif (see its README), JUnit is read back with junitparser.
"""

import copy
import functools
import hashlib
import html
import json
import os
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import jsonschema
import junitparser
import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import doctor
from ansible_collections.gpuop.gates.plugins.module_utils import doctor_outputs as outputs
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
SCHEMA_PATH = os.path.join(FIXTURES, "sarif", "sarif-schema-2.1.0.json")
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
LAB_OPTS = {"kubeconfig": "/k", "physical_gpus": 4, "vram_per_gpu_gib": 40, "sharing_default_key": "any",
            "runtime_classes": ["nvidia"]}
NOW = 1796230000.0
META = {"kubeconfig": "/k", "context": "lab", "server": "https://127.0.0.1:6443",
        "api_calls": ["GET /version", "LIST /api/v1/nodes"], "fail_on": "warning"}
TOOLKIT = "gpu-operator/nvidia-container-toolkit"
KWOK_REASON = "kwok nodes report no runtime handlers (kubelet < 1.30 behaviour); accepted in the lab"


def load(stage):
    with open(os.path.join(FIXTURES, "doctor", stage + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def lab_result():
    return doctor.diagnose(load("step8"), LAB_OPTS, NOW)


def node_names(count):
    return ["gpu-%04d" % i for i in range(count)]


MAIN = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
ORPHAN = "/etc/containerd/conf.d/old.toml"
V2_PATH = "/etc/containerd/conf.d/20-v2-path.toml"
# fleet_views: which nodes get which verdict (index ranges of node_names)
CRI, INCOMPLETE, UNREADABLE, ORPHANED, IGNORED = range(0, 12), range(12, 37), range(37, 42), range(42, 44), range(44, 46)


def file_entry(path, loaded=True, incomplete=(), plugin_ids=("io.containerd.grpc.v1.cri",), cri_line=1):
    return {"path": path, "loaded": loaded, "error": None, "version": 2, "plugin_ids": list(plugin_ids),
            "runtimes": ["nvidia"], "imports": [], "cri_keys": {}, "incomplete": list(incomplete), "cri_line": cri_line}


def node_view(index):
    """What containerd_node_view returns (module_utils fleet.read_node's shape) for node ``index``."""
    if index in UNREADABLE:
        return {"error": "ssh: connect to host gpu-%04d port 22: Connection timed out" % index}
    files = [file_entry(MAIN)]
    predicted = {"runtimes": ["nvidia", "runc"], "default_runtime_name": "runc", "cri_loads": True, "error": None,
                 "reason": "main file and its imports merged"}
    if index in CRI:
        predicted.update(runtimes=[], cri_loads=False, reason="parse error",
                         error="toml: line 7 (last key \"plugins.cri\"): expected '='")
    elif index in INCOMPLETE:
        files.append(file_entry(DROPIN, incomplete=[{"runtime": "nvidia", "line": 7}]))
    elif index in ORPHANED:
        files.append(file_entry(ORPHAN, loaded=False))
    elif index in IGNORED:
        files.append(file_entry(V2_PATH, plugin_ids=["io.containerd.cri.v1.runtime"], cri_line=None))
    return {"view": {"config": MAIN, "containerd_version": "1.7.24", "containerd_major": 1, "load_order": [MAIN],
                     "files": files, "predicted": predicted, "warnings": [],
                     "loaded": {"runtimes": ["nvidia", "runc"], "default_runtime_name": "runc", "cri_loaded": True,
                                "error": None}}}


def fleet_views(count):
    return {name: node_view(index) for index, name in enumerate(node_names(count))}


def with_fleet(count):
    """The lab's step8 cluster diagnosed with a fleet of ``count`` GPU nodes read by containerd_node_view
    (the real fleet gate: grouped findings with details.nodes/file/line, the node x gate matrix), and one
    rollout row per fleet node (doctor's rollout_rows shape): 3 Pending with their blockers, every 4th old."""
    result = doctor.diagnose(load("step8"), dict(LAB_OPTS, nodes=fleet_views(count)), NOW)
    rows = []
    for index, name in enumerate(node_names(count)):
        if index < 3:
            rows.append({"daemonset": TOOLKIT, "node": name, "state": "pending", "old_pod": False,
                         "blocker": "insufficient-memory on %s: requests 64Gi > 32Gi allocatable" % name})
        else:
            rows.append({"daemonset": TOOLKIT, "node": name, "state": "old" if index % 4 == 0 else "updated",
                         "old_pod": index % 4 == 0, "blocker": None})
    result["rollout_rows"] = rows
    return result


def without_fleet_keys(result):
    return {k: v for k, v in result.items() if k not in ("nodes", "rollout_rows")}


def by_code(result, code):
    found = [f for f in result["findings"] if f["code"] == code]
    assert len(found) == 1, (code, [f["code"] for f in result["findings"]])
    return found[0]


KWOK = [{"code": "handler-unknown", "subject": "runtimeclass/nvidia", "reason": KWOK_REASON}]


@functools.lru_cache(maxsize=1)
def schema_validator():
    with open(SCHEMA_PATH, "rb") as handle:
        raw = handle.read()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, "the vendored schema changed: see its README"
    schema = json.loads(raw)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def schema_errors(document):
    return sorted("%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message)
                  for e in schema_validator().iter_errors(document))


# ---------------------------------------------------------------------------------------------
# Suppressions and the verdict

def test_a_suppression_keeps_the_finding_marks_it_and_changes_failing():
    base = doctor.diagnose(load("step6"), LAB_OPTS, NOW)  # only handler-unknown (warning) is left
    assert [f["code"] for f in base["findings"]] == ["handler-unknown"]
    assert outputs.failing(base, "warning") and outputs.exit_code(base, "warning") == 2
    before = copy.deepcopy(base)
    result = outputs.apply_suppressions(base, KWOK)
    assert base == before  # pure
    assert len(result["findings"]) == 1
    assert result["findings"][0]["suppressed"] == {"reason": KWOK_REASON, "index": 0}
    assert result["summary"]["suppressed"] == 1 and result["summary"]["warning"] == 1
    assert result["suppressions"] == [dict(KWOK[0], index=0, matched=1)]
    assert not outputs.failing(result, "warning") and outputs.exit_code(result, "warning") == 0
    # doctor.gate_failed knows nothing of suppressions: the module must gate with failing()
    assert doctor.gate_failed(result, "warning")


def test_fail_on_levels_and_bad_fail_on():
    result = outputs.apply_suppressions(lab_result(), KWOK)
    assert outputs.failing(result, "critical")  # the stalled rollout
    assert outputs.failing(result, "warning")   # the sharing mismatch
    assert not outputs.failing(result, "none")
    assert outputs.exit_code(result, "none") == outputs.EXIT_OK
    with pytest.raises(GpuopError, match="fail_on must be one of critical, warning, none, got 'info'"):
        outputs.failing(result, "info")


def test_subject_patterns_and_node_groups():
    fleet = with_fleet(60)
    result = outputs.apply_suppressions(fleet, [
        {"code": "node-unreadable", "subject": "gpu-003[7-9]", "reason": "only 3 of the group's 5 nodes"},
        {"code": "runtime-incomplete", "subject": "gpu-00[1-3]?", "reason": "every node of the group: 12..36"},
        {"code": "rollout-stalled", "subject": "daemonset/gpu-operator/*", "reason": "maintenance window"},
        {"code": "no-such-code", "reason": "stale"},
    ])
    # a pattern matching 3 of the 5 unreadable nodes does not silence the other two
    assert "suppressed" not in by_code(result, "node-unreadable")
    assert by_code(result, "runtime-incomplete")["suppressed"] == {"reason": "every node of the group: 12..36",
                                                                   "index": 1}
    assert by_code(result, "rollout-stalled")["suppressed"]["reason"] == "maintenance window"
    assert [s["matched"] for s in result["suppressions"]] == [0, 1, 1, 0]
    assert len(result["findings"]) == len(fleet["findings"]) and result["summary"]["suppressed"] == 2
    assert result["summary"]["total"] == fleet["summary"]["total"]
    assert outputs.failing(result, "critical")  # cri-fails-on-restart is left
    # applying again starts over: nothing stays suppressed
    again = outputs.apply_suppressions(result, [])
    assert not [f for f in again["findings"] if "suppressed" in f] and again["summary"]["suppressed"] == 0


@pytest.mark.parametrize("suppressions, message", [
    ("handler-unknown", "suppressions must be a list"),
    ([{"code": "a", "reason": "r"}, "b"], r"suppressions\[1\] must be a mapping"),
    ([{"subject": "x", "reason": "r"}], r"suppressions\[0\]\.code is missing"),
    ([{"code": "a", "subject": "x"}], r"suppressions\[0\]\.reason is missing"),
    ([{"code": "a", "reason": None}], r"suppressions\[0\]\.reason is missing"),
    ([{"code": "a", "reason": "r"}, {"code": 3, "reason": "r"}], r"suppressions\[1\]\.code must be a string, got int"),
    ([{"code": "a", "reason": "r", "subject": ["x"]}], r"suppressions\[0\]\.subject must be a string, got list"),
    ([{"code": "a", "reason": "  "}], r"suppressions\[0\]\.reason must not be empty"),
    ([{"code": "a", "reason": "r", "reasons": "typo"}], r"suppressions\[0\]\.reasons: unknown field"),
])
def test_invalid_suppressions_name_the_index_and_field(suppressions, message):
    with pytest.raises(GpuopError, match=message):
        outputs.apply_suppressions(lab_result(), suppressions)


def test_exit_codes_are_documented():
    assert sorted(outputs.EXIT_CODES) == [0, 1, 2]
    assert (outputs.EXIT_OK, outputs.EXIT_TOOL_ERROR, outputs.EXIT_FINDINGS) == (0, 1, 2)
    with open(os.path.join(HERE, "..", "..", "docs", "doctor-outputs.md"), encoding="utf-8") as handle:
        doc = handle.read()
    for code in outputs.EXIT_CODES:
        assert "| %d |" % code in doc


# ---------------------------------------------------------------------------------------------
# SARIF

def test_vendored_schema_rejects_what_it_must():
    bad = json.loads(outputs.render_sarif(lab_result(), META))
    bad["runs"][0]["results"][0]["level"] = "critical"
    del bad["runs"][0]["tool"]["driver"]["name"]
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"] = {"region": {"startLine": 0}}
    errors = schema_errors(bad)
    assert any("level" in e and "'critical' is not one of" in e for e in errors), errors
    assert any("'name' is a required property" in e for e in errors), errors
    assert any("startLine" in e and "less than the minimum of 1" in e for e in errors), errors


@pytest.mark.parametrize("build", [
    lambda: lab_result(),
    lambda: outputs.apply_suppressions(with_fleet(60), KWOK),
    lambda: without_fleet_keys(lab_result()),
    lambda: doctor.diagnose(dict(load("step5"), pods=[], runtimeclasses=[]), LAB_OPTS, NOW),  # no finding
], ids=["lab", "fleet-suppressed", "no-fleet-keys", "no-finding"])
def test_sarif_validates_against_the_official_schema(build):
    text = outputs.render_sarif(build(), META)
    assert schema_errors(json.loads(text)) == []


def test_sarif_rules_levels_locations_and_suppressions():
    result = outputs.apply_suppressions(with_fleet(60), KWOK)
    doc = json.loads(outputs.render_sarif(result, META))
    assert doc["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json" and doc["version"] == "2.1.0"
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpuop-doctor"
    rules = {r["id"]: r for r in driver["rules"]}
    assert sorted(rules) == sorted({f["code"] for f in result["findings"]}) == [r["id"] for r in driver["rules"]]
    levels = {code: rule["defaultConfiguration"]["level"] for code, rule in rules.items()}
    assert levels["rollout-stalled"] == "error" and levels["cri-fails-on-restart"] == "error"
    assert levels["handler-unknown"] == "warning" and levels["runtime-incomplete"] == "warning"
    assert levels["sharing-config"] == "note"
    assert all(rule["shortDescription"]["text"] for rule in driver["rules"])

    results = run["results"]
    assert len(results) == len(result["findings"])
    for item in results:
        assert driver["rules"][item["ruleIndex"]]["id"] == item["ruleId"]
    sarif = {r["ruleId"]: r for r in results}
    expected_level = {"critical": "error", "warning": "warning", "info": "note"}
    for item in result["findings"]:
        assert sarif[item["code"]]["level"] == expected_level[item["severity"]]
        assert sarif[item["code"]]["message"]["text"] == item["text"] + "\nEvidence: $ " + item["command"]
        assert sarif[item["code"]]["properties"]["gate"] == item["gate"]

    stalled = sarif["rollout-stalled"]
    assert stalled["locations"] == [{"logicalLocations": [{
        "name": "daemonset/" + TOOLKIT, "fullyQualifiedName": "daemonset/" + TOOLKIT, "kind": "resource"}]}]
    assert "suppressions" not in stalled
    assert sarif["runtime-incomplete"]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "file://" + DROPIN}, "region": {"startLine": 7}}
    assert sarif["runtime-incomplete"]["properties"]["nodes"] == node_names(60)[12:37]
    assert sarif["orphan-dropin"]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert sarif["plugin-path-ignored"]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "file://" + V2_PATH}}  # line unknown: no region
    cri = sarif["cri-fails-on-restart"]["locations"][0]
    assert "physicalLocation" not in cri and cri["logicalLocations"][0]["name"] == "nodes/gpu-0000+11"
    assert sarif["cri-fails-on-restart"]["properties"]["nodes"] == node_names(12)

    assert sarif["handler-unknown"]["suppressions"] == [
        {"kind": "external", "status": "accepted", "justification": KWOK_REASON}]
    assert sum(1 for r in results if "suppressions" in r) == 1
    assert run["properties"]["summary"]["suppressed"] == 1
    assert run["properties"]["gates"]["containerd-nodes"] == "broken"
    assert len({r["partialFingerprints"]["gpuopFinding/v1"] for r in results}) == len(results)


def test_file_uris():
    assert outputs.file_uri("/etc/containerd/conf.d/a b#1.toml") == "file:///etc/containerd/conf.d/a%20b%231.toml"
    assert outputs.file_uri("/etc/containerd/../containerd/config.toml") == "file:///etc/containerd/config.toml"
    # the containerd gate's own findings (subject file/<absolute path>) get a physical location too
    item = doctor.finding("critical", "containerd", "containerd-cri-fails", "file//srv/etc/containerd/config.toml",
                          "t", "containerd --config /srv/etc/containerd/config.toml config dump")
    assert outputs._file_location(item) == ("/srv/etc/containerd/config.toml", None)


# ---------------------------------------------------------------------------------------------
# JUnit

def parse_junit(text):
    root = ET.fromstring(text.encode("utf-8"))  # xml.etree first: well-formed XML
    assert root.tag == "testsuite" and root.get("name") == "gpuop-doctor"
    suites = list(junitparser.JUnitXml.fromstring(text))
    assert len(suites) == 1
    return root, suites[0]


def results_of(case):
    return [(type(r).__name__, r.type) for r in case.result]


def test_junit_one_testcase_per_gate_with_failures_errors_skips():
    result = lab_result()
    root, suite = parse_junit(outputs.render_junit(result, META))
    cases = {c.name: c for c in suite}
    assert list(cases) == list(doctor.GATES)
    assert {c.classname for c in suite} == {"gpuop.doctor"}
    assert results_of(cases["rollout"]) == [("Failure", "critical")]
    assert results_of(cases["sharing"]) == [("Failure", "warning")]
    assert results_of(cases["runtime-handler"]) == [("Error", "warning")]  # unknown
    assert results_of(cases["containerd"]) == [("Skipped", None)]         # not-applicable
    assert cases["advertisement"].is_passed
    stalled = by_code(result, "rollout-stalled")
    failure = cases["rollout"].result[0]
    for item in (f for f in result["findings"] if f["gate"] == "rollout"):
        assert item["text"] in failure.text and "  $ " + item["command"] in failure.text
    rollout_count = sum(1 for f in result["findings"] if f["gate"] == "rollout")
    assert failure.message.startswith("%d finding(s), worst critical: %s" % (rollout_count, stalled["text"][:40]))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 2, 1, 1)
    assert root.find("properties/property[@name='server']").get("value") == META["server"]


def test_junit_fleet_groups_and_suppressed_findings():
    result = outputs.apply_suppressions(with_fleet(60), KWOK + [
        {"code": "node-unreadable", "subject": "gpu-00[34]?", "reason": "rack 7 powered off"}])
    root, suite = parse_junit(outputs.render_junit(result, META))
    cases = {c.name: c for c in suite}
    assert list(cases) == list(doctor.GATES) + [
        "containerd-nodes",
        "containerd-nodes: cri-fails-on-restart (12 nodes)",
        "containerd-nodes: runtime-incomplete (25 nodes)",
        "containerd-nodes: orphan-dropin (2 nodes)",
        "containerd-nodes: plugin-path-ignored (2 nodes)",
        "containerd-nodes: node-unreadable (5 nodes)",  # suppressed ones come last, as everywhere
        "containerd-nodes: ok (14 nodes)"]
    assert results_of(cases["containerd-nodes"]) == [("Failure", "critical")]
    assert results_of(cases["containerd-nodes: cri-fails-on-restart (12 nodes)"]) == [("Failure", "critical")]
    assert results_of(cases["containerd-nodes: runtime-incomplete (25 nodes)"]) == [("Failure", "warning")]
    assert cases["containerd-nodes: node-unreadable (5 nodes)"].is_passed  # suppressed
    assert cases["containerd-nodes: ok (14 nodes)"].is_passed
    assert cases["runtime-handler"].is_passed  # its only finding is suppressed
    assert KWOK_REASON in cases["runtime-handler"].system_out
    assert "gpu-0011" in cases["containerd-nodes: cri-fails-on-restart (12 nodes)"].result[0].text
    assert "gpu-0059" in cases["containerd-nodes: ok (14 nodes)"].system_out
    suite_out = root.find("system-out").text
    assert "[suppressed: %s]" % KWOK_REASON in suite_out and "[suppressed: rack 7 powered off]" in suite_out
    assert int(root.get("tests")) == len(cases) and int(root.get("failures")) == 7 and root.get("errors") == "0"
    # not suppressed, an unreadable group is an error (not judged), not a failure
    plain = {c.name: c for c in parse_junit(outputs.render_junit(with_fleet(60), META))[1]}
    assert results_of(plain["containerd-nodes: node-unreadable (5 nodes)"]) == [("Error", "warning")]


def test_junit_keeps_xml_valid_with_control_characters():
    result = lab_result()
    result["findings"][0]["text"] += " containerd said \x1b[31mERR\x00"
    root, _suite = parse_junit(outputs.render_junit(result, META))
    assert "\\x1b[31mERR\\x00" in ET.tostring(root, encoding="unicode")


# ---------------------------------------------------------------------------------------------
# HTML

VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


class Checker(HTMLParser):
    """Tags balanced, and every attribute that could load or link something listed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.links, self.tags, self.text = [], [], [], {}, []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "poster", "data") or "://" in (value or ""):
                self.links.append((tag, name, value))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append("</%s> closes %s" % (tag, self.stack[-1] if self.stack else "nothing"))
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check_html(page):
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert checker.problems == [] and checker.stack == []
    assert page.startswith("<!DOCTYPE html>")
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(checker.tags)
    assert "@import" not in page and "url(" not in page
    assert all(name == "href" and value.startswith("#") for _tag, name, value in checker.links), checker.links
    return checker


def test_html_small_is_self_contained_escaped_and_complete():
    result = outputs.apply_suppressions(with_fleet(40), KWOK)
    result["findings"][0]["text"] += " <script>alert(1)</script> & \"quoted\""
    page = outputs.render_html(result, META)
    checker = check_html(page)
    text = "".join(checker.text)
    assert "<script>alert(1)</script>" in text and "&lt;script&gt;" in page
    assert "https://127.0.0.1:6443" in text  # the server, as plain text only
    for item in result["findings"]:
        assert "<code>$ %s</code>" % html.escape(item["command"]) in page  # the evidence intact, in <code>
    # worst first, the suppressed one last
    order = [page.index(html.escape(f["text"])) for f in outputs.ordered_findings(result)]
    assert order == sorted(order)
    assert outputs.ordered_findings(result)[-1]["code"] == "handler-unknown"
    # 40 nodes: one matrix row per node, one rollout row per node
    assert checker.tags["tr"] == 1 + len(result["findings"]) + 1 + 40 + 1 + 40
    assert "<th>read</th><th>restart</th><th>files</th><th>handlers</th>" in page
    assert page.count('class="cell s-broken"') == sum(
        1 for row in result["nodes"].values() for s in row.values() if s == "broken")
    assert ">Pending</td>" in page and "insufficient-memory on gpu-0000: requests 64Gi &gt; 32Gi allocatable" in page
    assert "fail_on=warning: fails (exit 2)" in text


def test_html_without_fleet_keys():
    page = outputs.render_html(without_fleet_keys(lab_result()), META)
    check_html(page)
    assert 'id="nodes"' not in page and 'id="rollout"' not in page
    with_rows = outputs.render_html(lab_result(), META)  # doctor's own rollout rows: the lab's 3 nodes
    assert with_rows.count('class="cell r-') == 3
    empty = doctor.diagnose(dict(load("step5"), pods=[], runtimeclasses=[]), LAB_OPTS, NOW)
    empty_page = outputs.render_html(empty, {})
    check_html(empty_page)
    assert "No finding" in empty_page


def test_html_groups_rows_at_1000_nodes_and_stays_small():
    result = with_fleet(1000)
    page = outputs.render_html(result, META)
    checker = check_html(page)
    assert len(page.encode("utf-8")) < 2 * 1024 * 1024
    # matrix: identical rows grouped, worst first, every node named once in a <details>
    matrix = page[page.index('id="nodes"'):page.index('id="rollout"')]
    assert matrix.count("<tr>") == 1 + 4
    sizes = [int(x.split(" ")[0]) for x in matrix.split("<summary>")[1:]]
    assert sizes == [12, 29, 5, 954]  # restart broken, files broken, unreadable (unknown), ok
    assert matrix.index("s-unknown") < matrix.index("<summary>954 nodes</summary>")
    for name in node_names(1000):
        assert matrix.count(name) == 1
    # rollout: Pending (one group per blocker), old, updated
    rollout = page[page.index('id="rollout"'):]
    assert rollout.count("<tr>") == 1 + 3 + 1 + 1
    assert "<summary>748 nodes</summary>" in rollout and "<summary>249 nodes</summary>" in rollout
    for name in node_names(3):  # a group of one shows the node's name itself
        assert "<td>%s</td><td class=\"cell r-pending\">Pending</td>" % name in rollout
    assert rollout.index(">Pending<") < rollout.index(">old<") < rollout.index(">updated<")
    assert checker.tags["details"] < 40


# ---------------------------------------------------------------------------------------------
# Terminal, JSON v2, determinism, speed

def test_terminal_lines_keep_commands_whole():
    result = outputs.apply_suppressions(with_fleet(60), KWOK)
    lines = outputs.render_terminal(result)
    s = result["summary"]
    assert lines[0].startswith("gpu doctor: %d critical, %d warning, %d info, 1 suppressed (gates: runtime-handler "
                               "unknown" % (s["critical"], s["warning"], s["info"]))
    findings = outputs.ordered_findings(result)
    assert len(lines) == 1 + 2 * len(findings)
    for number, item in enumerate(findings):
        head, command = lines[1 + 2 * number], lines[2 + 2 * number]
        assert head.startswith("%-8s %s %s: " % (item["severity"].upper(), item["gate"], item["subject"]))
        assert command == "  $ " + item["command"]
    assert lines[1].startswith("CRITICAL rollout daemonset/%s: DaemonSet %s rollout stalled" % (TOOLKIT, TOOLKIT))
    assert lines[-2].endswith("[suppressed: %s]" % KWOK_REASON) and lines[-2].startswith("WARNING  runtime-handler")


def test_json_v2_is_render_json_plus_schema_version():
    for result in (lab_result(), without_fleet_keys(lab_result()), with_fleet(50)):
        v1 = json.loads(doctor.render_json(result, META))
        v2 = json.loads(outputs.render_json_v2(result, META))
        assert v2.pop("schema_version") == outputs.SCHEMA_VERSION == outputs.schema_version == 2
        assert v2 == v1
    fleet = json.loads(outputs.render_json_v2(outputs.apply_suppressions(with_fleet(50), KWOK), META))
    assert len(fleet["nodes"]) == 50 and len(fleet["rollout_rows"]) == 50 and fleet["suppressions"][0]["matched"] == 1


def test_every_output_is_deterministic_bytes():
    first = outputs.apply_suppressions(with_fleet(300), KWOK)
    second = copy.deepcopy(first)
    second["findings"].reverse()
    second["nodes"] = dict(reversed(list(second["nodes"].items())))
    second["rollout_rows"].reverse()
    a, b = outputs.render_all(first, META), outputs.render_all(second, META)
    assert sorted(a) == ["doctor.html", "doctor.json", "doctor.junit.xml", "doctor.sarif", "doctor.txt"]
    for name in a:
        if name != "doctor.json":  # the JSON keeps the result's own list order, like doctor.render_json
            assert a[name] == b[name], name
    assert a == outputs.render_all(copy.deepcopy(first), META)
    for text in a.values():
        assert "2026" not in text and text.endswith("\n")


def test_all_outputs_at_1000_nodes_take_under_a_second():
    result = with_fleet(1000)
    start = time.perf_counter()
    suppressed = outputs.apply_suppressions(result, KWOK + [{"code": "runtime-incomplete", "subject": "gpu-00*",
                                                             "reason": "r"}])
    rendered = outputs.render_all(suppressed, META)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, "rendering 1,000 nodes took %.2f s" % elapsed
    assert schema_errors(json.loads(rendered["doctor.sarif"])) == []
    parse_junit(rendered["doctor.junit.xml"])
    assert all(len(text.encode("utf-8")) < 2 * 1024 * 1024 for text in rendered.values())
