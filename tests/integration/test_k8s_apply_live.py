"""k8s_apply against the live test cluster: files written, objects applied in order, re-run a no-op, check mode,
no take-over of what another field manager made.

Each test uses a namespace of its own and deletes it. What the cluster stored is read back with the official
kubernetes client, not with the module under test.
"""

import json
import os
import time
import uuid

import pytest

from gpuop_testlib import run_module, wait_until

kubernetes = pytest.importorskip("kubernetes")


@pytest.fixture
def namespace(k8s):
    core = k8s[0]
    name = "apply-%s" % uuid.uuid4().hex[:8]
    yield name
    try:
        core.delete_namespace(name)
    except kubernetes.client.ApiException:
        pass


def _args(kubeconfig, namespace, folder, value="one"):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": namespace},
          "data": {"key": value}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": namespace},
           "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    return {"kubeconfig": kubeconfig, "timeout": 30,
            "files": [{"path": os.path.join(folder, "k8s", "cfg.yaml"), "content": "data: {key: %s}\n" % value}],
            "objects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, cm, pod]}


def test_new_namespace_then_objects_in_it_then_a_no_op_rerun(lab_kubeconfig, k8s, namespace, tmp_path):
    core = k8s[0]
    args = _args(lab_kubeconfig, namespace, str(tmp_path))
    # Check mode first: nothing is written or kept; the objects in the namespace to come are "would create".
    preview = run_module("k8s_apply", args, check=True, diff=True)
    assert preview["changed"] is True, preview
    assert [o["result"] for o in preview["objects"]] == ["created", "would create", "would create"]
    assert not (tmp_path / "k8s").exists()
    with pytest.raises(kubernetes.client.ApiException):
        core.read_namespace(namespace)
    # The real run: created in order (the pod right after its namespace: the ServiceAccount race is retried).
    first = run_module("k8s_apply", args)
    assert first.get("failed") is not True, first
    assert [o["result"] for o in first["objects"]] == ["created", "created", "created"]
    assert (tmp_path / "k8s" / "cfg.yaml").read_text() == "data: {key: one}\n"
    assert core.read_namespaced_config_map("cfg", namespace).data == {"key": "one"}
    assert core.read_namespaced_pod("probe", namespace).spec.containers[0].image == "busybox"
    mtime = os.stat(tmp_path / "k8s" / "cfg.yaml").st_mtime_ns
    # Every object gpuop made carries its label; the manifest written keeps its bytes (no label added there).
    made = [core.read_namespace(namespace), core.read_namespaced_config_map("cfg", namespace),
            core.read_namespaced_pod("probe", namespace)]
    assert [m.metadata.labels.get("app.kubernetes.io/managed-by") for m in made] == ["gpuop"] * 3
    # kwok (and the scheduler, when it cannot place a pod) write the pod's status: managers of its status
    # subresource, not owners.
    pod = wait_until(lambda: _running(core, namespace), 30, "pod probe to be Running")
    others = {(f.manager, f.subresource) for f in pod.metadata.managed_fields if f.manager != "gpuop"}
    assert ("kwok-controller", "status") in others and {sub for _, sub in others} == {"status"}, others
    versions = [_version(core, namespace)]
    # The same again: the API recognises it, nothing is written.
    again = run_module("k8s_apply", args)
    assert again["changed"] is False, again
    assert [o["result"] for o in again["objects"]] == ["unchanged"] * 3
    assert "foreign" not in str(again["objects"])
    assert os.stat(tmp_path / "k8s" / "cfg.yaml").st_mtime_ns == mtime
    assert _version(core, namespace) == versions[0]
    # A changed value: configured, in check mode only reported.
    changed_args = _args(lab_kubeconfig, namespace, str(tmp_path), value="two")
    dry = run_module("k8s_apply", changed_args, check=True)
    assert [o["result"] for o in dry["objects"]] == ["unchanged", "configured", "unchanged"], dry
    assert core.read_namespaced_config_map("cfg", namespace).data == {"key": "one"}
    real = run_module("k8s_apply", changed_args)
    assert [o["result"] for o in real["objects"]] == ["unchanged", "configured", "unchanged"], real
    assert core.read_namespaced_config_map("cfg", namespace).data == {"key": "two"}


def _running(core, namespace):
    pod = core.read_namespaced_pod("probe", namespace)
    return pod if pod.status.phase == "Running" else None


def _version(core, namespace):
    """The resourceVersion of the namespace, the ConfigMap and the pod."""
    return [core.read_namespace(namespace).metadata.resource_version,
            core.read_namespaced_config_map("cfg", namespace).metadata.resource_version,
            core.read_namespaced_pod("probe", namespace).metadata.resource_version]


