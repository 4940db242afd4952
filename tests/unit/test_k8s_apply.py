"""k8s_apply's pure parts: the API path of an object (and its refusals), what counts as the object's essence,
whose an object is (no take-over), the label gpuop applies, and run() against a scripted cluster."""

import copy
import json

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


# --- No take-over: whose an object is, the label gpuop puts on what it applies, and what run() does with both.

def _mf(manager, operation="Apply", subresource=None):
    entry = {"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {}} if subresource == "status" else {"f:data": {}}}
    if subresource is not None:
        entry["subresource"] = subresource
    return entry


def _existing(kind="ConfigMap", label="gpuop", managed=(("gpuop", "Apply", None),), name="time-slicing-config",
              namespace="gpu-operator"):
    meta = {"name": name, "resourceVersion": "10", "managedFields": [_mf(*m) for m in managed]}
    if namespace:
        meta["namespace"] = namespace
    if label is not None:
        meta["labels"] = {"app.kubernetes.io/managed-by": label}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


# (id, the object as the API answers it, field_manager, why it is not gpuop's; None: it is gpuop's)
OWNERSHIP = [
    ("labelled and applied by gpuop", _existing(), "gpuop", None),
    ("status written by the scheduler, kwok and the controllers: not owners",
     _existing(kind="Pod", managed=[("gpuop", "Apply", None), ("kube-scheduler", "Update", "status"),
                                    ("kwok-controller", "Update", "status"),
                                    ("kube-controller-manager", "Update", "status")]), "gpuop", None),
    ("a scale subresource writer is not an owner",
     _existing(managed=[("gpuop", "Apply", None), ("hpa", "Update", "scale")]), "gpuop", None),
    ("gpuop's own merge patches (manager gpuop, Update) are gpuop's",
     _existing(managed=[("gpuop", "Apply", None), ("gpuop", "Update", None)]), "gpuop", None),
    ("applied by gpuop before it labelled what it applies", _existing(label=None), "gpuop", None),
    ("made by helm (client-side, Update) with its label", _existing(label="Helm", managed=[("helm", "Update", None)]),
     "gpuop", 'is managed by "helm" (not created by gpuop)'),
    ("made by helm with server-side apply, no label", _existing(label=None, managed=[("helm", "Apply", None)]),
     "gpuop", 'is managed by "helm" (not created by gpuop)'),
    ("an empty subresource is the object itself", _existing(label=None, managed=[("helm", "Update", "")]),
     "gpuop", 'is managed by "helm" (not created by gpuop)'),
    ("helm and gpuop, without gpuop's label (a take-over earlier, or before labels)",
     _existing(label=None, managed=[("gpuop", "Apply", None), ("helm", "Update", None)]),
     "gpuop", 'is managed by "helm" (not created by gpuop)'),
    ("gpuop's label, then edited by kubectl",
     _existing(managed=[("gpuop", "Apply", None), ("kubectl-edit", "Update", None), ("kubectl-label", "Update", None)]),
     "gpuop", 'is managed by "kubectl-edit", "kubectl-label" (labelled app.kubernetes.io/managed-by: gpuop, '
              'but a manager other than "gpuop" wrote fields of it)'),
    ("the default namespace: kube-apiserver wrote it, not only its status",
     _existing(kind="Namespace", label=None, namespace=None, name="default",
               managed=[("kube-apiserver", "Update", None)]),
     "gpuop", 'is managed by "kube-apiserver" (not created by gpuop)'),
    ("a DaemonSet's pod: its controller made it",
     _existing(kind="Pod", label=None, managed=[("kube-controller-manager", "Update", None),
                                                ("kubelet", "Update", "status")]),
     "gpuop", 'is managed by "kube-controller-manager" (not created by gpuop)'),
    ("labelled by another tool, no manager recorded", _existing(label="Helm", managed=[]),
     "gpuop", "is labelled app.kubernetes.io/managed-by: Helm (not created by gpuop)"),
    ("no manager and no label: not gpuop's", _existing(label=None, managed=[]),
     "gpuop", "has no field manager and no app.kubernetes.io/managed-by: gpuop label (not created by gpuop)"),
    ("another field manager of ours: gpuop's default manager is another manager",
     _existing(managed=[("gpuop", "Apply", None)]), "team-x",
     'is managed by "gpuop" (labelled app.kubernetes.io/managed-by: gpuop, but a manager other than "team-x" '
     'wrote fields of it)'),
    ("legacy objects count for the field manager they were applied with only",
     _existing(label=None, managed=[("gpuop", "Apply", None)]), "team-x", 'is managed by "gpuop" (not created by gpuop)'),
]


@pytest.mark.parametrize("current, field_manager, why", [o[1:] for o in OWNERSHIP], ids=[o[0] for o in OWNERSHIP])
def test_ownership(current, field_manager, why):
    assert k8s_apply.ownership(current, field_manager) == why


def test_owners_are_the_managers_of_the_object_itself_sorted_once():
    current = _existing(managed=[("helm", "Update", None), ("gpuop", "Apply", None), ("helm", "Update", None),
                                 ("kube-controller-manager", "Update", "status"), ("odd", "Unknown", None)])
    assert k8s_apply.owners(current) == ["gpuop", "helm"]
    assert k8s_apply.owners({"metadata": {}}) == []


LABELLED = [
    ("no labels", {}, {"app.kubernetes.io/managed-by": "gpuop"}),
    ("labels kept", {"labels": {"app": "x"}}, {"app": "x", "app.kubernetes.io/managed-by": "gpuop"}),
    ("the label already gpuop's", {"labels": {"app.kubernetes.io/managed-by": "gpuop"}},
     {"app.kubernetes.io/managed-by": "gpuop"}),
    ("labels null", {"labels": None}, {"app.kubernetes.io/managed-by": "gpuop"}),
]


@pytest.mark.parametrize("meta, labels", [x[1:] for x in LABELLED], ids=[x[0] for x in LABELLED])
def test_every_applied_object_carries_the_label_and_the_input_is_not_changed(meta, labels):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict({"name": "c", "namespace": "n"}, **meta)}
    before = copy.deepcopy(obj)
    assert k8s_apply.labelled(obj)["metadata"]["labels"] == labels
    assert obj == before


