"""gpu_doctor against a live kwok control plane: read-only, constant calls, the handler gate.

Every test makes its own objects (unique names: namespace, RuntimeClass, extra kwok nodes) and
deletes them; a test that patches lab-node-0's reported runtime handlers puts them back. The
module runs for real through ``ansible localhost -m gpu_doctor``; the official kubernetes client
(fixture ``k8s``) reads resourceVersions before and after to prove nothing was written.

The 1,000-node figures are a benchmark, not a test: ``bench/scale.py --nodes 10,100,1000`` builds that
cluster and times the doctor at each N (docs/doctor.md, docs/performance.md).
"""

import json
import os
import subprocess
import uuid

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster, NotFound, wait_for
from gpuop_testlib import ROOT, ansible_env, wait_until

SUFFIX = uuid.uuid4().hex[:6]
CALLS = [
    "GET /version",
    "GET /api/v1/nodes",
    "GET /api/v1/pods",
    "GET /apis/node.k8s.io/v1/runtimeclasses",
    "GET /apis/apps/v1/daemonsets",
    "GET /api/v1/configmaps",
    "GET /api/v1/events",
]
CONTAINERD_2X_MESSAGE = ('Failed to create pod sandbox: rpc error: code = Unknown desc = unable to get OCI runtime for '
                         'sandbox "0f1e": no runtime for "%s" is configured')


@pytest.fixture(scope="module")
def cluster(lab_kubeconfig):
    return Cluster(lab_kubeconfig)


@pytest.fixture
def doctor(module_runner, lab_kubeconfig):
    def run(_check=False, **args):
        return module_runner("gpu_doctor", dict({"kubeconfig": lab_kubeconfig}, **args), check=_check,
                             env={"ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json"})
    return run


@pytest.fixture(scope="module")
def namespace(cluster):
    name = "doctor-%s" % SUFFIX
    cluster.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    cluster.request("DELETE", "/api/v1/namespaces/%s" % name)


def resource_versions(k8s):
    core, apps, _ = k8s
    seen = {}
    for kind, items in (("node", core.list_node().items), ("pod", core.list_pod_for_all_namespaces().items),
                        ("configmap", core.list_config_map_for_all_namespaces().items),
                        ("daemonset", apps.list_daemon_set_for_all_namespaces().items)):
        for obj in items:
            seen["%s/%s/%s" % (kind, obj.metadata.namespace or "", obj.metadata.name)] = obj.metadata.resource_version
    return seen


def _settled(k8s):
    """No namespace of an earlier test still terminating: its objects would change while the doctor reads."""
    core = k8s[0]
    return not [n for n in core.list_namespace().items if n.status.phase == "Terminating"]


def test_only_gets_constant_in_number_and_nothing_changes(doctor, cluster, k8s, namespace):
    wait_until(lambda: _settled(k8s), 180, "the namespaces of earlier tests to finish terminating")
    before = resource_versions(k8s)
    first = doctor()
    assert first.get("failed") is not True, first.get("msg")
    assert first["api_calls"] == CALLS
    assert resource_versions(k8s) == before

    # Twenty more nodes and a pod on each: still the same seven calls.
    extra = ["doctor-%s-%02d" % (SUFFIX, i) for i in range(20)]
    try:
        for name in extra:
            cluster.request("POST", "/api/v1/nodes", body={
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}},
                "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
            cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"nodeName": name, "containers": [{"name": "c", "image": "busybox"}]}})
        second = doctor()
        assert second["api_calls"] == CALLS
        assert second["counts"]["nodes"] == first["counts"]["nodes"] + 20
        assert second["counts"]["pods"] >= first["counts"]["pods"] + 20
    finally:
        for name in extra:
            for path in ("/api/v1/namespaces/%s/pods/%s" % (namespace, name), "/api/v1/nodes/%s" % name):
                try:
                    cluster.request("DELETE", path, query={"gracePeriodSeconds": "0"})
                except NotFound:
                    pass


def set_handlers(cluster, node, names):
    body = {"status": {"runtimeHandlers": None if names is None else [
        {"name": n, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}} for n in names]}}
    cluster.patch("/api/v1/nodes/%s/status" % node, body)


def mine(result, rc_name):
    return [(f["severity"], f["code"], f["text"]) for f in result["findings"] if f["subject"] in (
        "runtimeclass/%s" % rc_name,) or f["code"] == "sandbox-failed" and rc_name in f["text"]]


