"""containerd_sandbox_plan: one sandbox per major version, the wrappers, and the walk decision (data tables)."""

import os

import pytest

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_sandbox_plan as plan_mod
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

# The wrapper the role's template wrote before this module (a lab run of 2026-12-04, byte for byte).
WRAPPER_1 = (
    "#!/bin/sh\n"
    "# containerd as sandbox containerd-1 runs it: the lab's main file, from the daemon's working directory.\n"
    "# Put first on PATH for step 4's check-runtime.sh (which calls `containerd config dump`).\n"
    "# Written by the containerd_sandbox role; edits are overwritten.\n"
    "cd / || exit 3\n"
    "exec /usr/bin/containerd --config /root/gpuop/etc/containerd/config.toml \"$@\"\n")


def test_the_wrapper_is_the_one_the_template_wrote():
    [daemon] = plan_mod.name_sandboxes("/root/gpuop/var", [("/usr/bin/containerd", "/usr/bin/ctr", "1.6.20~ds1")])
    assert plan_mod.wrapper_script(daemon, "/", "/root/gpuop/etc/containerd/config.toml") == WRAPPER_1


def test_paths_with_spaces_are_quoted():
    [daemon] = plan_mod.name_sandboxes("/v", [("/opt/my bins/containerd", "/x/ctr", "2.4.2")])
    assert "exec '/opt/my bins/containerd' --config '/a b/config.toml'" in plan_mod.wrapper_script(daemon, "/", "/a b/config.toml")


def test_one_sandbox_per_major_version():
    daemons = plan_mod.name_sandboxes("/v", [("/usr/bin/containerd", "/usr/bin/ctr", "1.6.20~ds1"),
                                             ("/b/containerd", "/b/ctr", "2.4.2")])
    assert [(d["name"], d["major"], d["address"], d["wrapper_dir"]) for d in daemons] == [
        ("containerd-1", 1, "/v/containerd-1/containerd.sock", "/v/containerd-1/bin"),
        ("containerd-2", 2, "/v/containerd-2/containerd.sock", "/v/containerd-2/bin")]


@pytest.mark.parametrize("found,message", [
    ([("/a", "/a-ctr", "2.0.0"), ("/b", "/b-ctr", "2.4.2")], "Two containerd binaries have the same major version"),
    ([("/a", "/a-ctr", "dev")], "no major version number"),
])
def test_bad_versions(found, message):
    with pytest.raises(GpuopError, match=message):
        plan_mod.name_sandboxes("/v", found)


@pytest.mark.parametrize("enabled,check,report,recorded,walk,matches", [
    (True, False, False, "", True, False),       # first run: no record
    (True, False, True, "abc", False, True),     # re-run with the same inputs: the record holds
    (True, False, True, "old", True, False),     # inputs changed
    (True, False, False, "abc", True, True),     # record but the report was removed
    (True, True, False, "", False, False),       # check mode never walks
    (False, False, False, "", False, False),     # no sandbox here
])
def test_the_walk_decision(enabled, check, report, recorded, walk, matches):
    record = {"fingerprint": recorded} if recorded else {}
    assert plan_mod.decide(enabled, check, report, record, "abc") == {"walk": walk, "record_matches": matches}


def test_the_fingerprint_ignores_the_root():
    one = plan_mod.fingerprint({"main": "/r1/etc/containerd/config.toml"}, "/r1")
    two = plan_mod.fingerprint({"main": "/r2/etc/containerd/config.toml"}, "/r2")
    assert one == two and one != plan_mod.fingerprint({"main": "/r2/etc/other.toml"}, "/r2")


def test_plan_writes_the_wrappers_and_fills_the_versions(tmp_path):
    params = {"candidates": [{"containerd": "/usr/bin/containerd", "ctr": "/usr/bin/ctr"}], "var_dir": str(tmp_path / "var"),
              "config": "/lab/config.toml", "cwd": "/", "enabled": True, "disabled_reason": "", "root": "/lab",
              "fingerprint_inputs": {"daemons": None}, "record_dest": str(tmp_path / "rec.json"),
              "report_dest": str(tmp_path / "rep.md")}
    result = plan_mod.plan(params, version_of=lambda binary: "1.6.20~ds1")
    wrapper = tmp_path / "var" / "containerd-1" / "bin" / "containerd"
    assert result["changed"] and result["walk"] and wrapper.stat().st_mode & 0o777 == 0o755
    assert os.stat(tmp_path / "var").st_mode & 0o777 == 0o700
    assert result["fingerprint"] == plan_mod.fingerprint({"daemons": ["1.6.20~ds1"]}, "/lab")
    again = plan_mod.plan(params, version_of=lambda binary: "1.6.20~ds1")
    assert not again["changed"]
    (tmp_path / "rec.json").write_text('{"fingerprint": "%s"}' % result["fingerprint"])
    (tmp_path / "rep.md").write_text("report\n")
    assert plan_mod.plan(params, version_of=lambda binary: "1.6.20~ds1")["walk"] is False


def test_a_record_that_is_not_json_is_named(tmp_path):
    (tmp_path / "rec.json").write_text("{half")
    params = {"candidates": [], "var_dir": str(tmp_path), "config": "/c", "cwd": "/", "enabled": False, "disabled_reason": "x",
              "root": "/", "fingerprint_inputs": {}, "record_dest": str(tmp_path / "rec.json"), "report_dest": str(tmp_path / "r")}
    with pytest.raises(GpuopError, match="rec.json is not the JSON record of a walk"):
        plan_mod.plan(params)
