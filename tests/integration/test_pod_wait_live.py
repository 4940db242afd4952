"""pod_wait against a live kwok control plane: the real scheduler's words, the real kwok timing.

Each test has its own namespace and its own kwok node (unique names, deleted afterwards). GPU pods
select that node by label, so what other tests do to the lab nodes does not matter.
"""

import datetime
import json
import os
import threading
import time
import uuid

import pytest

kubernetes = pytest.importorskip("kubernetes")

GPU = "nvidia.com/gpu"
BASE = {"cpu": "8", "memory": "32Gi", "pods": "110"}


@pytest.fixture(scope="module")
def core(lab_kubeconfig):
    api = kubernetes.config.new_client_from_config(config_file=lab_kubeconfig)
    return kubernetes.client.CoreV1Api(api)


def wait_until(check, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.1)


@pytest.fixture
def lab(core):
    """A namespace and a kwok node of this test's own; both deleted at the end."""
    uid = uuid.uuid4().hex[:10]
    namespace, node = "h3t-%s" % uid, "h3t-%s-gpu" % uid
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    core.create_node({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": node, "labels": {"gpuop-test": uid},
                                   "annotations": {"kwok.x-k8s.io/node": "fake"}},
                      "status": {"capacity": dict(BASE), "allocatable": dict(BASE)}})

    def ready():
        conds = core.read_node(node).status.conditions or []
        return any(c.type == "Ready" and c.status == "True" for c in conds)

    wait_until(ready, what="node %s Ready" % node)
    yield {"uid": uid, "namespace": namespace, "node": node}
    core.delete_namespace(namespace)
    core.delete_node(node)


def gpu_pod(core, lab, name="cuda-probe"):
    core.create_namespaced_pod(lab["namespace"], {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"gpuop-test": lab["uid"]},
            "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                            "resources": {"limits": {GPU: "1"}}}],
        },
    })
    return name


def api_condition(core, namespace, name, ctype):
    """The condition exactly as the API serves it (raw JSON), read by the test's own client."""
    raw = json.loads(core.read_namespaced_pod(name, namespace, _preload_content=False).data)
    for cond in raw.get("status", {}).get("conditions") or []:
        if cond["type"] == ctype:
            return cond
    return None


