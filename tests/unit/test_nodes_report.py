"""nodes_report: the GPU nodes' report of roles/nvidia_runtime, from the per-node records, on the real filesystem.

Records are shaped as roles/nvidia_runtime/vars/main.yml writes them (``__nvidia_runtime_record``); the
expected report lines, file bytes and messages are written from the report's spec (what each column shows,
the verdicts that count as done, the one failure line), not from the code's output.
"""

import json
import os
import re
import stat

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import nodes_report as nr
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

REFUSAL = ("nvidia runtime would not load under containerd 1.6.20~ds1: /etc/containerd/conf.d/zz-registry.toml is "
           "loaded after /etc/containerd/conf.d/99-nvidia.toml and replaces the whole CRI section")


def record(node, verdict="loaded", version="1.6.20~ds1", dropin=("nvidia", "runc"), predicted=("nvidia", "runc"),
           cri_loads=True, loaded=("nvidia", "runc"), cri_loaded=True, error=None, refusals=()):
    """One node's record as the role writes it (dropin None: no drop-in on the node)."""
    return {
        "node": node,
        "containerd_version": version,
        "written": {"main": "/etc/containerd/config.toml", "main_imports": ["/etc/containerd/conf.d/99-nvidia.toml"],
                    "dropin": "/etc/containerd/conf.d/99-nvidia.toml", "dropin_present": dropin is not None,
                    "dropin_runtimes": list(dropin or [])},
        "predicted": {"containerd_major": int(version[0]), "runtimes": list(predicted), "default_runtime_name": "runc",
                      "cri_loads": cri_loads, "error": None, "cri_table_files": [], "cri_table_winner": None,
                      "reason": "", "runtime_details": {}},
        "loaded": {"runtimes": list(loaded), "default_runtime_name": "runc" if cri_loaded else None,
                   "cri_loaded": cri_loaded, "error": error,
                   "source": "crictl info on /run/containerd/containerd.sock"},
        "verdict": verdict,
        "refusals": list(refusals),
    }


def error_record(node, error):
    return {"node": node, "verdict": "error", "error": error, "refusals": []}


def write_records(report_dir, records, names=None):
    folder = os.path.join(str(report_dir), "nodes")
    os.makedirs(folder, exist_ok=True)
    for index, rec in enumerate(records):
        name = names[index] if names else rec["node"] + ".json"
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(rec, indent=4, sort_keys=True) + "\n")


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


# --------------------------------------------------------------------------------------------
# One table row per node: node | containerd | written | predicted | loaded | verdict
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rec, row", [
    (record("gpu-node-a"),
     "| gpu-node-a | 1.6.20~ds1 | nvidia,runc | nvidia,runc | nvidia,runc | loaded |\n"),
    # 2.x: the drop-in holds the runtime alone.
    (record("gpu-node-c", version="2.4.2+unknown", dropin=["nvidia"]),
     "| gpu-node-c | 2.4.2+unknown | nvidia | nvidia,runc | nvidia,runc | loaded |\n"),
    # Refused: nothing written, the daemon kept what it had.
    (record("gpu-node-b", "refused", dropin=None, predicted=["runc"], loaded=["runc"], refusals=[REFUSAL]),
     "| gpu-node-b | 1.6.20~ds1 | no drop-in | runc | runc | refused |\n"),
    # Forced past a prediction that the CRI plugin fails; the restarted daemon lost it, with its own error.
    (record("gpu-node-d", "not-loaded", cri_loads=False, loaded=[], cri_loaded=False,
            error="invalid plugin config: no corresponding runtime", refusals=["CRI would fail"]),
     "| gpu-node-d | 1.6.20~ds1 | nvidia,runc | CRI fails | CRI not loaded: invalid plugin config: no corresponding "
     "runtime | not-loaded |\n"),
    # No daemon answered and none said why.
    (record("gpu-node-e", "not-loaded", loaded=[], cri_loaded=False, error=None),
     "| gpu-node-e | 1.6.20~ds1 | nvidia,runc | nvidia,runc | CRI not loaded: None | not-loaded |\n"),
    # A run that failed before containerd was known: the error in the last cell, no | or line break in it.
    (error_record("gpu-node-f", "ssh: connect to host 10.0.0.6 port 22: Connection refused | retry\nlater"),
     "| gpu-node-f | | | | | error: ssh: connect to host 10.0.0.6 port 22: Connection refused / retry later |\n"),
    # A version nobody reported shows as an empty cell.
    (dict(record("gpu-node-g"), containerd_version=None),
     "| gpu-node-g |  | nvidia,runc | nvidia,runc | nvidia,runc | loaded |\n"),
])
def test_table_row(rec, row):
    assert nr.table_row(rec) == row


