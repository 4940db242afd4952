"""check-runtime.sh with fake `containerd` executables, directly and through the runtime_check module."""

import os
import re
import shutil
import stat
import subprocess

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import runtime_check
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "containerd")
DUMPS = os.path.join(FIXTURES, "dumps")
CASES = yaml.safe_load(open(os.path.join(FIXTURES, "check_cases.yml"), encoding="utf-8"))["cases"]
# The script's own tools; PATH in these tests holds only these (and a fake containerd), so a real
# /usr/bin/containerd on the test machine is never found by accident.
TOOLS = ("bash", "awk", "mktemp", "rm", "tr", "sed", "cat", "env")


@pytest.fixture
def toolbin(tmp_path):
    folder = tmp_path / "tools"
    folder.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), folder / tool)
    return str(folder)


@pytest.fixture
def hostbin(tmp_path):
    """Every program of this machine except containerd: Ansible itself runs, containerd is absent."""
    folder = tmp_path / "hostbin"
    folder.mkdir()
    for source in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(source):
            continue
        for name in sorted(os.listdir(source)):
            target = folder / name
            if name.startswith("containerd") or os.path.lexists(target):
                continue
            os.symlink(os.path.join(source, name), target)
    return str(folder)


def fake_containerd(folder, body):
    """A `containerd` that answers only `config dump`."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "containerd")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('#!/bin/bash\nif [ "$*" != "config dump" ]; then echo "fake containerd: unexpected $*" >&2; '
                     "exit 64; fi\n" + body)
    os.chmod(path, 0o755)
    return folder


def dumping(folder, dump):
    return fake_containerd(folder, 'while IFS= read -r l || [ -n "$l" ]; do printf "%%s\\n" "$l"; done < %s\n'
                           % os.path.join(DUMPS, dump))


def failing(folder):
    return fake_containerd(folder, 'echo "containerd: failed to load TOML: /x/config.toml: (3, 1): bad" >&2\n'
                                   'echo "second line" >&2\nexit 1\n')


def install(tmp_path, handler="nvidia"):
    path = str(tmp_path / "bin" / "check-runtime.sh")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(runtime_check.script_content(handler))
    os.chmod(path, 0o755)
    return path


def run_script(script, path):
    return subprocess.run([script], env={"PATH": path}, capture_output=True, text=True, check=False, timeout=30)


# ---------------------------------------------------------------------------------------------
# The script's text
# ---------------------------------------------------------------------------------------------

def test_script_is_deterministic_and_reads_no_config_file():
    text = runtime_check.script_content("nvidia")
    assert text == runtime_check.script_content("nvidia")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "containerd config dump" in text
    assert "config.toml" not in text and "/etc/containerd" not in text
    assert not re.search(r"/containerd\b(?! config dump`)", text.replace("'containerd config dump'", ""))
    assert "python" not in text
    assert "HANDLER='nvidia'" in text


@pytest.mark.parametrize("handler", ["", "nv idia", "nvidia;rm", "a'b", "-x", "nvidia\n", None])
def test_bad_handler_names(handler):
    with pytest.raises(GpuopError, match="handler must be a runtime name"):
        runtime_check.script_content(handler)


# ---------------------------------------------------------------------------------------------
# The script, run directly
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_script_against_fake_dumps(case, tmp_path, toolbin):
    script = install(tmp_path, case["handler"])
    fake = dumping(str(tmp_path / "fake"), case["dump"])
    proc = run_script(script, fake + os.pathsep + toolbin)
    assert proc.returncode == case["exit"], proc.stderr
    if case["exit"] == 1:
        assert proc.stderr.count("\n") == 1 and case["handler"] in proc.stderr


def test_script_failing_dump(tmp_path, toolbin):
    proc = run_script(install(tmp_path), failing(str(tmp_path / "fake")) + os.pathsep + toolbin)
    assert proc.returncode == runtime_check.EXIT_DUMP_FAILED
    assert proc.stderr.count("\n") == 1
    assert "containerd config dump' failed with exit code 1" in proc.stderr and "(3, 1): bad" in proc.stderr


def test_script_empty_dump(tmp_path, toolbin):
    proc = run_script(install(tmp_path), fake_containerd(str(tmp_path / "fake"), "exit 0\n") + os.pathsep + toolbin)
    assert proc.returncode == runtime_check.EXIT_DUMP_FAILED and proc.stderr.count("\n") == 1


def test_script_without_containerd(tmp_path, toolbin):
    proc = run_script(install(tmp_path), toolbin)
    assert proc.returncode == runtime_check.EXIT_NO_CONTAINERD
    assert proc.stderr == "check-runtime: containerd not found on PATH; cannot read the loaded configuration\n"


def test_run_check_interprets(tmp_path, toolbin):
    script = install(tmp_path)
    fake = dumping(str(tmp_path / "fake"), "containerd-1.6.20-lab-pair.toml")
    env = {"PATH": toolbin}
    assert runtime_check.run_check(script, "nvidia", fake, env=env)["handler_loaded"] is True
    fake2 = dumping(str(tmp_path / "fake2"), "containerd-1.6.20-main-only.toml")
    answer = runtime_check.run_check(script, "nvidia", fake2, env=env)
    assert answer["handler_loaded"] is False and answer["exit_code"] == 1 and "nvidia" in answer["stderr"]
    with pytest.raises(GpuopError, match=r"exit code 2\): check-runtime: containerd not found on PATH"):
        runtime_check.run_check(script, "nvidia", None, env=env)


# ---------------------------------------------------------------------------------------------
# Through the runtime_check module
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def run(module_runner):
    """The shared module runner (tests/conftest.py), under a shorter name."""
    return module_runner


def test_module_installs_idempotently_with_check_and_diff(tmp_path, run):
    dest = str(tmp_path / "bin" / "check-runtime.sh")
    checked = run("runtime_check", {"dest": dest}, check=True, diff=True)
    assert checked["changed"] is True and not os.path.exists(dest)
    assert checked["diff"]["after"] == runtime_check.script_content("nvidia")
    first = run("runtime_check", {"dest": dest}, diff=True)
    assert first["changed"] is True and first["handler_loaded"] is None
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o755
    assert open(dest, encoding="utf-8").read() == runtime_check.script_content("nvidia")
    second = run("runtime_check", {"dest": dest}, diff=True)
    assert second["changed"] is False and "diff" not in second
    os.chmod(dest, 0o644)
    assert run("runtime_check", {"dest": dest})["changed"] is True
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o755


@pytest.mark.parametrize("dump, loaded", [
    ("containerd-1.6.20-lab-pair.toml", True),
    ("containerd-2.x-v4-nvidia.toml", True),
    ("containerd-1.6.20-main-only.toml", False),
    ("decoy-cdi-legacy.toml", False),
    ("decoy-values-comments.toml", False),
])
def test_module_runs_with_fake_containerd_first_on_path(dump, loaded, tmp_path, run, hostbin):
    dest = str(tmp_path / "bin" / "check-runtime.sh")
    fake = dumping(str(tmp_path / "fake"), dump)
    result = run("runtime_check", {"dest": dest, "run": True, "path": fake}, env={"PATH": hostbin})
    assert result.get("failed") is not True, result
    assert result["handler_loaded"] is loaded and result["exit_code"] == (0 if loaded else 1)
    mismatch = run("runtime_check", {"dest": dest, "path": fake, "expect_loaded": not loaded}, env={"PATH": hostbin})
    assert mismatch["failed"] is True and mismatch["handler_loaded"] is loaded
    assert mismatch["msg"].startswith("runtime handler 'nvidia' is %s" % ("loaded" if loaded else "not loaded"))
    match = run("runtime_check", {"dest": dest, "path": fake, "expect_loaded": loaded}, env={"PATH": hostbin})
    assert match.get("failed") is not True and match["changed"] is False


def test_module_check_mode_runs_a_temporary_copy(tmp_path, run, hostbin):
    dest = str(tmp_path / "bin" / "check-runtime.sh")
    fake = dumping(str(tmp_path / "fake"), "containerd-2.x-v4-nvidia.toml")
    result = run("runtime_check", {"dest": dest, "run": True, "path": fake}, check=True, env={"PATH": hostbin})
    assert result["changed"] is True and result["handler_loaded"] is True and not os.path.exists(dest)


@pytest.mark.parametrize("kind, pattern", [
    ("failing", r"exit code 3\): check-runtime: 'containerd config dump' failed with exit code 1: "),
    ("missing", r"exit code 2\): check-runtime: containerd not found on PATH"),
])
def test_module_fails_when_the_check_cannot_answer(kind, pattern, tmp_path, run, hostbin):
    dest = str(tmp_path / "bin" / "check-runtime.sh")
    args = {"dest": dest, "run": True}
    if kind == "failing":
        args["path"] = failing(str(tmp_path / "fake"))
    result = run("runtime_check", args, env={"PATH": hostbin})
    assert result["failed"] is True and re.search(pattern, result["msg"]), result["msg"]
    assert result["handler_loaded"] is None and result["exit_code"] in (2, 3)
    assert "Traceback (most recent call last)" not in str(result)


def test_module_rejects_a_bad_handler(tmp_path, run):
    result = run("runtime_check", {"dest": str(tmp_path / "x.sh"), "handler": "nv idia"})
    assert result["failed"] is True and result["msg"].startswith("handler must be a runtime name")
    assert not os.path.exists(tmp_path / "x.sh")
