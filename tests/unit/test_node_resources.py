"""Pure logic of node_extended_resource: names, quantities, patch bodies, change detection."""

from fractions import Fraction

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import node_resources as nr
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

GPU = "nvidia.com/gpu"


def maps(capacity=None, allocatable=None):
    base = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    cap = dict(base, **(capacity or {}))
    alloc = dict(base, **(allocatable or {}))
    return {"capacity": cap, "allocatable": alloc}


@pytest.mark.parametrize("name", [
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "example.com/dongle",
    "amd.com/gpu",
    "a.b-c.io/X_y.z",
    "gpu.intel.com/i915",
])
def test_valid_extended_resource_names(name):
    assert nr.validate_resource_name(name) == name


@pytest.mark.parametrize("name, fragment", [
    ("gpu", "needs a domain prefix"),
    ("cpu", "needs a domain prefix"),
    ("kubernetes.io/gpu", "kubernetes.io domain is reserved"),
    ("node.kubernetes.io/gpu", "kubernetes.io domain is reserved"),
    ("requests.nvidia.com/gpu", "requests. prefix is reserved"),
    ("NVIDIA.com/gpu", "must be a lowercase DNS subdomain"),
    ("nvidia_com/gpu", "must be a lowercase DNS subdomain"),
    ("nvidia.com/", "name part ''"),
    ("nvidia.com/-gpu", "name part '-gpu'"),
    ("nvidia.com/" + "g" * 64, "1-63 characters"),
    ("nvidia.com/gpu/x", "more than one '/'"),
    ("", "non-empty"),
    (None, "non-empty"),
])
def test_invalid_extended_resource_names(name, fragment):
    with pytest.raises(GpuopError, match="not an extended resource name|non-empty") as err:
        nr.validate_resource_name(name)
    assert fragment in err.value.msg


@pytest.mark.parametrize("value, expected", [
    (4, "4"),
    ("4", "4"),
    ("04", "4"),
    (" 20 ", "20"),
    (0, "0"),
    ("0", "0"),
    (4.0, "4"),
    (1000, "1000"),
])
def test_quantity_normalized(value, expected):
    assert nr.normalize_quantity(value) == expected


@pytest.mark.parametrize("value", [-1, "-1", "0.5", 0.5, "1k", "4Gi", "four", "", True, False, None, [4], 2 ** 63])
def test_quantity_refused(value):
    with pytest.raises(GpuopError, match="quantity"):
        nr.normalize_quantity(value)


@pytest.mark.parametrize("nodes, expected", [
    (["lab-node-0"], ["lab-node-0"]),
    (["lab-node-1", "lab-node-0", "lab-node-1"], ["lab-node-1", "lab-node-0"]),
    (["n.example.com"], ["n.example.com"]),
])
def test_node_names(nodes, expected):
    assert nr.validate_node_names(nodes) == expected


@pytest.mark.parametrize("nodes, fragment", [
    ([], "at least one node"),
    (["Lab-Node"], "not a valid node name"),
    (["lab-node-0/status"], "not a valid node name"),
    (["../x"], "not a valid node name"),
    ([""], "not a valid node name"),
])
def test_bad_node_names(nodes, fragment):
    with pytest.raises(GpuopError, match=fragment):
        nr.validate_node_names(nodes)


@pytest.mark.parametrize("text, expected", [
    ("4", Fraction(4)),
    ("1k", Fraction(1000)),
    ("32Gi", Fraction(32 * 2 ** 30)),
    ("500m", Fraction(1, 2)),
    ("1e3", Fraction(1000)),
    ("1.5", Fraction(3, 2)),
    ("-2", Fraction(-2)),
    ("abc", None),
    ("", None),
    (None, None),
])
def test_parse_quantity(text, expected):
    assert nr.parse_quantity(text) == expected


@pytest.mark.parametrize("current, desired, equal", [
    ("4", "4", True),
    ("1k", "1000", True),   # the API re-serializes 1000 as 1k
    ("1e3", "1000", True),
    ("4", "20", False),
    (None, "4", False),
    ("4", None, False),
    (None, None, True),
    ("garbage", "4", False),
])
def test_quantity_equal(current, desired, equal):
    assert nr.quantity_equal(current, desired) is equal