def test_the_whole_report_of_the_incident_fleet():
    records = [record("gpu-node-a"),
               record("gpu-node-b", "refused", dropin=None, predicted=["runc"], loaded=["runc"],
                      refusals=[REFUSAL, "runc (the default) would vanish"]),
               record("gpu-node-c", "forced", version="2.4.2", dropin=["nvidia"], refusals=["handler gpu in use"])]
    assert nr.render_markdown(records, "nvidia") == (
        "# GPU nodes: the nvidia runtime\n"
        "\n"
        "Written by gpuop.gates.nvidia_runtime (3 nodes). Three views per node:\n"
        "\n"
        "- **written**: the files on the node (the main file's imports, the drop-in's runtimes);\n"
        "- **predicted** (computed): what a restart of that node's containerd version would load from them;\n"
        "- **loaded**: what the running daemon answered (`crictl info` on its socket). Only this one counts.\n"
        "\n"
        "| node | containerd | written (drop-in runtimes) | predicted after restart | loaded | verdict |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| gpu-node-a | 1.6.20~ds1 | nvidia,runc | nvidia,runc | nvidia,runc | loaded |\n"
        "| gpu-node-b | 1.6.20~ds1 | no drop-in | runc | runc | refused |\n"
        "| gpu-node-c | 2.4.2 | nvidia | nvidia,runc | nvidia,runc | forced |\n"
        "\n"
        "## gpu-node-b: refused\n"
        "\n"
        "- " + REFUSAL + "\n"
        "- runc (the default) would vanish\n"
        "\n"
        "## gpu-node-c: forced\n"
        "\n"
        "- handler gpu in use\n")


def test_a_report_of_no_node():
    text = nr.render_markdown([], "nvidia.cdi")
    assert text.startswith("# GPU nodes: the nvidia.cdi runtime\n\nWritten by gpuop.gates.nvidia_runtime (0 nodes).")
    assert text.endswith("| --- | --- | --- | --- | --- | --- |\n")
    assert nr.render_json([]) == "[]\n"


def test_nodes_json_is_the_records_indented_by_four_with_sorted_keys():
    rec = {"verdict": "loaded", "node": "n1", "refusals": [], "loaded": {"runtimes": ["runc"], "error": None,
                                                                       "cri_loaded": True}}
    assert nr.render_json([rec]) == (
        '[\n'
        '    {\n'
        '        "loaded": {\n'
        '            "cri_loaded": true,\n'
        '            "error": null,\n'
        '            "runtimes": [\n'
        '                "runc"\n'
        '            ]\n'
        '        },\n'
        '        "node": "n1",\n'
        '        "refusals": [],\n'
        '        "verdict": "loaded"\n'
        '    }\n'
        ']\n')
    # Non-ASCII text is escaped, as Ansible's to_nice_json did.
    assert nr.render_json([{"error": "caf\u00e9"}]) == '[\n    {\n        "error": "caf\\u00e9"\n    }\n]\n'


