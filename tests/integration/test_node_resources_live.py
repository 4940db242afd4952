"""node_extended_resource against a live kwok control plane.

Every test works on Node objects of its own (unique names, deleted afterwards); the lab nodes
are never touched. What the cluster stored is read back with the kubernetes client, independently
of the module under test.
"""

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
    """Poll ``check()`` at 0.1 s until truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.1)


def node_ready(core, name):
    node = core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


@pytest.fixture
def make_node(core):
    """Create Node objects with cpu/memory/pods like the lab's; delete them at the end."""
    created = []

    def make(kwok=True, labels=None):
        name = "h3t-%s" % uuid.uuid4().hex[:10]
        meta = {"name": name, "labels": dict({"gpuop-test": "node-resources"}, **(labels or {}))}
        if kwok:
            meta["annotations"] = {"kwok.x-k8s.io/node": "fake"}
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": meta,
                          "status": {"capacity": dict(BASE), "allocatable": dict(BASE)}})
        created.append(name)
        # kwok (manage-all-nodes) initializes every node's status once; let that happen first.
        wait_until(lambda: node_ready(core, name), what="node %s Ready" % name)
        return name

    yield make
    for name in created:
        try:
            core.delete_node(name)
        except kubernetes.client.rest.ApiException as exc:
            if exc.status != 404:
                raise


def maps_of(core, name):
    status = core.read_node(name).status
    return {"capacity": dict(status.capacity or {}), "allocatable": dict(status.allocatable or {})}


def args(kubeconfig, nodes, **extra):
    return dict({"kubeconfig": kubeconfig, "nodes": nodes, "resource": GPU}, **extra)


def test_sets_capacity_and_allocatable_through_status_then_no_change(module_runner, core, make_node, lab_kubeconfig):
    first, second = make_node(), make_node()

    result = module_runner("node_extended_resource", args(lab_kubeconfig, [first, second], quantity=4))
    assert result.get("failed") is not True, result.get("msg")
    assert result["changed"] is True
    for name in (first, second):
        assert maps_of(core, name) == {"capacity": dict(BASE, **{GPU: "4"}), "allocatable": dict(BASE, **{GPU: "4"})}
    assert [n["name"] for n in result["nodes"]] == [first, second]
    for entry in result["nodes"]:
        assert entry["changed"] is True and entry["managed_by_kwok"] is True
        assert entry["before"] == {"capacity": None, "allocatable": None}
        assert entry["after"] == {"capacity": "4", "allocatable": "4"}
    assert result["advertised"] == {first: "4", second: "4"}
    assert [p["path"] for p in result["patches"]] == ["/api/v1/nodes/%s/status" % first, "/api/v1/nodes/%s/status" % second]
    assert result["patches"][0]["body"] == {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}}
    assert sum(call.startswith("PATCH ") for call in result["api_calls"]) == 2

    again = module_runner("node_extended_resource", args(lab_kubeconfig, [first, second], quantity="4"))
    assert again["changed"] is False
    assert again["patches"] == []
    assert [call.split()[0] for call in again["api_calls"]] == ["GET", "GET"], again["api_calls"]
    assert [n["changed"] for n in again["nodes"]] == [False, False]
    assert again["advertised"] == {first: "4", second: "4"}


def test_a_plain_node_patch_does_not_reach_status(core, make_node):
    """Why the module uses the status subresource: the API drops status sent to the node itself."""
    name = make_node()
    core.patch_node(name, {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}})
    assert GPU not in maps_of(core, name)["capacity"]
    assert GPU not in maps_of(core, name)["allocatable"]


def test_check_mode_writes_nothing_and_diff_shows_both_maps(module_runner, core, make_node, lab_kubeconfig):
    name = make_node()
    module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=4))
    before = maps_of(core, name)

    result = module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=8), check=True, diff=True)
    assert result["changed"] is True
    assert result["patches"][0]["dry_run"] is True
    assert result["nodes"][0]["before"] == {"capacity": "4", "allocatable": "4"}
    assert result["nodes"][0]["after"] == {"capacity": "8", "allocatable": "8"}   # the API's dry-run answer
    assert result["advertised"] == {name: "8"}
    assert maps_of(core, name) == before
    diff = result["diff"][0]
    assert diff["before"] == before
    assert diff["after"] == {"capacity": dict(BASE, **{GPU: "8"}), "allocatable": dict(BASE, **{GPU: "8"})}
    assert name in diff["before_header"]