BAD_LABELS = [
    ({"app.kubernetes.io/managed-by": "Helm"},
     "objects[0] (ConfigMap n/c): metadata.labels['app.kubernetes.io/managed-by'] is 'Helm': "
     "every object gpuop applies carries app.kubernetes.io/managed-by: gpuop"),
    (["app"], "objects[0] (ConfigMap n/c): metadata.labels must be a mapping, got list"),
]


@pytest.mark.parametrize("labels, message", BAD_LABELS, ids=["another manager's label", "not a mapping"])
def test_a_label_gpuop_cannot_set_is_bad_input_before_anything_is_asked(labels, message, tmp_path):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "labels": labels}}
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(None, {"objects": [obj], "files": [{"path": str(tmp_path / "c.yaml"), "content": "x"}]})
    assert info.value.msg == message
    assert list(tmp_path.iterdir()) == []


def _merge(old, new):
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            out[key] = _merge(old.get(key), value)
        return out
    return copy.deepcopy(new)


class ScriptedCluster(object):
    """Objects by API path; GET answers them, a server-side apply merges its body in and records one Apply entry
    for its field manager (resourceVersion +1 when that changes anything), a dry run keeps nothing. ``conflict``:
    every apply that is not forced answers 409."""

    def __init__(self, objects=(), conflict=None):
        self.objects = {k8s_apply.object_path(o): copy.deepcopy(o) for o in objects}
        self.conflict = conflict
        self.calls = []

    def get_or_none(self, path):
        self.calls.append("GET %s" % path)
        return copy.deepcopy(self.objects.get(path))

    def request(self, method, path, body=None, query=None, content_type=None):
        assert method == "PATCH" and content_type == k8s_apply.APPLY_CONTENT_TYPE
        query = dict(query or {})
        self.calls.append("PATCH %s %s" % (path, " ".join("%s=%s" % kv for kv in sorted(query.items()))))
        if self.conflict and query.get("force") != "true":
            raise GpuopError("PATCH %s failed: HTTP 409: %s" % (path, self.conflict), status=409)
        old = self.objects.get(path)
        new = _merge(old or {}, json.loads(body))
        meta = new["metadata"]
        fields = [e for e in meta.get("managedFields") or [] if e["manager"] != query["fieldManager"]]
        meta["managedFields"] = fields + [_mf(query["fieldManager"])]
        if old is None or new != old:  # a value or the field ownership changed: a write
            meta["resourceVersion"] = str(int((old or {}).get("metadata", {}).get("resourceVersion", "0")) + 1)
        if query.get("dryRun") != "All":
            self.objects[path] = new
        return copy.deepcopy(new)


CM_PATH = "/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config"
GPU_OPERATOR = "/api/v1/namespaces/gpu-operator"


def _cm(value="version: v1"):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"}, "data": {"any": value}}