# --------------------------------------------------------------------------------------------
# The verdicts: loaded and forced are done; every other node is named, in the report's order
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("verdicts, message", [
    ([], None),
    (["loaded"], None),
    (["loaded", "forced", "loaded"], None),
    (["refused"], "n0: not done (refused); see /r/nodes-report.md"),
    (["loaded", "refused", "not-loaded", "forced", "error"],
     "n1, n2, n4: not done (refused, not-loaded, error); see /r/nodes-report.md"),
    (["Loaded"], "n0: not done (Loaded); see /r/nodes-report.md"),
])
def test_failure_names_every_node_not_done(verdicts, message):
    records = [{"node": "n%d" % i, "verdict": v} for i, v in enumerate(verdicts)]
    assert nr.failure(records, "/r/nodes-report.md") == message


# --------------------------------------------------------------------------------------------
# run(): the records on disk, the two files, check mode, re-runs
# --------------------------------------------------------------------------------------------

def test_records_are_read_in_name_order_without_regard_to_case(tmp_path):
    names = ["gpu-b.json", "GPU-A.json", "gpu-c.json", ".gpu-0.json", "notes.txt"]
    write_records(tmp_path, [record("b"), record("a"), record("c"), record("hidden"), record("txt")], names)
    os.makedirs(tmp_path / "nodes" / "dir.json")
    found = [os.path.basename(p) for p in nr.record_paths(str(tmp_path))]
    assert found == ["GPU-A.json", "gpu-b.json", "gpu-c.json"]


