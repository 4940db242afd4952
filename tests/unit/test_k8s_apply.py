"""k8s_apply's pure parts: the API path of an object (and its refusals), what counts as the object's essence."""

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import k8s_apply
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

PATHS = [
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-lab"}}, "/api/v1/namespaces/gpu-lab"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda-probe", "namespace": "gpu-lab"}},
     "/api/v1/namespaces/gpu-lab/pods/cuda-probe"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"}},
     "/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config"),
    ({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}},
     "/apis/node.k8s.io/v1/runtimeclasses/nvidia"),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-container-toolkit", "namespace": "gpu-operator"}},
     "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-container-toolkit"),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lab-node-1"}}, "/api/v1/nodes/lab-node-1"),
]


@pytest.mark.parametrize("obj, path", PATHS, ids=[p[0]["kind"] for p in PATHS])
def test_object_path(obj, path):
    assert k8s_apply.object_path(obj) == path


BAD = [
    ("not a mapping", "objects[0] must be a mapping"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "y"}}, "kind 'Secret' is not one k8s_apply knows"),
    ({"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "x", "namespace": "y"}}, "apiVersion 'v2'"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "y"}}, "metadata.name must be a DNS subdomain, got None"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Cuda", "namespace": "y"}}, "got 'Cuda'"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x\n", "namespace": "y"}}, "got 'x\\n'"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}, "metadata.namespace must be set to a DNS label, got None"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a..b", "namespace": "y"}}, "got 'a..b'"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "gpu.lab"}}, "DNS label, got 'gpu.lab'"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": "x"}, "metadata.name must be a DNS subdomain"),
]


@pytest.mark.parametrize("obj, message", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_objects_are_named(obj, message):
    with pytest.raises(GpuopError) as info:
        k8s_apply.object_path(obj)
    assert message in info.value.msg


def test_a_node_is_read_but_never_applied(tmp_path):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lab-node-1"}}
    params = {"objects": [node], "files": [{"path": str(tmp_path / "node.yaml"), "content": "x"}]}
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(None, params)  # refused before the cluster is asked anything
    assert info.value.msg == "objects[0] (Node lab-node-1): k8s_apply reads this kind but never applies it"
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_essence_drops_what_the_api_sets_and_keeps_the_rest():
    stored = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "c", "namespace": "n", "resourceVersion": "42", "uid": "u", "generation": 1,
                           "creationTimestamp": "2026-12-02T00:00:00Z", "managedFields": [{"manager": "gpuop"}],
                           "labels": {"a": "b"}},
              "data": {"any": "x"}, "status": {"phase": "Active"}}
    assert k8s_apply.essence(stored) == {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"}},
                                         "data": {"any": "x"}}
    assert stored["metadata"]["resourceVersion"] == "42"  # the input is not changed
    assert k8s_apply.essence(None) is None


STORED_POD = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "cuda-probe", "namespace": "gpu-lab", "resourceVersion": "7", "labels": {"x": "y"}},
              "spec": {"runtimeClassName": "nvidia", "restartPolicy": "Never",
                       "containers": [{"name": "cuda", "image": "cuda:12", "command": ["nvidia-smi"],
                                       "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                                       "terminationMessagePath": "/dev/termination-log"}]},
              "status": {"phase": "Pending"}}
HOLDS = [
    ("asked fields present (defaults and status beside them)",
     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda-probe", "namespace": "gpu-lab"},
      "spec": {"runtimeClassName": "nvidia", "containers": [{"name": "cuda", "image": "cuda:12",
                                                              "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}, True),
    ("a quantity given as a number, stored as a string", {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}}, True),
    ("another image", {"spec": {"containers": [{"image": "cuda:13"}]}}, False),
    ("another count", {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}}]}}, False),
    ("a second container", {"spec": {"containers": [{"name": "cuda"}, {"name": "sidecar"}]}}, False),
    ("a field the object lacks", {"spec": {"nodeName": "lab-node-0"}}, False),
    ("true is not 1", {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": True}}}]}}, False),
    ("a mapping where a string is", {"spec": {"runtimeClassName": {"name": "nvidia"}}}, False),
]


@pytest.mark.parametrize("wanted, expected", [h[1:] for h in HOLDS], ids=[h[0] for h in HOLDS])
def test_holds(wanted, expected):
    assert k8s_apply.holds(wanted, STORED_POD) is expected
