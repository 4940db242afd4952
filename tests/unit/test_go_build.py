"""gpuop.go_build: the cached build of a pin, made once, also when several runs build it at the same moment.

The pure parts as data tables; ``ensure`` with a stand-in ``go`` (a shell script that logs each call and
writes the binary ``-o`` names, slowly) in processes of their own, the way two playbooks would run it.
"""

import fcntl
import multiprocessing
import os
import stat

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import go_build
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

BINARIES = [{"name": "containerd", "package": "example.com/cmd/containerd"},
            {"name": "ctr", "package": "example.com/cmd/ctr"},
            {"name": "crictl", "package": "example.com/cmd/crictl"}]
NAMES = [b["name"] for b in BINARIES]

# Logs "<pid> <args>" per call; `build` sleeps $FAKE_GO_DELAY, then writes a script printing the package as its version.
FAKE_GO = r"""#!/bin/sh
echo "$$ $*" >> "$FAKE_GO_LOG"
if [ "$1" = build ]; then
  [ -n "$FAKE_GO_FAIL" ] && case "$*" in *"$FAKE_GO_FAIL"*) echo "cannot find package $FAKE_GO_FAIL" >&2; exit 1;; esac
  sleep "${FAKE_GO_DELAY:-0}"
  while [ $# -gt 0 ]; do if [ "$1" = -o ]; then out=$2; fi; pkg=$1; shift; done
  printf '#!/bin/sh\necho "version of %s"\n' "$pkg" > "$out"
  chmod 755 "$out"
fi
"""


@pytest.mark.parametrize("dest_exists, missing, expected", [
    (False, NAMES, "build"),
    (True, [], "keep"),
    (True, ["containerd"], "replace"),
])
def test_plan(dest_exists, missing, expected):
    assert go_build.plan(dest_exists, missing) == expected


@pytest.mark.parametrize("entries, expected", [
    (["abc", "abc.lock", "abc.tmp-1", "abc.tmp-zz", "abcd.tmp-1", "other.tmp-1"], ["abc.tmp-1", "abc.tmp-zz"]),
    (["abc"], []),
])
def test_stale_temps_are_only_the_pins_own(entries, expected):
    assert go_build.stale_temps(entries, "abc") == expected


@pytest.mark.parametrize("tags, expected", [
    ((), ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "/o/x", "pkg/x"]),
    (["no_zfs", "no_btrfs"], ["go", "build", "-trimpath", "-tags", "no_zfs,no_btrfs", "-ldflags", "-s -w", "-o", "/o/x", "pkg/x"]),
])
def test_build_argv(tags, expected):
    assert go_build.build_argv("go", "pkg/x", "/o/x", "-s -w", tags) == expected


@pytest.fixture
def setup(tmp_path, monkeypatch):
    go = tmp_path / "fake-go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/pin\n")
    (module / "go.sum").write_text("")
    log = tmp_path / "go.log"
    log.write_text("")
    monkeypatch.setenv("FAKE_GO_LOG", str(log))
    cache = tmp_path / "cache"
    params = {"dest": str(cache / "0123456789abcdef"), "module_dir": str(module), "go": str(go),
              "binaries": BINARIES, "ldflags": "-s -w", "tags": [], "version_check": None, "lock_timeout": 60}
    return params, log, cache


def builds(log):
    return sorted(line.split()[-1] for line in log.read_text().splitlines() if line.split()[1] == "build")


def _ensure_in_a_process(params, queue):
    try:
        queue.put(go_build.ensure(params))
    except GpuopError as exc:
        queue.put({"error": exc.msg})


def test_two_runs_at_once_build_once_and_both_find_every_binary(setup, monkeypatch):
    params, log, cache = setup
    monkeypatch.setenv("FAKE_GO_DELAY", "0.3")
    queue = multiprocessing.get_context("fork").Queue()
    runs = [multiprocessing.get_context("fork").Process(target=_ensure_in_a_process, args=(params, queue))
            for _ in range(2)]
    for run in runs:
        run.start()
    results = [queue.get(timeout=60) for _ in runs]
    for run in runs:
        run.join(60)
    assert all("error" not in r for r in results), results
    assert builds(log) == sorted(b["package"] for b in BINARIES)  # each binary built once, by one of them
    first, second = sorted(results, key=lambda r: len(r["built"]), reverse=True)
    assert first["changed"] is True and first["built"] == NAMES
    assert second["changed"] is False and second["built"] == [] and second["lock_waited"] >= 0.5
    assert sorted(os.listdir(cache / "0123456789abcdef" / "bin")) == sorted(NAMES)
    assert sorted(os.listdir(cache)) == ["0123456789abcdef", "0123456789abcdef.lock"]  # no temporary folder left


