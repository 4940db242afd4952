"""containerd_merge: data tables over the pure logic, then the module through Ansible."""

import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = yaml.safe_load(open(os.path.join(ROOT, "tests", "fixtures", "containerd", "merge_cases.yml"), encoding="utf-8"))
CASES = TABLE["cases"]
BAD = TABLE["bad_input"]
MAIN = "etc/containerd/config.toml"


@pytest.fixture
def run(module_runner):
    """The shared module runner (tests/conftest.py), under a shorter name."""
    return module_runner


def materialize(case, folder):
    """Write a case's files under ``folder`` (``@DIR@`` -> folder); return the main config path."""
    folder = str(folder)
    for rel in case.get("dirs", []):
        os.makedirs(os.path.join(folder, rel), exist_ok=True)
    for rel, text in case["files"].items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = text.replace("@DIR@", folder)
        if case.get("binary"):
            with open(path, "wb") as handle:
                handle.write(text.encode("latin-1"))
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    return os.path.join(folder, case.get("config", MAIN))


def cwd_of(case, folder):
    return case.get("daemon_cwd", "/").replace("@DIR@", str(folder))


def check_prediction(got, want, label):
    assert got["runtimes"] == sorted(want["runtimes"]), label
    assert got["default_runtime_name"] == want["default_runtime_name"], label
    assert got["cri_loads"] is want["cri_loads"], label
    if want["error"] is None:
        assert got["error"] is None, label
    else:
        assert want["error"] in (got["error"] or ""), label
    for name, value in want.get("systemd_cgroup", {}).items():
        assert got["runtime_details"][name]["systemd_cgroup"] is value, "%s %s" % (label, name)
    assert got["reason"], label


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_merge_cases(case, tmp_path):
    config = materialize(case, tmp_path)
    result = containerd_merge.analyze(config, cwd_of(case, tmp_path), case["loaded_runtimes"])
    assert dict(containerd_merge.merge_lines(result)) == case["merge"]
    check_prediction(result["predicted"]["containerd_1"], case["containerd_1"], "containerd_1")
    check_prediction(result["predicted"]["containerd_2"], case["containerd_2"], "containerd_2")
    assert len(result["warnings"]) == len(case["warnings"]), result["warnings"]
    for want in case["warnings"]:
        assert any(want in got for got in result["warnings"]), (want, result["warnings"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_merge_txt_is_five_lines_in_order(case, tmp_path):
    config = materialize(case, tmp_path)
    text = containerd_merge.render_merge_txt(containerd_merge.analyze(config, cwd_of(case, tmp_path),
                                                                      case["loaded_runtimes"]))
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 6
    assert [line.split("=", 1)[0] for line in lines[:5]] == [
        "MAIN_RUNTIMES", "DROPIN_RUNTIMES", "CONFLICT", "CONFLICT_TABLE", "LOADED_RUNTIMES"]


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_bad_input(case, tmp_path):
    config = materialize(case, tmp_path)
    pattern = case["error"].replace("@DIR@", re.escape(str(tmp_path)))
    with pytest.raises(GpuopError) as info:
        containerd_merge.analyze(config, case.get("daemon_cwd", "/"), case.get("loaded_runtimes"))
    assert re.search(pattern, str(info.value)), str(info.value)
    assert "\n" not in str(info.value)


def test_seed_pair_report_says_written_computed_observed(tmp_path):
    config = materialize(CASES[0], tmp_path)
    report = containerd_merge.render_report(containerd_merge.analyze(config, "/", ["runc"]))
    for line in ("| `MAIN_RUNTIMES` | `runc` | written", "| `DROPIN_RUNTIMES` | `nvidia` | written",
                 "| `CONFLICT` | `yes` | computed", "| `LOADED_RUNTIMES` | `runc` | observed"):
        assert line in report
    assert "containerd 1.x" in report and "containerd 2.x" in report
    assert 'default_runtime_name = "runc"' in report
    assert "replaces a whole plugin section" in report and "deep-merges" in report


@pytest.mark.parametrize("entry, major, cwd, want", [
    ("conf.d/*.toml", 1, "/", ("/conf.d/*.toml", True)),
    ("conf.d/*.toml", 1, "/srv", ("/srv/conf.d/*.toml", True)),
    ("conf.d/*.toml", 2, "/", ("/cfg/conf.d/*.toml", True)),
    ("conf.d/x.toml", 1, "/", ("/cfg/conf.d/x.toml", False)),
    ("conf.d/x.toml", 2, "/", ("/cfg/conf.d/x.toml", False)),
    ("/abs/d/*.toml", 1, "/", ("/abs/d/*.toml", True)),
    ("/abs/./d/../d/x.toml", 2, "/", ("/abs/d/x.toml", False)),
    ("conf.d/?.toml", 2, "/", ("/cfg/conf.d/?.toml", False)),
])
def test_resolve_import(entry, major, cwd, want):
    pattern, is_glob, _ = containerd_merge.resolve_import("/cfg/config.toml", entry, major, cwd)
    assert (pattern, is_glob) == want


def test_glob_is_sorted_and_matches_dotfiles_like_go(tmp_path):
    for name in ("b.toml", "a.toml", ".hidden.toml", "c.txt", "A.toml"):
        (tmp_path / name).write_text("")
    got = [os.path.basename(p) for p in containerd_merge.go_glob(str(tmp_path / "*.toml"))]
    assert got == [".hidden.toml", "A.toml", "a.toml", "b.toml"]


@pytest.mark.parametrize("segments, want", [
    (["plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes"],
     'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'),
    (["plugins", "io.containerd.cri.v1.runtime"], 'plugins."io.containerd.cri.v1.runtime"'),
    (["a-b_c", 'q"x'], 'a-b_c."q\\"x"'),
])
def test_table_path(segments, want):
    assert containerd_merge.table_path(segments) == want


# ---------------------------------------------------------------------------------------------
# The module, through `ansible localhost -m`
# ---------------------------------------------------------------------------------------------

def test_module_writes_idempotently_with_check_and_diff(tmp_path, run):
    config = materialize(CASES[0], tmp_path)
    dest, report = str(tmp_path / "out" / "merge.txt"), str(tmp_path / "out" / "merge-report.md")
    args = {"config": config, "dest": dest, "report_dest": report, "loaded_runtimes": ["runc"]}
    checked = run("containerd_merge", args, check=True, diff=True)
    assert checked["changed"] is True and not os.path.exists(dest) and not os.path.exists(tmp_path / "out")
    assert any("MAIN_RUNTIMES=runc" in d["after"] for d in checked["diff"])
    first = run("containerd_merge", args, diff=True)
    assert first["changed"] is True
    assert open(dest, encoding="utf-8").read() == (
        "MAIN_RUNTIMES=runc\nDROPIN_RUNTIMES=nvidia\nCONFLICT=yes\n"
        'CONFLICT_TABLE=plugins."io.containerd.grpc.v1.cri".containerd.runtimes\nLOADED_RUNTIMES=runc\n')
    before = (open(dest, "rb").read(), open(report, "rb").read())
    second = run("containerd_merge", args, diff=True)
    assert second["changed"] is False and "diff" not in second
    assert (open(dest, "rb").read(), open(report, "rb").read()) == before
    pred = second["predicted"]
    assert pred["containerd_1"]["cri_loads"] is False and pred["containerd_1"]["runtimes"] == ["nvidia"]
    assert pred["containerd_2"]["cri_loads"] is True and pred["containerd_2"]["runtimes"] == ["nvidia", "runc"]


def test_module_warns_for_a_glob_matching_nothing(tmp_path, run):
    config = materialize(CASES[1], tmp_path)
    result = run("containerd_merge", {"config": config})
    assert result.get("failed") is not True
    assert any("matches nothing" in w for w in result["warnings"])


@pytest.mark.parametrize("case", [c for c in BAD if c["name"] in ("malformed-dropin", "missing-main", "runtimes-not-a-table")],
                         ids=lambda c: c["name"])
def test_module_fails_once_without_traceback_or_output(case, tmp_path, run):
    config = materialize(case, tmp_path)
    dest = str(tmp_path / "out" / "merge.txt")
    result = run("containerd_merge", {"config": config, "dest": dest, "report_dest": dest + ".md"})
    assert result["failed"] is True
    assert re.search(case["error"].replace("@DIR@", re.escape(str(tmp_path))), result["msg"]), result["msg"]
    # ansible-core 2.19 always adds exception="(traceback unavailable)" to a failure; no real traceback here.
    assert "Traceback (most recent call last)" not in str(result) and "module_stderr" not in result
    assert not os.path.exists(dest) and not os.path.exists(dest + ".md")


def test_adhoc_command_prints_both_predictions(tmp_path):
    config = materialize(CASES[0], tmp_path)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible"), "localhost", "-m", "gpuop.gates.containerd_merge",
                           "-a", "config=%s" % config], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "containerd_1" in proc.stdout and "containerd_2" in proc.stdout
    assert 'default_runtime_name = \\"runc\\"' in proc.stdout or 'default_runtime_name = "runc"' in proc.stdout