def test_an_unknown_kind_fails_before_anything_is_written(lab_kubeconfig, tmp_path):
    args = _args(lab_kubeconfig, "never-made", str(tmp_path))
    args["objects"].append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "never-made"}})
    result = run_module("k8s_apply", args)
    assert result["failed"] is True
    assert "objects[3]: apiVersion 'v1' kind 'Secret' is not one k8s_apply knows" in result["msg"]
    assert "Traceback" not in str(result)
    assert not (tmp_path / "k8s").exists()


def test_read_is_done_before_anything_is_written_and_objects_come_back_as_stored(lab_kubeconfig, k8s, namespace, tmp_path):
    core = k8s[0]
    args = _args(lab_kubeconfig, namespace, str(tmp_path))
    args["read"] = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": namespace}},
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]
    first = run_module("k8s_apply", args)
    assert first.get("failed") is not True, first
    # Read before the apply: the ConfigMap did not exist yet; default did, as the API has it.
    assert first["read"][0] is None
    assert first["read"][1]["metadata"]["uid"] == core.read_namespace("default").metadata.uid
    assert "managedFields" not in first["read"][1]["metadata"]
    # Each applied object as stored: the ConfigMap's data and the uid the API gave it.
    stored = first["objects"][1]["object"]
    assert stored["data"] == {"key": "one"}
    assert stored["metadata"]["uid"] == core.read_namespaced_config_map("cfg", namespace).metadata.uid
    again = run_module("k8s_apply", args)
    assert again["changed"] is False and again["read"][0]["data"] == {"key": "one"}


def test_a_cluster_that_does_not_answer_fails_the_read_before_any_file_is_written(tmp_path):
    import socket
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:%d', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n" % port)
    args = _args(str(kubeconfig), "never-made", str(tmp_path))
    args["read"] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]
    result = run_module("k8s_apply", args)
    assert result["failed"] is True
    assert result["msg"].startswith("reading Namespace default: cannot reach the API server at https://127.0.0.1:%d" % port), result
    assert "Traceback" not in str(result)
    assert not (tmp_path / "k8s").exists()


# --- No take-over: a time-slicing-config that helm made (as the gpu-operator chart does) is not gpuop's.

TIME_SLICING = "time-slicing-config"
HELM_LABELS = {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "gpu-operator"}


@pytest.fixture
def helm_namespace(k8s):
    """Namespace gpu-operator and its time-slicing-config as helm makes them (client-side, field manager helm).

    gpu-operator when the cluster has none (the test cluster before test_site.py runs site.yml on it);
    else gpu-operator-<random>, so the lab's own gpu-operator is never touched. Deleted at the end, and
    waited for: site.yml applies into gpu-operator right after.
    """
    core = k8s[0]
    try:
        core.read_namespace("gpu-operator")
        name = "gpu-operator-%s" % uuid.uuid4().hex[:8]
    except kubernetes.client.ApiException as exc:
        assert exc.status == 404, exc
        name = "gpu-operator"
    annotations = {"meta.helm.sh/release-name": "gpu-operator", "meta.helm.sh/release-namespace": name}
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="helm")
    core.create_namespaced_config_map(name, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": TIME_SLICING, "labels": HELM_LABELS, "annotations": annotations},
        "data": {"any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n"
                        "        replicas: 2\n"}}, field_manager="helm")
    yield name
    try:
        core.delete_namespace(name)
    except kubernetes.client.ApiException:
        pass

    def gone():
        try:
            core.read_namespace(name)
        except kubernetes.client.ApiException as exc:
            return exc.status == 404
        return False
    wait_until(gone, 60, "namespace %s to be deleted" % name)


def _raw_config_map(core, namespace):
    """The ConfigMap's bytes as the API answers them (managedFields included)."""
    return core.read_namespaced_config_map(TIME_SLICING, namespace, _preload_content=False).data


def _time_slicing_args(kubeconfig, namespace, folder, **more):
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n"
                "data:\n  any: |-\n    version: v1\n" % (TIME_SLICING, namespace))
    return dict({"kubeconfig": kubeconfig, "timeout": 30,
                 "files": [{"path": os.path.join(folder, "k8s", "time-slicing.yaml"), "content": manifest}],
                 "objects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                             {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": TIME_SLICING, "namespace": namespace},
                              "data": {"any": "version: v1"}}]}, **more)


def test_a_time_slicing_config_helm_made_is_refused_naming_helm_and_left_as_it_is(
        lab_kubeconfig, k8s, helm_namespace, tmp_path):
    core = k8s[0]
    before = _raw_config_map(core, helm_namespace)
    namespace_version = core.read_namespace(helm_namespace).metadata.resource_version
    args = _time_slicing_args(lab_kubeconfig, helm_namespace, str(tmp_path))
    message = ('ConfigMap %s/time-slicing-config is managed by "helm" (not created by gpuop): refusing to take it '
               "over; set take_over: true to apply anyway" % helm_namespace)
    for check in (True, False):
        started = time.monotonic()
        result = run_module("k8s_apply", args, check=check, diff=True)
        assert result.get("failed") is True, result
        assert result["msg"] == message, result
        assert result["refused"] == [{"apiVersion": "v1", "kind": "ConfigMap", "name": TIME_SLICING,
                                      "namespace": helm_namespace, "managers": ["helm"],
                                      "object": "ConfigMap %s/%s" % (helm_namespace, TIME_SLICING),
                                      "reason": 'is managed by "helm" (not created by gpuop)'}]
        assert "Traceback" not in str(result)
        assert time.monotonic() - started < 30
        # Nothing written, nothing applied: the ConfigMap is byte-identical (same resourceVersion, data, managers).
        assert _raw_config_map(core, helm_namespace) == before
        assert not (tmp_path / "k8s").exists()
    stored = json.loads(before)
    assert stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert core.read_namespace(helm_namespace).metadata.resource_version == namespace_version