def test_the_folder_the_race_left_is_built_again_and_a_killed_builds_temp_removed(setup):
    # What two runs left on 2026-12-05 before the lock: a folder without containerd, and the other run's temporary
    # folder (complete, never renamed).
    params, log, cache = setup
    incomplete = cache / "0123456789abcdef" / "bin"
    incomplete.mkdir(parents=True)
    (incomplete / "ctr").write_text("old")
    (incomplete / "crictl").write_text("old")
    left = cache / "0123456789abcdef.tmp-7ovuc7nx" / "bin"
    left.mkdir(parents=True)
    other_pin = cache / "fedcba9876543210.tmp-abc"
    other_pin.mkdir()
    result = go_build.ensure(params)
    assert result["changed"] is True and result["replaced_incomplete"] == ["containerd"]
    assert result["removed_temps"] == [str(cache / "0123456789abcdef.tmp-7ovuc7nx")]
    assert sorted(os.listdir(incomplete)) == sorted(NAMES) and (incomplete / "ctr").read_text() != "old"
    assert other_pin.is_dir()  # another pin's build is not this lock's to touch
    again = go_build.ensure(params)
    assert again["changed"] is False and again["built"] == [] and len(builds(log)) == 3


def test_check_mode_builds_and_locks_nothing(setup):
    params, log, cache = setup
    result = go_build.ensure(params, check_mode=True)
    assert result["changed"] is True and result["built"] == NAMES
    assert not cache.exists() and builds(log) == []


def test_a_failed_build_caches_nothing_and_names_the_command(setup, monkeypatch):
    params, log, cache = setup
    monkeypatch.setenv("FAKE_GO_FAIL", "example.com/cmd/ctr")
    with pytest.raises(GpuopError) as exc:
        go_build.ensure(params)
    assert exc.value.msg.startswith("go build of ctr (example.com/cmd/ctr) failed (exit 1):\n")
    assert "cannot find package example.com/cmd/ctr" in exc.value.msg
    assert sorted(os.listdir(cache)) == ["0123456789abcdef.lock"]


def test_the_version_check(setup):
    params, log, cache = setup
    params["version_check"] = {"binary": "ctr", "expect": "v1.36.1"}
    with pytest.raises(GpuopError) as exc:
        go_build.ensure(params)
    assert exc.value.msg == ("ctr --version says 'version of example.com/cmd/ctr', expected it to contain 'v1.36.1': "
                             "the pin and the version stamp disagree")
    assert sorted(os.listdir(cache)) == ["0123456789abcdef.lock"]
    params["version_check"] = {"binary": "ctr", "expect": "example.com/cmd/ctr"}
    assert go_build.ensure(params)["changed"] is True


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(binaries=BINARIES + BINARIES[:1]), "binaries must list at least one binary, each name once"),
    (lambda p: p.update(binaries=[{"name": "../x", "package": "p"}]), "binaries: '../x' is not a file name"),
    (lambda p: p.update(version_check={"binary": "kube-apiserver", "expect": "v1"}),
     "version_check.binary 'kube-apiserver' is not one of binaries"),
    (lambda p: os.remove(os.path.join(p["module_dir"], "go.sum")), "has no go.sum"),
])
def test_bad_input_is_one_message(setup, change, message):
    params, log, cache = setup
    change(params)
    with pytest.raises(GpuopError) as exc:
        go_build.ensure(params)
    assert message in exc.value.msg
    assert builds(log) == []


def test_a_lock_held_too_long_fails_naming_it(setup):
    params, log, cache = setup
    cache.mkdir()
    with open(params["dest"] + ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        params["lock_timeout"] = 0
        with pytest.raises(GpuopError) as exc:
            go_build.ensure(params)
    assert exc.value.msg.startswith("another run has been building %s for more than 0s" % params["dest"])
    assert builds(log) == []
