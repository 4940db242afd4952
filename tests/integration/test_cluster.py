"""The foundation on the live kwok cluster: real apiserver, scheduler, controllers; kwok nodes."""

import uuid

import pytest
from kubernetes import client

from gpuop_testlib import wait_until

LAB_NODES = ["lab-node-0", "lab-node-1", "lab-node-2"]


@pytest.fixture
def namespace(k8s):
    core, _, _ = k8s
    name = "pytest-%s" % uuid.uuid4().hex[:8]
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


def test_apiserver_reports_v1_36_1(k8s):
    _, _, version = k8s
    assert version.get_code().git_version == "v1.36.1"


def test_lab_nodes_ready_with_explicit_capacity(k8s):
    core, _, _ = k8s
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert set(LAB_NODES) <= set(nodes)
    for name in LAB_NODES:
        node = nodes[name]
        assert node.metadata.annotations.get("kwok.x-k8s.io/node") == "fake"
        assert node.status.allocatable["memory"] == "32Gi"
        assert node.status.capacity["memory"] == "32Gi"
        assert node.status.allocatable["cpu"] == "8"
        assert node.status.allocatable["pods"] == "110"
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True"


def test_plain_pod_is_scheduled_and_running(k8s, namespace):
    core, _, _ = k8s
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="plain"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")],
                              node_selector={"kubernetes.io/hostname": "lab-node-1"}),
    )
    core.create_namespaced_pod(namespace, pod)

    def running():
        p = core.read_namespaced_pod("plain", namespace)
        return p if p.status.phase == "Running" else None

    got = wait_until(running, 30, "pod plain to be Running")
    assert got.spec.node_name == "lab-node-1"
    scheduled = [c for c in got.status.conditions if c.type == "PodScheduled"][0]
    assert scheduled.status == "True"


def test_daemonset_gets_one_ready_pod_per_lab_node(k8s, namespace):
    core, apps, _ = k8s
    labels = {"app": "per-node"}
    ds = client.V1DaemonSet(
        metadata=client.V1ObjectMeta(name="per-node"),
        spec=client.V1DaemonSetSpec(
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")],
                                      node_selector={"type": "kwok"}),
            ),
        ),
    )
    apps.create_namespaced_daemon_set(namespace, ds)

    def all_ready():
        status = apps.read_namespaced_daemon_set("per-node", namespace).status
        nodes = [n.metadata.name for n in core.list_node(label_selector="type=kwok").items]
        return nodes if status.number_ready == len(nodes) and status.desired_number_scheduled == len(nodes) else None

    nodes = wait_until(all_ready, 30, "daemonset per-node to be Ready on every kwok node")
    pods = core.list_namespaced_pod(namespace, label_selector="app=per-node").items
    assert sorted(p.spec.node_name for p in pods) == sorted(nodes)
    assert set(LAB_NODES) <= set(nodes)
