"""file_set on the real filesystem: folders and files made once, modes kept, check mode writes nothing, bad input first."""

import os
import stat

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.file_set import parse_mode, run
from gpuop_testlib import run_module


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("value, expected", [
    ("0644", 0o644), ("755", 0o755), ("0700", 0o700), (0o600, 0o600), (493, 0o755), ("01777", 0o1777),
])
def test_modes(value, expected):
    assert parse_mode(value, "x") == expected


@pytest.mark.parametrize("value", ["0898", "rw-r--r--", "", True, None, 1.5, -1, 0o17777, "99999"])
def test_bad_modes_name_the_item(value):
    with pytest.raises(GpuopError) as err:
        parse_mode(value, "files[0] (/x)")
    assert str(err.value).startswith("files[0] (/x): mode %r is not an octal file mode" % (value,))


def test_folders_then_files_then_nothing_to_do(tmp_path):
    params = {"directories": [{"path": str(tmp_path / "a" / "b"), "mode": "0700"}, {"path": str(tmp_path / "c")}],
              "files": [{"path": str(tmp_path / "c" / "x.toml"), "content": "version = 2\n"},
                        {"path": str(tmp_path / "d" / "run.sh"), "content": "#!/bin/sh\n", "mode": "0755"}]}
    preview = run(params, check_mode=True)
    assert preview["changed"] is True and all(i["changed"] for i in preview["directories"] + preview["files"])
    assert os.listdir(tmp_path) == []
    first = run(params)
    assert [i["changed"] for i in first["directories"] + first["files"]] == [True, True, True, True]
    assert _mode(tmp_path / "a" / "b") == 0o700 and _mode(tmp_path / "c") == 0o755
    assert (tmp_path / "c" / "x.toml").read_text() == "version = 2\n" and _mode(tmp_path / "c" / "x.toml") == 0o644
    assert _mode(tmp_path / "d" / "run.sh") == 0o755
    mtime = os.stat(tmp_path / "c" / "x.toml").st_mtime_ns
    again = run(params)
    assert again == {"changed": False, "diff": [],
                     "directories": [{"path": p["path"], "changed": False} for p in params["directories"]],
                     "files": [{"path": p["path"], "changed": False} for p in params["files"]], "absent": []}
    assert os.stat(tmp_path / "c" / "x.toml").st_mtime_ns == mtime


def test_a_mode_changed_by_hand_is_put_back(tmp_path):
    folder = tmp_path / "f"
    params = {"directories": [{"path": str(folder), "mode": "0750"}],
              "files": [{"path": str(folder / "x"), "content": "x\n", "mode": "0600"}]}
    run(params)
    os.chmod(folder, 0o777)
    os.chmod(folder / "x", 0o644)
    result = run(params)
    assert [i["changed"] for i in result["directories"] + result["files"]] == [True, True]
    assert _mode(folder) == 0o750 and _mode(folder / "x") == 0o600
    assert result["diff"][0]["before"] == "folder, mode 0777\n" and result["diff"][0]["after"] == "folder, mode 0750\n"


@pytest.mark.parametrize("params, message", [
    ({"directories": [{"path": "relative/dir"}]}, "directories[1] (relative/dir): path must be absolute"),
    ({"files": [{"path": "/tmp/x", "content": "", "mode": "0999"}]}, "files[0] (/tmp/x): mode '0999' is not an octal file mode (e.g. \"0644\")"),
])
def test_bad_input_fails_before_anything_is_made(tmp_path, params, message):
    # A good folder comes first: it must not be made either.
    params = dict(params, directories=[{"path": str(tmp_path / "first")}] + params.get("directories", []))
    with pytest.raises(GpuopError) as err:
        run(params)
    assert str(err.value) == message
    assert not (tmp_path / "first").exists()


def test_a_file_in_the_way_of_a_folder(tmp_path):
    (tmp_path / "taken").write_text("a file\n")
    with pytest.raises(GpuopError) as err:
        run({"directories": [{"path": str(tmp_path / "taken")}]})
    assert str(err.value) == "cannot make folder %s: something that is not a folder is in the way" % (tmp_path / "taken")


def test_through_ansible_with_diff(tmp_path):
    args = {"directories": [{"path": str(tmp_path / "etc")}],
            "files": [{"path": str(tmp_path / "etc" / "config.toml"), "content": "version = 2\n"}]}
    result = run_module("file_set", args, diff=True)
    assert result["changed"] is True and result["files"] == [{"path": str(tmp_path / "etc" / "config.toml"), "changed": True}]
    assert (tmp_path / "etc" / "config.toml").read_text() == "version = 2\n"
    assert run_module("file_set", args)["changed"] is False
    bad = run_module("file_set", {"files": [{"path": "x", "content": ""}]})
    assert bad["failed"] is True and bad["msg"] == "files[0] (x): path must be absolute" and "Traceback" not in str(bad)


def test_absent_removes_files_that_are_there_and_only_those(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "99-nvidia.toml").write_text("version = 2\n")
    (tmp_path / "conf.d" / "keep.toml").write_text("kept\n")
    params = {"files": [{"path": str(tmp_path / "config.toml"), "content": "version = 2\n"}],
              "absent": [str(tmp_path / "conf.d" / "99-nvidia.toml"), str(tmp_path / "conf.d" / "never-there.toml")]}
    preview = run(params, check_mode=True)
    assert [i["changed"] for i in preview["absent"]] == [True, False]
    assert (tmp_path / "conf.d" / "99-nvidia.toml").exists() and not (tmp_path / "config.toml").exists()
    first = run(params)
    assert first["changed"] is True and [i["changed"] for i in first["absent"]] == [True, False]
    assert first["diff"][-1] == {"before_header": str(tmp_path / "conf.d" / "99-nvidia.toml"),
                                 "after_header": str(tmp_path / "conf.d" / "99-nvidia.toml"),
                                 "before": "present\n", "after": "absent\n"}
    assert sorted(os.listdir(tmp_path / "conf.d")) == ["keep.toml"]
    again = run(params)
    assert again["changed"] is False and [i["changed"] for i in again["absent"]] == [False, False]


@pytest.mark.parametrize("absent, message", [
    (["relative.toml"], "absent[1] (relative.toml): path must be absolute"),
    (["{tmp}/x.toml"], "absent: {tmp}/x.toml is also in files (a file is either written or removed)"),
])
def test_absent_bad_input_fails_before_anything_is_made(tmp_path, absent, message):
    (tmp_path / "gone.toml").write_text("x\n")
    params = {"files": [{"path": str(tmp_path / "x.toml"), "content": "x\n"}],
              "absent": [str(tmp_path / "gone.toml")] + [a.format(tmp=tmp_path) for a in absent]}
    with pytest.raises(GpuopError) as err:
        run(params)
    assert str(err.value) == message.format(tmp=tmp_path)
    assert (tmp_path / "gone.toml").exists() and not (tmp_path / "x.toml").exists()


def test_absent_refuses_a_folder(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(GpuopError) as err:
        run({"absent": [str(tmp_path / "dir")]})
    assert str(err.value) == "cannot remove %s: it is a folder (absent removes files only)" % (tmp_path / "dir")
    assert (tmp_path / "dir").is_dir()
