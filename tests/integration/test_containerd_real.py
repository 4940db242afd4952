"""The containerd 1.x prediction against the real containerd binary (Debian's 1.6.20).

Runs ``/usr/bin/containerd --config <main> config dump`` from each case's ``daemon_cwd``: that
re-reads the files and prints the merged config; it starts no daemon and touches nothing outside
the case's temporary folder. The dump can print a config on which the CRI plugin would fail, so
``cri_loads`` is derived as containerd's CRI validation does it: ``default_runtime_name`` must name
a runtime under ``containerd.runtimes``.

Fails (does not skip) when /usr/bin/containerd is absent, unless GPUOP_ALLOW_NO_CONTAINERD=1.
"""

import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
from test_containerd_merge import cwd_of, materialize  # noqa: E402  (shared case writer)

CONTAINERD = "/usr/bin/containerd"
TABLE = yaml.safe_load(open(os.path.join(ROOT, "tests", "fixtures", "containerd", "merge_cases.yml"), encoding="utf-8"))
CASES = [case for case in TABLE["cases"] if case.get("real")]
CRI = "io.containerd.grpc.v1.cri"


@pytest.fixture(scope="module")
def containerd():
    if not os.path.exists(CONTAINERD):
        if os.environ.get("GPUOP_ALLOW_NO_CONTAINERD") == "1":
            pytest.skip("%s absent and GPUOP_ALLOW_NO_CONTAINERD=1" % CONTAINERD)
        pytest.fail("%s is absent: install Debian's containerd (apt-get install -y containerd), or set "
                    "GPUOP_ALLOW_NO_CONTAINERD=1 to skip this check" % CONTAINERD)
    version = subprocess.run([CONTAINERD, "--version"], capture_output=True, text=True, check=True).stdout
    if not re.search(r"\s1\.\d+\.\d+", version):
        pytest.fail("these cases check the containerd 1.x prediction; %s is %s" % (CONTAINERD, version.strip()))
    return CONTAINERD


def observe(binary, config, cwd):
    """What the real binary loads: runtimes, default_runtime_name, cri_loads, SystemdCgroup, or the error."""
    proc = subprocess.run([binary, "--config", config, "config", "dump"], cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=60)
    if proc.returncode != 0:
        return {"failed": True, "stderr": proc.stderr.strip()}
    dump = tomllib.loads(proc.stdout)
    section = dump["plugins"][CRI]["containerd"]
    runtimes = section.get("runtimes", {})
    default = section.get("default_runtime_name", "")
    return {
        "failed": False,
        "runtimes": sorted(runtimes),
        "default_runtime_name": default,
        "cri_loads": default in runtimes,
        "systemd_cgroup": {n: r.get("options", {}).get("SystemdCgroup", False) is True for n, r in runtimes.items()},
    }


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_containerd_1_prediction_matches_the_real_binary(case, tmp_path, containerd):
    config = materialize(case, tmp_path)
    cwd = cwd_of(case, tmp_path)
    seen = observe(containerd, config, cwd)
    predicted = containerd_merge.analyze(config, cwd, case["loaded_runtimes"])["predicted"]["containerd_1"]
    want = case["containerd_1"]
    if seen["failed"]:
        assert want["error"] and want["error"] in seen["stderr"], seen["stderr"]
        assert predicted["cri_loads"] is False and predicted["error"] in seen["stderr"]
        return
    # The binary agrees with the table (the domain facts) ...
    assert seen["runtimes"] == sorted(want["runtimes"])
    assert seen["default_runtime_name"] == want["default_runtime_name"]
    assert seen["cri_loads"] is want["cri_loads"]
    for name, value in want.get("systemd_cgroup", {}).items():
        assert seen["systemd_cgroup"][name] is value, name
    # ... and the prediction agrees with the binary, defaults filled in included.
    assert predicted["runtimes"] == seen["runtimes"]
    assert predicted["default_runtime_name"] == seen["default_runtime_name"]
    assert predicted["cri_loads"] is seen["cri_loads"]
    assert {n: d["systemd_cgroup"] for n, d in predicted["runtime_details"].items()} == seen["systemd_cgroup"]
    if not seen["cri_loads"]:
        assert predicted["error"] == ('invalid plugin config: no corresponding runtime configured in '
                                      'containerd.runtimes for containerd default_runtime_name = "%s"'
                                      % seen["default_runtime_name"])


def test_relative_glob_depends_on_the_working_directory(tmp_path, containerd):
    """The same files, from / and from the config's folder: containerd 1.6 globs against its cwd."""
    case = next(c for c in TABLE["cases"] if c["name"] == "relative-glob-from-root")
    config = materialize(case, tmp_path)
    from_root = observe(containerd, config, "/")
    from_dir = observe(containerd, config, os.path.dirname(config))
    assert from_root["runtimes"] == ["runc"] and from_root["cri_loads"] is True
    assert from_dir["runtimes"] == ["nvidia"] and from_dir["cri_loads"] is False
    for cwd, seen in (("/", from_root), (os.path.dirname(config), from_dir)):
        predicted = containerd_merge.analyze(config, cwd)["predicted"]["containerd_1"]
        assert predicted["runtimes"] == seen["runtimes"] and predicted["cri_loads"] is seen["cri_loads"]