def test_write_once_then_nothing_then_a_new_record(tmp_path):
    write_records(tmp_path, [record("gpu-node-a"), record("gpu-node-c", version="2.4.2", dropin=["nvidia"])])
    params = {"report_dir": str(tmp_path), "runtime_name": "nvidia"}
    preview, message = nr.run(params, check_mode=True)
    assert message is None and preview["changed"] is True
    assert sorted(os.listdir(tmp_path)) == ["nodes"]
    first, message = nr.run(params)
    assert message is None and first["changed"] is True
    assert first["files"] == [{"path": str(tmp_path / "nodes.json"), "changed": True},
                              {"path": str(tmp_path / "nodes-report.md"), "changed": True}]
    assert first["nodes"] == [{"node": "gpu-node-a", "verdict": "loaded"}, {"node": "gpu-node-c", "verdict": "loaded"}]
    assert [r["node"] for r in json.loads(read(tmp_path / "nodes.json"))] == ["gpu-node-a", "gpu-node-c"]
    assert "| gpu-node-c | 2.4.2 | nvidia | nvidia,runc | nvidia,runc | loaded |\n" in read(tmp_path / "nodes-report.md")
    for name in ("nodes.json", "nodes-report.md"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["nodes", "nodes-report.md", "nodes.json"]  # no temp file left
    again, _ = nr.run(params)
    assert again["changed"] is False and [f["changed"] for f in again["files"]] == [False, False]
    assert again["diff"] == []
    write_records(tmp_path, [record("gpu-node-b", "refused", dropin=None, loaded=["runc"], refusals=[REFUSAL])])
    third, message = nr.run(params)
    assert third["changed"] is True and message == "gpu-node-b: not done (refused); see %s/nodes-report.md" % tmp_path
    assert [d["before_header"] for d in third["diff"]] == ["%s/nodes.json (content)" % tmp_path,
                                                           "%s/nodes-report.md (content)" % tmp_path]
    # The files are written before the failure: the report shows the refused node.
    assert "## gpu-node-b: refused\n\n- %s\n" % REFUSAL in read(tmp_path / "nodes-report.md")


def test_no_record_yet_is_a_report_of_no_node(tmp_path):
    result, message = nr.run({"report_dir": str(tmp_path / "report"), "runtime_name": "nvidia"})
    assert message is None and result["nodes"] == [] and read(tmp_path / "report" / "nodes.json") == "[]\n"


@pytest.mark.parametrize("content, error", [
    ("{not json", r"^{f}: not JSON: "),
    ("[1, 2]", r"^{f}: a node's record must be a JSON object, not an array$"),
    ('"text"', r"^{f}: a node's record must be a JSON object, not a string$"),
    ('{"verdict": "loaded"}', r"^{f}: the record has no node \(a non-empty string\)$"),
    ('{"node": "n1", "verdict": 3}', r"^{f}: the record has no verdict \(a non-empty string\)$"),
    ('{"node": "n1", "verdict": "error"}', r"^{f}: the record of node n1 has no error$"),
    ('{"node": "n1", "verdict": "loaded", "containerd_version": "2.4.2"}',
     r"^{f}: the record of node n1 has no written\.dropin_present$"),
    (b"\xff\xfe", r"^cannot read {f}: it is not UTF-8 text \(byte 0\)$"),
])
def test_a_bad_record_fails_naming_the_file_and_the_field_before_anything_is_written(tmp_path, content, error):
    write_records(tmp_path, [record("gpu-node-a")])
    bad = tmp_path / "nodes" / "gpu-node-z.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content, encoding="utf-8")
    with pytest.raises(GpuopError) as err:
        nr.run({"report_dir": str(tmp_path), "runtime_name": "nvidia"})
    assert re.match(error.replace("{f}", re.escape(str(bad))), str(err.value)), str(err.value)
    assert sorted(os.listdir(tmp_path)) == ["nodes"]


def test_a_relative_report_dir_is_refused():
    with pytest.raises(GpuopError, match=r"^report_dir \(report\): must be an absolute path$"):
        nr.run({"report_dir": "report", "runtime_name": "nvidia"})


# --------------------------------------------------------------------------------------------
# The module through Ansible (in-process on the controller): result, failure, check mode, diff
# --------------------------------------------------------------------------------------------

def test_the_module_writes_then_fails_naming_the_nodes_not_done(tmp_path, module_runner):
    write_records(tmp_path, [record("gpu-node-a"), record("gpu-node-b", "refused", dropin=None, refusals=[REFUSAL]),
                             record("gpu-node-c", "not-loaded", loaded=["runc"])])
    args = {"report_dir": str(tmp_path)}
    preview = module_runner("nodes_report", args, check=True, diff=True)
    assert preview["failed"] is True and preview["changed"] is True, preview
    assert sorted(os.listdir(tmp_path)) == ["nodes"]
    assert preview["diff"][0]["after"].startswith("[\n    {\n")
    result = module_runner("nodes_report", args)
    assert result["failed"] is True and result["changed"] is True, result
    assert result["msg"] == "gpu-node-b, gpu-node-c: not done (refused, not-loaded); see %s/nodes-report.md" % tmp_path
    assert result["not_done"] == [{"node": "gpu-node-b", "verdict": "refused"},
                                  {"node": "gpu-node-c", "verdict": "not-loaded"}]
    assert "diff" not in result
    assert read(tmp_path / "nodes-report.md").startswith("# GPU nodes: the nvidia runtime\n")
    again = module_runner("nodes_report", args)
    assert again["failed"] is True and again["changed"] is False, again


def test_the_module_succeeds_when_every_node_is_done(tmp_path, module_runner):
    write_records(tmp_path, [record("gpu-node-a"), record("gpu-node-c", "forced", refusals=["runc would vanish"])])
    result = module_runner("nodes_report", {"report_dir": str(tmp_path), "runtime_name": "nvidia"})
    assert not result.get("failed") and result["changed"] is True, result
    assert result["msg"] == "2 nodes, all done (loaded, forced); see %s/nodes-report.md" % tmp_path
    bad = tmp_path / "nodes" / "gpu-node-d.json"
    bad.write_text("[]", encoding="utf-8")
    refused = module_runner("nodes_report", {"report_dir": str(tmp_path)})
    assert refused["failed"] is True and refused["msg"] == "%s: a node's record must be a JSON object, not an array" % bad
    assert "Traceback" not in json.dumps(refused)
