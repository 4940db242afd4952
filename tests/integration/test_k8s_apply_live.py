"""k8s_apply against the live test cluster: files written, objects applied in order, re-run a no-op, check mode.

Each test uses a namespace of its own (unique name) and deletes it. What the cluster stored is read
back with the official kubernetes client, not with the module under test.
"""

import os
import uuid

import pytest

from gpuop_testlib import run_module

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
    # The same again: the API recognises it, nothing is written.
    again = run_module("k8s_apply", args)
    assert again["changed"] is False, again
    assert [o["result"] for o in again["objects"]] == ["unchanged"] * 3
    assert os.stat(tmp_path / "k8s" / "cfg.yaml").st_mtime_ns == mtime
    # A changed value: configured, in check mode only reported.
    changed_args = _args(lab_kubeconfig, namespace, str(tmp_path), value="two")
    dry = run_module("k8s_apply", changed_args, check=True)
    assert [o["result"] for o in dry["objects"]] == ["unchanged", "configured", "unchanged"], dry
    assert core.read_namespaced_config_map("cfg", namespace).data == {"key": "one"}
    real = run_module("k8s_apply", changed_args)
    assert [o["result"] for o in real["objects"]] == ["unchanged", "configured", "unchanged"], real
    assert core.read_namespaced_config_map("cfg", namespace).data == {"key": "two"}


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