def in_background(fn, *args, **kwargs):
    box = {}

    def run():
        box["result"] = fn(*args, **kwargs)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def parse_time(text):
    return datetime.datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z" if "." in text else "%Y-%m-%dT%H:%M:%S%z")


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def test_waits_for_a_pod_that_does_not_exist_yet_and_records_the_scheduler_message(
        module_runner, core, lab, lab_kubeconfig, tmp_path):
    dest = tmp_path / "out" / "unscheduled.txt"
    args = {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"], "name": "cuda-probe",
            "condition": UNSCHEDULABLE, "timeout": 30, "dest": str(dest), "keep_existing": True}
    # Started before the pod exists: a missing pod means keep waiting.
    thread, box = in_background(module_runner, "pod_wait", args, diff=True)
    gpu_pod(core, lab)
    thread.join(60)
    result = box["result"]
    assert result.get("failed") is not True, result.get("msg")

    written = api_condition(core, lab["namespace"], "cuda-probe", "PodScheduled")
    assert written["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in written["message"]
    assert result["condition"] == written        # exactly as the scheduler wrote it
    assert result["changed"] is True and result["waited"] is True and result["exists"] is True
    assert result["phase"] == "Pending" and result["node_name"] is None
    assert dest.read_text() == "Unschedulable\n%s\n" % written["message"]
    assert result["content"] == dest.read_text()
    assert result["diff"]["after"] == dest.read_text() and result["diff"]["before"] == ""
    assert (dest.stat().st_mode & 0o777) == 0o644
    assert not [p for p in os.listdir(dest.parent) if p != "unscheduled.txt"]   # no temp file left

    # A re-run keeps the record as it was, without waiting.
    before = dest.read_bytes()
    again = module_runner("pod_wait", args)
    assert again["changed"] is False and again["waited"] is False and again["kept"] is True
    assert dest.read_bytes() == before


def test_running_after_the_node_advertises_a_gpu_returns_promptly(module_runner, core, lab, lab_kubeconfig, tmp_path):
    gpu_pod(core, lab)
    unsched = module_runner("pod_wait", {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"],
                                         "name": "cuda-probe", "condition": UNSCHEDULABLE, "timeout": 30})
    assert unsched["condition"]["reason"] == "Unschedulable"

    running_args = {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"], "name": "cuda-probe",
                    "phase": "Running", "timeout": 30}
    thread, box = in_background(module_runner, "pod_wait", running_args)
    advertised = module_runner("node_extended_resource", {"kubeconfig": lab_kubeconfig, "nodes": lab["node"],
                                                          "resource": GPU, "quantity": 1})
    assert advertised["changed"] is True
    thread.join(60)
    result = box["result"]
    assert result.get("failed") is not True, result.get("msg")
    assert result["phase"] == "Running"
    assert result["node_name"] == lab["node"]
    assert result["waited"] is True and result["changed"] is False

    # lastTransitionTime has 1 s granularity; polling at 0.2 s, the module must see Running within
    # that second plus one poll (and a request) of kwok writing it.
    ready = [c for c in result["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "True"
    lag = (parse_time(result["reached_at"]) - parse_time(ready["lastTransitionTime"])).total_seconds()
    assert 0 <= lag < 1.0 + 0.5, "reached_at %s vs Ready since %s" % (result["reached_at"], ready["lastTransitionTime"])
    assert 0 < result["elapsed"] < 30

    # Already Running: the next wait returns on its first look.
    again = module_runner("pod_wait", running_args)
    assert again["elapsed"] < 0.5


def test_timeout_names_the_condition_and_the_last_state(module_runner, core, lab, lab_kubeconfig):
    gpu_pod(core, lab)
    result = module_runner("pod_wait", {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"],
                                        "name": "cuda-probe", "condition": {"type": "Ready"}, "timeout": 1.5})
    assert result["failed"] is True
    msg = result["msg"]
    assert msg.startswith("timed out after 1.5s waiting for pod %s/cuda-probe condition Ready=True" % lab["namespace"])
    assert "last state: phase=Pending" in msg
    assert "no Ready condition" in msg
    assert "PodScheduled=False (Unschedulable: " in msg
    assert "module_stderr" not in result


def test_timeout_on_a_pod_that_never_appears(module_runner, lab, lab_kubeconfig):
    result = module_runner("pod_wait", {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"],
                                        "name": "never", "phase": "Running", "timeout": 0.6})
    assert result["failed"] is True
    assert "waiting for pod %s/never phase Running; last state: the pod does not exist" % lab["namespace"] in result["msg"]


def test_check_mode_waits_but_writes_nothing(module_runner, core, lab, lab_kubeconfig, tmp_path):
    dest = tmp_path / "unscheduled.txt"
    gpu_pod(core, lab)
    args = {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"], "name": "cuda-probe",
            "condition": UNSCHEDULABLE, "timeout": 30, "dest": str(dest)}
    result = module_runner("pod_wait", args, check=True)
    assert result["changed"] is True and result["waited"] is True
    assert result["content"].startswith("Unschedulable\n")
    assert not dest.exists() and not os.listdir(tmp_path)

    missing = module_runner("pod_wait", dict(args, name="not-created-in-check-mode"), check=True)
    assert missing["exists"] is False and missing["waited"] is False
    assert not dest.exists()


def test_without_keep_existing_a_stale_record_is_rewritten(module_runner, core, lab, lab_kubeconfig, tmp_path):
    dest = tmp_path / "unscheduled.txt"
    dest.write_text("stale\n")
    gpu_pod(core, lab)
    args = {"kubeconfig": lab_kubeconfig, "namespace": lab["namespace"], "name": "cuda-probe",
            "condition": UNSCHEDULABLE, "timeout": 30, "dest": str(dest)}
    result = module_runner("pod_wait", args)
    assert result["changed"] is True
    assert dest.read_text().startswith("Unschedulable\n0/")
    assert module_runner("pod_wait", args)["changed"] is False


@pytest.mark.parametrize("args, fragment", [
    ({"name": "p", "phase": "Running", "condition": {"type": "Ready"}}, "mutually exclusive"),
    ({"name": "p"}, "one of the following is required"),
    ({"name": "p", "phase": "Running", "dest": "/tmp/x"}, "missing parameter(s) required by 'dest'"),
    ({"name": "p", "condition": {"type": "Ready", "status": "maybe"}}, "True, False or Unknown"),
    ({"name": "P_Q", "phase": "Running"}, "is not a valid pod name"),
])
def test_bad_input_fails_with_one_clear_message(module_runner, lab_kubeconfig, args, fragment):
    result = module_runner("pod_wait", dict({"kubeconfig": lab_kubeconfig, "timeout": 1}, **args))
    assert result["failed"] is True
    assert fragment in result["msg"]
    assert "module_stderr" not in result
