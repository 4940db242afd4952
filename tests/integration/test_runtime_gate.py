"""The runtime-handler gate on a live kwok cluster (Stage objects), fed by real containerd daemons.

The cluster is this module's own (``playbooks/runtime-gate.yml --tags runtime_gate_cluster``: kwokctl
with ``--enable-crds=Stage``, kwok's default stages amended by gpuop, the lab nodes, RuntimeClass
nvidia), deleted at the end by ``playbooks/reset.yml``. What each node publishes comes from a daemon
asked through its socket; what the pods do is read back from the API with the official client.
Expected values come from docs/facts.md (a kubelet's behaviour), never from the code.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_sandbox as sb
from gpuop_testlib import ROOT, ansible_env, run_module, wait_until

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_containerd_sandbox import _seed, host_before, look, sandbox, tools  # noqa: E402,F401

NS = "runtime-gate"
CLUSTER = "gpuop-gate-pytest"
ENV = {}


def _playbook(name, root, *extra):
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), os.path.join(ROOT, "playbooks", name),
                           "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % CLUSTER] + list(extra),
                          cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False)
    return proc


@pytest.fixture(scope="module")
def gate_cluster(request):
    root = tempfile.mkdtemp(prefix="gpuop-gate-", dir="/tmp")

    def teardown():
        _playbook("reset.yml", root)
        shutil.rmtree(root, ignore_errors=True)

    request.addfinalizer(teardown)
    proc = _playbook("runtime-gate.yml", root, "--tags", "runtime_gate_cluster")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=os.path.join(root, "kubeconfig"))
    stage_dir = json.loads(subprocess.run(["go", "mod", "download", "-json", "sigs.k8s.io/kwok"], cwd=os.path.join(
        ROOT, "tools", "controlplane"), capture_output=True, text=True, check=True).stdout)["Dir"] + "/kustomize/stage"
    return {"root": root, "kubeconfig": os.path.join(root, "kubeconfig"), "core": client.CoreV1Api(api),
            "stage_dir": stage_dir}


def gate(cluster, nodes, expect=None, check=False):
    return run_module("kwok_runtime_gate", dict(kubeconfig=cluster["kubeconfig"], stage_dir=cluster["stage_dir"],
                                                namespace=NS, nodes=nodes, probe_runtime_class="nvidia",
                                                expect=expect or {}, wait_timeout=60), check=check, env=ENV)


def node_entry(name, seen):
    return {"name": name, "loaded": seen["loaded"], "probes": seen["probes"], "version": seen["loaded"]["containerd_version"]}


def pod_view(core, name):
    pod = core.read_namespaced_pod(name, NS)
    waiting = pod.status.container_statuses[0].state.waiting if pod.status.container_statuses else None
    events = core.list_namespaced_event(NS, field_selector="involvedObject.name=%s,reason=FailedCreatePodSandBox" % name)
    return pod.status.phase, waiting.reason if waiting else None, [(e.type, e.message) for e in events.items]


def make_pod(core, name, node, runtime_class=None):
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    core.create_namespaced_pod(NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def test_gate_on_containerd_2(gate_cluster, tools, sandbox):
    core = gate_cluster["core"]
    short = tempfile.mkdtemp(prefix="gpuop-gl-", dir="/tmp")
    try:
        config, dropin, held = _seed(short)
        params = sandbox(2, config)
        seen = look(tools, params, probe=["nvidia"])
        refusal = seen["probes"][0]["message"]
        assert 'no runtime for "nvidia" is configured' in refusal  # the daemon's own answer
        # Check mode publishes nothing.
        dry = gate(gate_cluster, [node_entry("lab-node-1", seen)], check=True)
        assert dry["changed"] is True and core.read_node("lab-node-1").status.runtime_handlers is None
        # Before the restart: the node publishes what CRI Status reported, the nvidia pod cannot start.
        result = gate(gate_cluster, [node_entry("lab-node-1", seen)], expect={"gate-probe-lab-node-1": "blocked"})
        assert not result.get("failed"), result.get("msg")
        node = core.read_node("lab-node-1")
        assert sorted(h.name for h in node.status.runtime_handlers) == ["", "runc"]
        phase, waiting, events = pod_view(core, "gate-probe-lab-node-1")
        assert (phase, waiting) == ("Pending", "ContainerCreating")
        assert events == [("Warning", "Failed to create pod sandbox: " + refusal)]
        # Complementary selectors: a pod without a RuntimeClass on the same node runs; the nvidia pod on a
        # node without published handlers (no gate there) runs too.
        make_pod(core, "plain-on-lab-node-1", "lab-node-1")
        make_pod(core, "nvidia-on-lab-node-2", "lab-node-2", "nvidia")
        wait_until(lambda: all(pod_view(core, n)[0] == "Running" for n in ("plain-on-lab-node-1", "nvidia-on-lab-node-2")),
                   60, "the ungated pods to run")
        assert pod_view(core, "gate-probe-lab-node-1")[:2] == ("Pending", "ContainerCreating")
        # After the drop-in and the restart: containerd 2.x loads nvidia; the same pod runs.
        os.rename(held, dropin)
        sb.restart(params)
        seen = look(tools, params, probe=["nvidia"])
        assert seen["loaded"]["runtimes"] == ["nvidia", "runc"]
        result = gate(gate_cluster, [node_entry("lab-node-1", seen)], expect={"gate-probe-lab-node-1": "running"})
        assert not result.get("failed"), result.get("msg")
        assert sorted(h.name for h in core.read_node("lab-node-1").status.runtime_handlers) == ["", "nvidia", "runc"]
        assert pod_view(core, "gate-probe-lab-node-1")[0] == "Running"
        # Nothing left to change: a second run is idempotent.
        assert gate(gate_cluster, [node_entry("lab-node-1", seen)])["changed"] is False
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_gate_on_containerd_1_after_the_restart(gate_cluster, tools, sandbox):
    core = gate_cluster["core"]
    short = tempfile.mkdtemp(prefix="gpuop-gl-", dir="/tmp")
    try:
        config, dropin, held = _seed(short)
        os.rename(held, dropin)
        params = sandbox(1, config)  # started with both files: what the restart gives on 1.6
        seen = look(tools, params, probe=["nvidia"])
        assert not seen["loaded"]["cri_loaded"]
        result = gate(gate_cluster, [node_entry("lab-node-0", seen)])
        assert not result.get("failed"), result.get("msg")
        make_pod(core, "plain-on-lab-node-0", "lab-node-0")

        def not_ready():
            ready = next(c for c in core.read_node("lab-node-0").status.conditions if c.type == "Ready")
            return ready if ready.status == "False" else None

        ready = wait_until(not_ready, 60, "lab-node-0 NotReady")
        assert ready.reason == "KubeletNotReady"
        assert ready.message == "container runtime is down: " + seen["loaded"]["error"]
        assert not core.read_node("lab-node-0").status.runtime_handlers
        wait_until(lambda: pod_view(core, "plain-on-lab-node-0")[1] == "ContainerCreating", 60, "the plain pod blocked")
        phase, _waiting, events = pod_view(core, "plain-on-lab-node-0")
        assert phase == "Pending"
        assert events == [("Warning", "Failed to create pod sandbox: rpc error: code = Unimplemented desc = "
                                      "unknown service runtime.v1.RuntimeService")]
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_gate_publishes_only_on_kwok_nodes(gate_cluster):
    core = gate_cluster["core"]
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real-kubelet-node"}})
    try:
        loaded = {"cri_loaded": True, "runtimes": ["runc"], "cri_runtime_handlers": None, "error": None,
                  "containerd_version": "1.6.20"}
        result = gate(gate_cluster, [{"name": "real-kubelet-node", "loaded": loaded, "probes": [
            {"handler": "nvidia", "message": "x"}], "version": "1.6.20"}])
        assert result["failed"] and "not managed by kwok" in result["msg"]
        assert core.read_node("real-kubelet-node").status.runtime_handlers is None
    finally:
        core.delete_node("real-kubelet-node")