def test_runtime_handler_gate_on_the_nodes_reported_handlers(doctor, cluster, namespace):
    rc_name = handler = "doctor-h-%s" % SUFFIX
    node = "lab-node-0"
    cluster.request("POST", "/apis/node.k8s.io/v1/runtimeclasses", body={
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": rc_name}, "handler": handler,
        "scheduling": {"nodeSelector": {"kubernetes.io/hostname": node}}})
    original = cluster.get("/api/v1/nodes/%s" % node).get("status", {}).get("runtimeHandlers")
    try:
        cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu"},
            "spec": {"nodeName": node, "runtimeClassName": rc_name, "containers": [{"name": "c", "image": "cuda"}]}})

        set_handlers(cluster, node, None)
        result = doctor()
        assert mine(result, rc_name) == [(
            "warning", "handler-unknown",
            "RuntimeClass %s: 1 of 1 nodes report no runtime handlers, so whether handler %s is loaded is unknown: %s"
            % (rc_name, handler, node))]

        set_handlers(cluster, node, ["runc", ""])
        result = doctor()
        assert mine(result, rc_name) == [(
            "critical", "handler-not-loaded",
            "RuntimeClass %s: handler %s not loaded on 1 of 1 nodes: %s (they report (default), runc); pods using it "
            "there: %s/gpu on %s" % (rc_name, handler, node, namespace, node))]
        assert result["gates"]["runtime-handler"]["state"] == "broken"

        set_handlers(cluster, node, ["runc", handler, ""])
        assert mine(doctor(), rc_name) == []

        # A pod the scheduler cannot place, with the kubelet's sandbox event carrying containerd's message.
        cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting"},
            "spec": {"runtimeClassName": rc_name, "nodeSelector": {"doctor-test": "nowhere"},
                     "containers": [{"name": "c", "image": "cuda"}]}})
        pod = cluster.get("/api/v1/namespaces/%s/pods/waiting" % namespace)
        message = CONTAINERD_2X_MESSAGE % handler
        cluster.request("POST", "/api/v1/namespaces/%s/events" % namespace, body={
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "waiting.sandbox"},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "waiting", "uid": pod["metadata"]["uid"]},
            "reason": "FailedCreatePodSandBox", "type": "Warning", "message": message, "count": 1,
            "firstTimestamp": "2026-12-02T10:00:00Z", "lastTimestamp": "2026-12-02T10:00:00Z",
            "source": {"component": "kubelet"}})
        result = doctor()
        sandbox = [f for f in result["findings"] if f["code"] == "sandbox-failed"]
        assert [(f["severity"], f["text"], f["details"]["handler"]) for f in sandbox] == [
            ("critical", "pod %s/waiting on (no node): FailedCreatePodSandBox: %s" % (namespace, message), handler)]
        assert result["api_calls"] == CALLS
    finally:
        set_handlers(cluster, node, original)
        cluster.request("DELETE", "/apis/node.k8s.io/v1/runtimeclasses/%s" % rc_name)


def test_reports_written_once_check_mode_writes_nothing_and_fail_on(doctor, tmp_path, namespace, cluster):
    out = tmp_path / "out"
    dry = doctor(_check=True, output_dir=str(out))
    assert dry["changed"] is True and not out.exists()
    first = doctor(output_dir=str(out))
    assert first["changed"] is True
    assert sorted(os.listdir(out)) == ["doctor.html", "doctor.json", "doctor.junit.xml", "doctor.md", "doctor.sarif", "doctor.txt"]
    written = json.loads((out / "doctor.json").read_text())
    assert written["findings"] == first["findings"] and written["api_calls"] == CALLS and written["schema_version"] == 2
    assert json.loads((out / "doctor.sarif").read_text())["version"] == "2.1.0"
    assert (out / "doctor.txt").read_text().splitlines() == first["lines"]
    again = doctor(output_dir=str(out))
    assert again["changed"] is False, "same cluster state, same bytes"
    assert doctor(_check=True, output_dir=str(out))["changed"] is False

    # A pod Pending on an extended resource nobody advertises is critical: fail_on=critical fails.
    cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wants-fpga"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"example.com/fpga-%s" % SUFFIX: "1"}}}]}})
    wait_for(lambda: cluster.get("/api/v1/namespaces/%s/pods/wants-fpga" % namespace),
             lambda p: any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions") or []),
             30, "the scheduler's verdict on wants-fpga")
    gated = doctor(output_dir=str(out), fail_on="critical")
    assert gated["failed"] is True and gated["failed_gate"] is True
    assert gated["msg"].startswith("fail_on=critical: gpu doctor: ")
    assert "pod %s/wants-fpga Pending on Insufficient example.com/fpga-%s: requests 1, largest free 0" % (
        namespace, SUFFIX) in gated["msg"]
    assert "wants-fpga" in (out / "doctor.md").read_text(), "the reports are written before the task fails"
    assert doctor(output_dir=str(out), fail_on="none").get("failed") is not True
    # Suppressed, it is still reported (with its reason) and no longer fails the gate.
    muted = doctor(output_dir=str(out), fail_on="critical", suppressions=[
        {"code": "pod-insufficient-resource", "subject": "pod/%s/wants-fpga" % namespace, "reason": "FPGA nodes come tomorrow"}])
    mine = [f for f in muted["findings"] if "wants-fpga" in f["text"]]
    assert len(mine) == 1 and mine[0]["suppressed"]["reason"] == "FPGA nodes come tomorrow", mine
    others = [f for f in muted["findings"] if f["severity"] == "critical" and not f.get("suppressed")]
    assert bool(muted.get("failed")) == bool(others), (muted.get("msg"), others)