def test_check_mode_with_nothing_to_change_sends_no_patch(module_runner, make_node, lab_kubeconfig):
    name = make_node()
    module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=2))
    result = module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=2), check=True)
    assert result["changed"] is False
    assert not any(call.startswith("PATCH") for call in result["api_calls"])


def test_absent_removes_the_key_from_both_maps_with_a_null_merge_patch(module_runner, core, make_node, lab_kubeconfig):
    name = make_node()
    module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=4))

    result = module_runner("node_extended_resource", args(lab_kubeconfig, name, state="absent"))
    assert result["changed"] is True
    assert result["patches"][0]["body"] == {"status": {"capacity": {GPU: None}, "allocatable": {GPU: None}}}
    assert maps_of(core, name) == {"capacity": BASE, "allocatable": BASE}
    assert result["nodes"][0]["after"] == {"capacity": None, "allocatable": None}
    assert result["advertised"] == {name: "0"}

    again = module_runner("node_extended_resource", args(lab_kubeconfig, name, state="absent"))
    assert again["changed"] is False
    assert not any(call.startswith("PATCH") for call in again["api_calls"])


def test_node_not_managed_by_kwok_is_refused_unless_allowed(module_runner, core, make_node, lab_kubeconfig):
    name = make_node(kwok=False)

    refused = module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=4))
    assert refused["failed"] is True
    for fragment in (name, "kwok does not manage", "kwok.x-k8s.io/node: fake", "device plugin",
                     "allow_unmanaged_nodes: true"):
        assert fragment in refused["msg"]
    assert "Traceback" not in refused.get("module_stderr", "")
    assert GPU not in maps_of(core, name)["capacity"]

    allowed = module_runner("node_extended_resource", args(lab_kubeconfig, name, quantity=4, allow_unmanaged_nodes=True))
    assert allowed["changed"] is True
    assert allowed["nodes"][0]["managed_by_kwok"] is False
    assert maps_of(core, name)["allocatable"][GPU] == "4"


def test_refused_or_missing_node_in_a_list_writes_nothing_at_all(module_runner, core, make_node, lab_kubeconfig):
    managed, unmanaged = make_node(), make_node(kwok=False)
    missing = "h3t-missing-%s" % uuid.uuid4().hex[:8]

    result = module_runner("node_extended_resource", args(lab_kubeconfig, [managed, missing], quantity=4))
    assert result["failed"] is True
    assert "node(s) not found" in result["msg"] and missing in result["msg"]
    assert managed not in result["msg"]

    result = module_runner("node_extended_resource", args(lab_kubeconfig, [managed, unmanaged], quantity=4))
    assert result["failed"] is True and unmanaged in result["msg"]
    assert GPU not in maps_of(core, managed)["capacity"]


@pytest.mark.parametrize("extra, fragment", [
    ({"resource": "gpu", "quantity": 4}, "needs a domain prefix"),
    ({"resource": "kubernetes.io/gpu", "quantity": 4}, "kubernetes.io domain is reserved"),
    ({"quantity": "0.5"}, "non-negative whole number"),
    ({"quantity": -1}, "non-negative whole number"),
    ({}, "state is present but all of the following are missing: quantity"),
])
def test_bad_input_fails_with_one_clear_message(module_runner, lab_kubeconfig, extra, fragment):
    result = module_runner("node_extended_resource", dict({"kubeconfig": lab_kubeconfig, "nodes": "lab-node-0"}, **extra))
    assert result["failed"] is True
    assert fragment in result["msg"]
    assert "module_stderr" not in result


def test_kubeconfig_that_does_not_exist(module_runner, tmp_path):
    result = module_runner("node_extended_resource", {"kubeconfig": str(tmp_path / "nope"), "nodes": "n", "quantity": 1})
    assert result["failed"] is True
    assert "kubeconfig %s does not exist" % (tmp_path / "nope") in result["msg"]