# (before maps, desired, expected patch body)
PATCH_CASES = [
    ("set on a node without it", maps(), "4",
     {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}}),
    ("already equal", maps({GPU: "4"}, {GPU: "4"}), "4", None),
    ("equal by number (1k = 1000)", maps({GPU: "1k"}, {GPU: "1k"}), "1000", None),
    ("only allocatable differs", maps({GPU: "4"}, {GPU: "3"}), "4",
     {"status": {"allocatable": {GPU: "4"}}}),
    ("only capacity missing", maps(None, {GPU: "20"}), "20",
     {"status": {"capacity": {GPU: "20"}}}),
    ("change 4 to 20", maps({GPU: "4"}, {GPU: "4"}), "20",
     {"status": {"capacity": {GPU: "20"}, "allocatable": {GPU: "20"}}}),
    ("explicit zero is a value", maps(), "0",
     {"status": {"capacity": {GPU: "0"}, "allocatable": {GPU: "0"}}}),
    ("absent removes from both with null", maps({GPU: "4"}, {GPU: "4"}), None,
     {"status": {"capacity": {GPU: None}, "allocatable": {GPU: None}}}),
    ("absent removes only where present", maps({GPU: "4"}), None,
     {"status": {"capacity": {GPU: None}}}),
    ("absent already absent", maps(), None, None),
    ("empty maps", {"capacity": {}, "allocatable": {}}, "4",
     {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}}),
]


@pytest.mark.parametrize("case, before, desired, body", PATCH_CASES, ids=[c[0] for c in PATCH_CASES])
def test_patch_body(case, before, desired, body):
    assert nr.patch_body(before, GPU, desired) == body


def test_patch_body_leaves_other_resources_alone():
    body = nr.patch_body(maps({"example.com/dongle": "1"}), GPU, "4")
    assert set(body["status"]["capacity"]) == {GPU}


@pytest.mark.parametrize("node, expected", [
    ({"status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7"}}},
     {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7"}}),
    ({"status": {}}, {"capacity": {}, "allocatable": {}}),
    ({}, {"capacity": {}, "allocatable": {}}),
    (None, {"capacity": {}, "allocatable": {}}),
    ({"status": {"capacity": None}}, {"capacity": {}, "allocatable": {}}),
])
def test_status_maps(node, expected):
    assert nr.status_maps(node) == expected


@pytest.mark.parametrize("before, expected", [
    (maps({GPU: "4"}, {GPU: "4"}), "4"),
    (maps({GPU: "4"}, {GPU: "3"}), "3"),   # allocatable is what the scheduler uses
    (maps({GPU: "4"}), "0"),
    (maps(), "0"),
])
def test_advertised_value(before, expected):
    assert nr.advertised_value(before, GPU) == expected


def test_resource_values():
    assert nr.resource_values(maps({GPU: "4"}), GPU) == {"capacity": "4", "allocatable": None}


def test_check_applied_accepts_and_refuses():
    nr.check_applied("n", maps({GPU: "4"}, {GPU: "4"}), GPU, "4", False)
    nr.check_applied("n", maps(), GPU, None, False)
    with pytest.raises(GpuopError, match=r"accepted the patch of node n but its status.capacity/allocatable"):
        nr.check_applied("n", maps(), GPU, "4", False)
    with pytest.raises(GpuopError, match=r"dry-run patch of node n but its status.allocatable shows nvidia.com/gpu=4 instead of no key"):
        nr.check_applied("n", maps(None, {GPU: "4"}), GPU, None, True)


def test_unmanaged_message_names_node_field_and_override():
    msg = nr.unmanaged_message(["gpu-1", "gpu-2"], "https://10.0.0.1:6443")
    for fragment in ("gpu-1, gpu-2", "https://10.0.0.1:6443", "kwok.x-k8s.io/node: fake",
                     "device plugin", "allow_unmanaged_nodes: true"):
        assert fragment in msg


def test_argument_spec_extends_shared_k8s_options_without_touching_them():
    from ansible_collections.gpuop.gates.plugins.module_utils import k8s
    spec = nr.argument_spec()
    assert {"kubeconfig", "context", "request_timeout", "nodes", "resource", "quantity", "state",
            "allow_unmanaged_nodes"} == set(spec)
    spec["kubeconfig"]["required"] = False
    assert k8s.K8S_ARG_SPEC["kubeconfig"]["required"] is True