def test_bad_input_is_one_clear_failure(doctor, tmp_path):
    result = doctor(containerd_configs=[str(tmp_path / "missing.toml")], output_dir=str(tmp_path / "out"))
    assert result["failed"] is True
    assert result["msg"] == "%s: main config file does not exist" % (tmp_path / "missing.toml")
    assert not (tmp_path / "out").exists(), "no partial output"
    result = doctor(daemonsets=["no-namespace"])
    assert result["failed"] is True and result["msg"] == "daemonsets: 'no-namespace' is not namespace/name"


def test_playbook_check_mode_changes_nothing(lab_kubeconfig, k8s, tmp_path):
    args = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), os.path.join(ROOT, "playbooks", "doctor.yml"),
            "-e", "gpuop_root=%s" % tmp_path, "-e", "gpuop_kubeconfig=%s" % lab_kubeconfig,
            "-e", "doctor_output_dir=%s" % (tmp_path / "out")]
    run = subprocess.run(args, cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    before = resource_versions(k8s)
    files = {name: (tmp_path / "out" / name).read_bytes() for name in ("doctor.md", "doctor.json")}
    check = subprocess.run(args + ["--check"], cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout[-3000:]
    recap = [line for line in check.stdout.splitlines() if line.startswith("localhost")]
    assert recap and " changed=0 " in recap[-1] and " failed=0 " in recap[-1], recap
    assert resource_versions(k8s) == before
    assert {name: (tmp_path / "out" / name).read_bytes() for name in files} == files


def test_the_cli_exit_codes_tell_findings_from_could_not_run(lab_kubeconfig, cluster, namespace, tmp_path):
    tool = os.path.join(ROOT, "tools", "gpuop-doctor")

    def run(*args):
        proc = subprocess.run([tool] + list(args) + ["-e", "gpuop_root=%s" % tmp_path], cwd=str(tmp_path),
                              env=ansible_env(), capture_output=True, text=True, check=False, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    # A kubeconfig whose server does not answer: no verdict, exit 1.
    with open(lab_kubeconfig) as handle:
        text = handle.read()
    broken = tmp_path / "unreachable.kubeconfig"
    broken.write_text("\n".join("    server: https://127.0.0.1:9" if line.strip().startswith("server:") else line
                                for line in text.splitlines()) + "\n")
    code, said = run("--output-dir", str(tmp_path / "a"), "-e", "gpuop_kubeconfig=%s" % broken)
    assert code == 1 and "could not run" in said, said[-2000:]
    # A critical finding (a pod Pending on an extended resource nobody advertises): exit 2; fail_on none: 0.
    cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wants-asic"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"example.com/asic-%s" % SUFFIX: "1"}}}]}})
    wait_for(lambda: cluster.get("/api/v1/namespaces/%s/pods/wants-asic" % namespace),
             lambda p: any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions") or []),
             30, "the scheduler's verdict on wants-asic")
    code, said = run("--fail-on", "critical", "--output-dir", str(tmp_path / "b"), "-e", "gpuop_kubeconfig=%s" % lab_kubeconfig)
    assert code == 2 and "exit 2" in said, said[-2000:]
    assert "wants-asic" in (tmp_path / "b" / "doctor.txt").read_text()
    code, said = run("--fail-on", "none", "--output-dir", str(tmp_path / "c"), "-e", "gpuop_kubeconfig=%s" % lab_kubeconfig)
    assert code == 0, said[-2000:]