def _ns(name="gpu-operator"):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _helm_cm():
    cm = _existing(label="Helm", managed=[("helm", "Update", None)])
    cm["data"] = {"any": "version: v1\nsharing: {}"}
    return cm


def _params(tmp_path, *objects, **more):
    return dict({"objects": list(objects), "files": [{"path": str(tmp_path / "k8s" / "time-slicing.yaml"),
                                                      "content": "written\n"}]}, **more)


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check mode"])
def test_an_object_helm_made_is_refused_naming_it_and_helm_before_anything_is_written(tmp_path, check_mode):
    cluster = ScriptedCluster([_ns(), _helm_cm()])
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(cluster, _params(tmp_path, _ns(), _cm()), check_mode=check_mode)
    assert info.value.msg == ('ConfigMap gpu-operator/time-slicing-config is managed by "helm" (not created by gpuop): '
                              "refusing to take it over; set take_over: true to apply anyway")
    assert info.value.details["refused"] == [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "time-slicing-config", "namespace": "gpu-operator",
        "object": "ConfigMap gpu-operator/time-slicing-config", "managers": ["helm"],
        "reason": 'is managed by "helm" (not created by gpuop)'}]
    assert cluster.calls == ["GET %s" % GPU_OPERATOR, "GET %s" % CM_PATH]  # read only, nothing applied
    assert cluster.objects[CM_PATH] == _helm_cm()
    assert not (tmp_path / "k8s").exists()


def test_every_refused_object_is_named_in_one_error():
    pod = _existing(kind="Pod", label=None, name="cuda-probe", managed=[("kubectl-create", "Update", None)])
    pod_obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda-probe", "namespace": "gpu-operator"}}
    cluster = ScriptedCluster([_helm_cm(), pod])
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(cluster, {"objects": [_cm(), pod_obj]})
    assert info.value.msg == ('ConfigMap gpu-operator/time-slicing-config is managed by "helm" (not created by gpuop); '
                              'Pod gpu-operator/cuda-probe is managed by "kubectl-create" (not created by gpuop): '
                              "refusing to take them over; set take_over: true to apply anyway")
    assert [r["object"] for r in info.value.details["refused"]] == ["ConfigMap gpu-operator/time-slicing-config",
                                                                    "Pod gpu-operator/cuda-probe"]
    assert not [c for c in cluster.calls if c.startswith("PATCH")]


def test_take_over_applies_forced_and_says_whose_it_was(tmp_path):
    cluster = ScriptedCluster([_helm_cm()])
    result = k8s_apply.run(cluster, _params(tmp_path, _cm(), take_over=True))
    assert cluster.calls == ["GET %s" % CM_PATH, "PATCH %s fieldManager=gpuop force=true" % CM_PATH]
    [entry] = result["objects"]
    assert entry["result"] == "configured" and result["changed"] is True
    assert entry["foreign"] == 'is managed by "helm" (not created by gpuop)'
    stored = cluster.objects[CM_PATH]
    assert stored["data"] == {"any": "version: v1"}
    assert stored["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuop"}
    assert k8s_apply.owners(stored) == ["gpuop", "helm"]  # helm keeps what gpuop does not set: still shared
    assert (tmp_path / "k8s" / "time-slicing.yaml").read_text() == "written\n"