def test_take_over_applies_over_helm_and_the_namespace_is_still_not_modified(
        lab_kubeconfig, k8s, helm_namespace, tmp_path):
    core = k8s[0]
    namespace_before = core.read_namespace(helm_namespace)
    args = _time_slicing_args(lab_kubeconfig, helm_namespace, str(tmp_path), take_over=True)
    preview = run_module("k8s_apply", args, check=True, diff=True)
    assert preview.get("failed") is not True, preview
    assert [o["result"] for o in preview["objects"]] == ["skipped", "configured"], preview
    assert json.loads(_raw_config_map(core, helm_namespace))["data"]["any"].startswith("version: v1\nsharing:")
    taken = run_module("k8s_apply", args)
    assert taken.get("failed") is not True, taken
    assert taken["changed"] is True
    namespace_entry, config_map_entry = taken["objects"]
    # gpu-operator is helm's: used as it is, not labelled (take_over or not).
    assert namespace_entry["result"] == "skipped"
    assert namespace_entry["foreign"] == 'is managed by "helm" (not created by gpuop)'
    after = core.read_namespace(helm_namespace)
    assert after.metadata.resource_version == namespace_before.metadata.resource_version
    assert "app.kubernetes.io/managed-by" not in (after.metadata.labels or {})
    # The ConfigMap: gpuop's values and label, forced over helm's; helm keeps what gpuop does not set.
    assert config_map_entry["result"] == "configured"
    assert config_map_entry["foreign"] == 'is managed by "helm" (not created by gpuop)'
    cm = core.read_namespaced_config_map(TIME_SLICING, helm_namespace)
    assert cm.data == {"any": "version: v1"}
    assert cm.metadata.labels == {"app.kubernetes.io/managed-by": "gpuop", "app.kubernetes.io/name": "gpu-operator"}
    assert cm.metadata.annotations["meta.helm.sh/release-name"] == "gpu-operator"
    assert {(f.manager, f.operation) for f in cm.metadata.managed_fields} == {("gpuop", "Apply"), ("helm", "Update")}
    assert (tmp_path / "k8s" / "time-slicing.yaml").read_text().endswith("  any: |-\n    version: v1\n")
    # Taken over again: the API recognises the same apply.
    again = run_module("k8s_apply", args)
    assert again["changed"] is False and [o["result"] for o in again["objects"]] == ["skipped", "unchanged"], again
    # Still shared with helm: without take_over it is refused again, and left as it is.
    version = cm.metadata.resource_version
    refused = run_module("k8s_apply", _time_slicing_args(lab_kubeconfig, helm_namespace, str(tmp_path)))
    assert refused.get("failed") is True
    assert refused["msg"].startswith('ConfigMap %s/time-slicing-config is managed by "helm" (labelled '
                                     "app.kubernetes.io/managed-by: gpuop, but a manager other than \"gpuop\" wrote "
                                     "fields of it): refusing to take it over" % helm_namespace), refused
    assert core.read_namespaced_config_map(TIME_SLICING, helm_namespace).metadata.resource_version == version


def test_an_object_gpuop_made_then_edited_by_another_manager_is_refused(lab_kubeconfig, k8s, namespace, tmp_path):
    core = k8s[0]
    args = _args(lab_kubeconfig, namespace, str(tmp_path))
    args["objects"] = args["objects"][:2]
    first = run_module("k8s_apply", args)
    assert [o["result"] for o in first["objects"]] == ["created", "created"], first
    core.patch_namespaced_config_map("cfg", namespace, {"data": {"extra": "by hand"}}, field_manager="kubectl-edit")
    version = core.read_namespaced_config_map("cfg", namespace).metadata.resource_version
    result = run_module("k8s_apply", args)
    assert result.get("failed") is True
    assert result["msg"] == ('ConfigMap %s/cfg is managed by "kubectl-edit" (labelled app.kubernetes.io/managed-by: '
                             'gpuop, but a manager other than "gpuop" wrote fields of it): refusing to take it over; '
                             "set take_over: true to apply anyway" % namespace), result
    assert core.read_namespaced_config_map("cfg", namespace).metadata.resource_version == version
