"""Hostile and broken input: each gets one clear failure naming the file or field, no traceback, no output.

Pure logic first (data tables over tests/fixtures/hostile; the sharing configs are .txt, the ConfigMap
value as text, some deliberately not YAML), then the real modules through Ansible
(one ``ansible-playbook`` run per module, a loop over the bad inputs, so a traceback, a
``module_stderr`` or a written ``dest`` would show). The cluster side needs no cluster: a
kubeconfig that does not exist, one that is not a kubeconfig, and one that points at a closed
port of 127.0.0.1 (a real socket that refuses, not a mock).
"""

import json
import os
import re
import socket
import subprocess
import tempfile

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge, k8s, node_resources, pod_wait, sharing
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from gpuop_testlib import ROOT, ansible_env

HOSTILE = os.path.join(ROOT, "tests", "fixtures", "hostile")
TOML_CASES = yaml.safe_load(open(os.path.join(HOSTILE, "toml_cases.yml"), encoding="utf-8"))["cases"]
LAB_MAIN = """version = 2
imports = ["@DIR@/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""
# The device plugin's own reasons (k8s-device-plugin api/config/v1) and the field each names.
SHARING_CASES = [
    ("not-yaml.txt", r"^the sharing config is not valid YAML at line 7, column \d+: "),
    ("nul-byte.txt", r"^the sharing config is not valid YAML.*special characters are not allowed"),
    ("list-document.txt", r"^the sharing config is not a YAML mapping but a list"),
    ("replicas-one.txt", r"^invalid sharing config: sharing\.timeSlicing\.resources\[0\]\.replicas: "
                          r"number of replicas must be >= 2 "),
    ("replicas-string.txt", r"^invalid sharing config: sharing\.timeSlicing\.resources\[0\]\.replicas: "
                             r"json: cannot unmarshal string into Go value of type int"),
    ("unknown-version.txt", r"^invalid sharing config: version: unknown version: v2 "),
    ("bad-resource-name.txt", r"^invalid sharing config: sharing\.timeSlicing\.resources\[0\]\.name: incorrect format "
                               r"for resource name 'nvidia\.com/GPU_shared!'"),
    ("foreign-domain.txt", r"^invalid sharing config: sharing\.timeSlicing\.resources\[0\]\.name: incorrect format "
                            r"for resource name 'nvidia\.com/example\.com/gpu'"),
    ("recursive-anchor.txt", r"^invalid sharing config: sharing\.timeSlicing\.resources\[0\]\.devices: "),
]


def _read(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def closed_port():
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def write_kubeconfig(folder, server):
    path = os.path.join(folder, "kubeconfig")
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "nowhere",
           "clusters": [{"name": "nowhere", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
           "users": [{"name": "nowhere", "user": {"token": "not-a-secret"}}],
           "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nowhere"}}]}
    with open(path, "w") as handle:
        yaml.safe_dump(doc, handle)
    os.chmod(path, 0o600)
    return path


def run_loop(module, cases):
    """Run ``module`` once per args dict in ``cases`` (one playbook, failures kept); return the results."""
    with tempfile.TemporaryDirectory(prefix="gpuop-hostile-") as folder:
        playbook = os.path.join(folder, "hostile.yml")
        with open(playbook, "w") as handle:
            yaml.safe_dump([{"name": "hostile", "hosts": "localhost", "gather_facts": False, "tasks": [
                {"name": "call", "gpuop.gates." + module: "{{ item }}", "loop": cases, "ignore_errors": True}]}], handle)
        proc = subprocess.run(
            [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), playbook], cwd=ROOT, capture_output=True,
            text=True, check=False,
            env=ansible_env({"ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json",
                             "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}))
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from ansible-playbook (rc %s):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    assert "Traceback" not in proc.stderr, proc.stderr
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]["results"]


def assert_one_clear_failure(result, pattern):
    assert result.get("failed") is True, result
    assert re.search(pattern, result["msg"]), "%r does not match %r" % (result["msg"], pattern)
    assert "\n" not in result["msg"].strip(), result["msg"]
    # ansible-core 2.19 sets exception="(traceback unavailable)" on every failure; a real one would show.
    assert "Traceback (most recent call last)" not in json.dumps(result), result
    assert "module_stderr" not in result and "module_stdout" not in result, result


# ----------------------------------------------------------------------------- malformed TOML


def _materialize_dropin_case(folder, hostile):
    main = os.path.join(folder, "etc", "containerd", "config.toml")
    dropin = os.path.join(folder, "etc", "containerd", "conf.d", "50-hostile.toml")
    os.makedirs(os.path.dirname(dropin))
    with open(main, "w") as handle:
        handle.write(LAB_MAIN.replace("@DIR@", folder))
    with open(hostile, "rb") as src, open(dropin, "wb") as dst:
        dst.write(src.read())
    return main, dropin


@pytest.mark.parametrize("case", TOML_CASES, ids=[c["file"] for c in TOML_CASES])
def test_malformed_toml_as_main_config(case):
    path = os.path.join(HOSTILE, "toml", case["file"])
    with pytest.raises(GpuopError) as info:
        containerd_merge.analyze(path, "/", ["runc"])
    assert re.search(case["error"].replace("@FILE@", re.escape(path)), info.value.msg), info.value.msg
    assert "\n" not in info.value.msg


@pytest.mark.parametrize("case", TOML_CASES, ids=[c["file"] for c in TOML_CASES])
def test_malformed_toml_as_dropin_names_the_dropin(case, tmp_path):
    main, dropin = _materialize_dropin_case(str(tmp_path), os.path.join(HOSTILE, "toml", case["file"]))
    with pytest.raises(GpuopError) as info:
        containerd_merge.analyze(main, "/", ["runc"])
    assert re.search(case["error"].replace("@FILE@", re.escape(dropin)), info.value.msg), info.value.msg


def test_malformed_toml_through_the_module_fails_once_and_writes_nothing(tmp_path):
    cases, expected = [], []
    for case in TOML_CASES:
        folder = str(tmp_path / case["file"])
        os.makedirs(folder)
        main, dropin = _materialize_dropin_case(folder, os.path.join(HOSTILE, "toml", case["file"]))
        cases.append({"config": main, "dest": folder + "/out/merge.txt", "report_dest": folder + "/out/merge-report.md"})
        expected.append(case["error"].replace("@FILE@", re.escape(dropin)))
    results = run_loop("containerd_merge", cases)
    assert len(results) == len(cases)
    for result, args, pattern in zip(results, cases, expected):
        assert_one_clear_failure(result, pattern)
        assert not os.path.exists(os.path.dirname(args["dest"])), "output written for %s" % args["config"]


# ----------------------------------------------------------------------------- sharing config


@pytest.mark.parametrize("name,pattern", SHARING_CASES, ids=[c[0] for c in SHARING_CASES])
def test_hostile_sharing_config(name, pattern):
    with pytest.raises(GpuopError) as info:
        sharing.compute(_read(os.path.join(HOSTILE, "sharing", name)), 4, 40, product="NVIDIA-A100-SXM4-40GB", advertised=20)
    assert re.search(pattern, info.value.msg), info.value.msg
    assert "\n" not in info.value.msg


@pytest.mark.parametrize("gpus,vram,advertised,pattern", [
    (4, float("inf"), None, r"^vram_per_gpu_gib must be a finite number, got inf$"),
    (4, float("nan"), None, r"^vram_per_gpu_gib must be greater than 0, got nan$"),
    (4, -40, None, r"^vram_per_gpu_gib must be greater than 0"),
    (0, 40, None, r"^physical_gpus must be at least 1"),
    (True, 40, None, r"^physical_gpus must be a whole number"),
    (4, 40, -1, r"^advertised must be a whole number >= 0"),
    (4, 40, "twenty", r"^advertised must be a whole number >= 0"),
])
def test_hostile_sharing_numbers(gpus, vram, advertised, pattern):
    with pytest.raises(GpuopError) as info:
        sharing.compute("version: v1\n", gpus, vram, advertised=advertised)
    assert re.search(pattern, info.value.msg), info.value.msg


def test_hostile_sharing_config_through_the_module_fails_once_and_writes_nothing(tmp_path):
    cases = [{"config": _read(os.path.join(HOSTILE, "sharing", name)), "physical_gpus": 4, "vram_per_gpu_gib": 40,
              "advertised": 20, "dest": str(tmp_path / name / "slots.txt")} for name, _ in SHARING_CASES]
    cases.append({"config": "version: v1\n", "physical_gpus": 4, "vram_per_gpu_gib": "inf", "advertised": 4,
                  "dest": str(tmp_path / "inf" / "slots.txt")})
    results = run_loop("gpu_sharing", cases)
    patterns = [p for _, p in SHARING_CASES] + [r"^vram_per_gpu_gib must be a finite number"]
    for result, args, pattern in zip(results, cases, patterns):
        assert_one_clear_failure(result, pattern)
        assert not os.path.exists(os.path.dirname(args["dest"]))


# ----------------------------------------------------------------------------- names and quantities


@pytest.mark.parametrize("name,pattern", [
    ("gpu", r"needs a domain prefix"),
    ("kubernetes.io/gpu", r"kubernetes\.io domain is reserved"),
    ("requests.nvidia.com/gpu", r"requests\. prefix is reserved"),
    ("nvidia.com/gpu/extra", r"more than one '/'"),
    ("NVIDIA.com/gpu", r"must be a lowercase DNS subdomain"),
    ("nvidia.com/" + "g" * 64, r"must be 1-63 characters"),
    ("nvidia.com/gpu\n", r"must be 1-63 characters"),
    ("nvidia.com/gpü", r"must be 1-63 characters"),
    ("", r"must be a non-empty extended resource name"),
])
def test_resource_name_that_is_not_an_extended_resource(name, pattern):
    with pytest.raises(GpuopError) as info:
        node_resources.validate_resource_name(name)
    assert re.search(pattern, info.value.msg), info.value.msg


@pytest.mark.parametrize("value", [-1, "-1", 0.5, "4Gi", "1e3", float("inf"), float("nan"), True, None, "", "٤", 2 ** 63])
def test_quantity_that_is_not_a_whole_number(value):
    with pytest.raises(GpuopError) as info:
        node_resources.normalize_quantity(value)
    assert re.search(r"^quantity (must be a non-negative whole number|.* is larger than the API can store)", info.value.msg)


@pytest.mark.parametrize("names", [[], ["Lab-Node-0"], ["lab-node-0\n"], ["lab_node_0"], ["lab-node-0", "../etc"], ["x" * 254], [""], [None]])
def test_node_names_that_are_not_node_names(names):
    with pytest.raises(GpuopError) as info:
        node_resources.validate_node_names(names)
    assert re.search(r"^(nodes must name at least one node|node name .* is not a valid node name)", info.value.msg)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1, "soon", True])
def test_a_wait_is_always_bounded(timeout):
    """nan never times out and inf never ends: every wait refuses them before its first look."""
    looks = []
    with pytest.raises(GpuopError) as info:
        k8s.wait_for(lambda: looks.append(1), lambda _: False, timeout, "pod gpu-lab/cuda-probe phase Running")
    assert info.value.msg == ("the wait for pod gpu-lab/cuda-probe phase Running needs a timeout of 0 or more "
                              "seconds, got %r" % (timeout,))
    assert looks == []


# ----------------------------------------------------------------------------- kubeconfig


def test_kubeconfig_that_does_not_exist(tmp_path):
    missing = str(tmp_path / "no-such-kubeconfig")
    with pytest.raises(GpuopError) as info:
        k8s.Cluster(missing)
    assert info.value.msg == "kubeconfig %s does not exist" % missing


@pytest.mark.parametrize("content", ["::: not yaml", "apiVersion: v1\nkind: Config\nclusters: []\n", "- a list\n"])
def test_kubeconfig_that_is_not_a_kubeconfig(tmp_path, content):
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    with pytest.raises(GpuopError) as info:
        k8s.Cluster(str(path))
    assert info.value.msg.startswith("kubeconfig %s cannot be used: " % path), info.value.msg
    assert "\n" not in info.value.msg


def test_kubeconfig_pointing_at_a_closed_port(tmp_path):
    port = closed_port()
    cluster = k8s.Cluster(write_kubeconfig(str(tmp_path), "https://127.0.0.1:%d" % port), request_timeout=3)
    with pytest.raises(GpuopError) as info:
        cluster.get("/api/v1/nodes/lab-node-0")
    assert info.value.msg.startswith("cannot reach the API server at https://127.0.0.1:%d (GET /api/v1/nodes/lab-node-0): " % port)
    assert "\n" not in info.value.msg


def test_cluster_modules_with_a_kubeconfig_that_is_missing_or_points_at_nothing(tmp_path):
    port = closed_port()
    nowhere = write_kubeconfig(str(tmp_path), "https://127.0.0.1:%d" % port)
    missing = str(tmp_path / "missing" / "kubeconfig")
    server = re.escape("https://127.0.0.1:%d" % port)
    dest = str(tmp_path / "out" / "unscheduled.txt")
    calls = {
        "pod_wait": [
            ({"kubeconfig": missing, "namespace": "gpu-lab", "name": "cuda-probe", "phase": "Running", "timeout": 2},
             r"^kubeconfig %s does not exist$" % re.escape(missing)),
            ({"kubeconfig": nowhere, "namespace": "gpu-lab", "name": "cuda-probe", "timeout": 2, "dest": dest,
              "condition": {"type": "PodScheduled", "status": "False"}},
             r"^timed out after 2\.\ds waiting for pod gpu-lab/cuda-probe condition PodScheduled=False; "
             r"last error: cannot reach the API server at %s \(GET /api/v1/namespaces/gpu-lab/pods/cuda-probe\): " % server),
        ],
        "node_extended_resource": [
            ({"kubeconfig": missing, "nodes": ["lab-node-0"], "quantity": 4}, r"^kubeconfig %s does not exist$" % re.escape(missing)),
            ({"kubeconfig": nowhere, "nodes": ["lab-node-0"], "quantity": 4},
             r"^cannot reach the API server at %s \(GET /api/v1/nodes/lab-node-0\): " % server),
        ],
        "daemonset_rollout": [
            ({"kubeconfig": nowhere, "namespace": "gpu-operator", "name": "nvidia-container-toolkit",
              "dest": str(tmp_path / "out" / "rollout.txt")},
             r"^cannot reach the API server at %s \(GET /apis/apps/v1/namespaces/gpu-operator/daemonsets/"
             r"nvidia-container-toolkit\): " % server),
            ({"kubeconfig": nowhere, "namespace": "gpu-operator", "name": "nvidia-container-toolkit", "wait_for": "stalled",
              "timeout": 2},
             r"^timed out after 2\.\ds waiting for DaemonSet gpu-operator/nvidia-container-toolkit to be stalled; "
             r"last error: cannot reach the API server at %s " % server),
        ],
        "kwok_nodes": [
            ({"kubeconfig": nowhere, "names": ["lab-node-0"], "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
              "wait_timeout": 2},
             r"^timed out after 2\.\ds waiting for the API server at %s to answer /readyz; last error: cannot reach "
             r"the API server at %s \(GET /readyz\): " % (server, server)),
        ],
    }
    for module, cases in calls.items():
        results = run_loop(module, [args for args, _ in cases])
        for result, (_, pattern) in zip(results, cases):
            assert_one_clear_failure(result, pattern)
    assert not os.path.exists(str(tmp_path / "out"))


def test_an_output_path_that_cannot_be_written(tmp_path):
    """A dest below a file: one message naming the path, not an OSError traceback."""
    blocker = tmp_path / "out"
    blocker.write_text("a file where a folder should be\n")
    cases = [{"config": "version: v1\n", "physical_gpus": 4, "vram_per_gpu_gib": 40, "advertised": 4,
              "dest": str(blocker / "slots.txt")}]
    result = run_loop("gpu_sharing", cases)[0]
    assert_one_clear_failure(result, r"^cannot write %s: " % re.escape(str(blocker / "slots.txt")))


def test_pod_wait_target_names(tmp_path):
    for namespace, name, pattern in [("Gpu-Lab", "cuda-probe", r"^namespace 'Gpu-Lab' is not a valid namespace name$"),
                                     ("gpu-lab", "cuda_probe", r"^pod name 'cuda_probe' is not a valid pod name$"),
                                     ("gpu-lab", "../x", r"^pod name '\.\./x' is not a valid pod name$"),
                                     ("gpu-lab\n", "cuda-probe", r"^namespace 'gpu-lab\\n' is not a valid namespace name$")]:
        with pytest.raises(GpuopError) as info:
            pod_wait.validate_target(namespace, name, phase="Running")
        assert re.search(pattern, info.value.msg), info.value.msg


def test_a_temp_file_left_by_a_killed_write_is_removed_by_the_next_one(tmp_path):
    """A run SIGKILLed between the temp file and the rename leaves ``.<name>.XXXXXXXX.tmp``; the next write removes it."""
    from ansible_collections.gpuop.gates.plugins.module_utils import files

    dest = tmp_path / "merge.txt"
    left = tmp_path / ".merge.txt.k1ll3d_x.tmp"
    left.write_text("MAIN_RUNTIMES=ru")  # what a killed write leaves: a part
    other = tmp_path / ".other.txt.abcdefgh.tmp"  # another file's: not ours to remove
    other.write_text("x")
    changed, _ = files.ensure_file(str(dest), "MAIN_RUNTIMES=runc\n")
    assert changed and dest.read_text() == "MAIN_RUNTIMES=runc\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.txt.abcdefgh.tmp", "merge.txt"]


def test_a_server_that_never_answers_costs_one_request_timeout(tmp_path):
    """An API server that accepts and never answers (etcd down behind it): one request_timeout, no hidden retries.

    urllib3's default of 3 retries made it 4 x request_timeout, past the bound of any wait.
    """
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        port = server.getsockname()[1]
        cluster = k8s.Cluster(write_kubeconfig(str(tmp_path), "https://127.0.0.1:%d" % port), request_timeout=2)
        started = time.monotonic()
        with pytest.raises(GpuopError) as info:
            cluster.get("/version")
        took = time.monotonic() - started
    finally:
        server.close()
    assert info.value.msg.startswith("cannot reach the API server at https://127.0.0.1:%d (GET /version): " % port)
    assert "timed out" in info.value.msg
    assert took < 6, "one request took %.1fs with request_timeout 2 (retries would make it 8 or more)" % took