def test_take_over_sends_the_apply_even_when_the_fields_hold_already():
    helm = _helm_cm()
    helm["data"] = {"any": "version: v1"}
    helm["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "gpuop"  # the same values, someone else's fields
    helm["metadata"]["managedFields"] = [_mf("helm", "Update")]
    cluster = ScriptedCluster([helm])
    result = k8s_apply.run(cluster, {"objects": [_cm()], "take_over": True})
    assert cluster.calls[-1] == "PATCH %s fieldManager=gpuop force=true" % CM_PATH
    assert result["objects"][0]["result"] == "configured"  # gpuop became a manager of its fields


def test_a_namespace_someone_else_made_is_used_not_modified_and_the_objects_in_it_are_applied(tmp_path):
    default = _existing(kind="Namespace", label=None, namespace=None, name="gpu-operator",
                        managed=[("kube-apiserver", "Update", None)])
    cluster = ScriptedCluster([default])
    result = k8s_apply.run(cluster, _params(tmp_path, _ns(), _cm()))
    assert cluster.calls == ["GET %s" % GPU_OPERATOR, "GET %s" % CM_PATH, "PATCH %s fieldManager=gpuop" % CM_PATH]
    ns, cm = result["objects"]
    assert ns["result"] == "skipped" and ns["foreign"] == 'is managed by "kube-apiserver" (not created by gpuop)'
    assert ns["object"]["metadata"]["name"] == "gpu-operator" and "managedFields" not in ns["object"]["metadata"]
    assert cluster.objects[GPU_OPERATOR] == default  # never labelled
    assert cm["result"] == "created" and "foreign" not in cm
    assert cluster.objects[CM_PATH]["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuop"}
    assert "Namespace gpu-operator" not in [d["before_header"] for d in result["diff"]]
    assert "ConfigMap gpu-operator/time-slicing-config" in [d["before_header"] for d in result["diff"]]


@pytest.mark.parametrize("take_over", [False, True], ids=["", "take_over"])
def test_a_namespace_gpuop_created_before_labels_is_skipped_too_even_with_take_over(take_over):
    bare = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator", "resourceVersion": "3"}}
    cluster = ScriptedCluster([bare])
    result = k8s_apply.run(cluster, {"objects": [_ns()], "take_over": take_over})
    assert result["objects"][0]["result"] == "skipped" and result["changed"] is False
    assert result["objects"][0]["foreign"] == ("has no field manager and no app.kubernetes.io/managed-by: gpuop "
                                               "label (not created by gpuop)")
    assert cluster.calls == ["GET %s" % GPU_OPERATOR]
    assert cluster.objects[GPU_OPERATOR] == bare


def test_create_then_a_re_run_is_a_no_op_with_one_get_per_object():
    cluster = ScriptedCluster()
    first = k8s_apply.run(cluster, {"objects": [_ns(), _cm()]})
    assert [o["result"] for o in first["objects"]] == ["created", "created"]
    assert cluster.calls == ["GET %s" % GPU_OPERATOR, "GET %s" % CM_PATH,
                             "PATCH %s fieldManager=gpuop" % GPU_OPERATOR, "PATCH %s fieldManager=gpuop" % CM_PATH]
    for path in (GPU_OPERATOR, CM_PATH):
        assert cluster.objects[path]["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuop"}
    del cluster.calls[:]
    again = k8s_apply.run(cluster, {"objects": [_ns(), _cm()]})
    assert again["changed"] is False and [o["result"] for o in again["objects"]] == ["unchanged", "unchanged"]
    assert cluster.calls == ["GET %s" % GPU_OPERATOR, "GET %s" % CM_PATH]


def test_an_object_gpuop_applied_before_labels_gets_the_label():
    legacy = _existing(label=None)
    legacy["data"] = {"any": "version: v1"}
    cluster = ScriptedCluster([legacy])
    result = k8s_apply.run(cluster, {"objects": [_cm()]})
    assert result["objects"][0]["result"] == "configured" and "foreign" not in result["objects"][0]
    assert cluster.calls[-1] == "PATCH %s fieldManager=gpuop" % CM_PATH  # not forced
    assert cluster.objects[CM_PATH]["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuop"}


def test_a_conflict_between_the_get_and_the_apply_is_not_forced():
    cluster = ScriptedCluster([_existing()], conflict='Apply failed with 1 conflict: conflict with "helm": .data.any')
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(cluster, {"objects": [_cm()]})
    assert info.value.msg == ("ConfigMap gpu-operator/time-slicing-config: PATCH %s failed: HTTP 409: Apply failed with "
                              '1 conflict: conflict with "helm": .data.any: refusing to take it over; set take_over: '
                              "true to apply anyway" % CM_PATH)


def test_check_mode_dry_runs_a_take_over_and_keeps_nothing():
    cluster = ScriptedCluster([_helm_cm()])
    result = k8s_apply.run(cluster, {"objects": [_cm()], "take_over": True}, check_mode=True)
    assert cluster.calls[-1] == "PATCH %s dryRun=All fieldManager=gpuop force=true" % CM_PATH
    assert result["objects"][0]["result"] == "configured"
    assert result["objects"][0]["object"]["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuop"}
    assert cluster.objects[CM_PATH] == _helm_cm()


def test_the_same_object_twice_is_read_again_before_its_second_apply():
    cluster = ScriptedCluster()
    result = k8s_apply.run(cluster, {"objects": [_cm("one"), _cm("two")]})
    assert [o["result"] for o in result["objects"]] == ["created", "configured"]
    assert cluster.calls == ["GET %s" % CM_PATH, "PATCH %s fieldManager=gpuop" % CM_PATH,
                             "GET %s" % CM_PATH, "PATCH %s fieldManager=gpuop" % CM_PATH]


def test_take_over_must_be_a_bool():
    with pytest.raises(GpuopError) as info:
        k8s_apply.run(ScriptedCluster(), {"objects": [], "take_over": "yes"})
    assert info.value.msg == "take_over must be true or false, got 'yes'"
