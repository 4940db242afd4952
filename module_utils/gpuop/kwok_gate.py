# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The runtime-handler gate a real kubelet enforces, played by kwok Stages.

Pure logic plus a few API calls through :class:`gpuop.k8s.Cluster` (a real cluster, never mocked).

What a kubelet does, and what gpuop makes kwok do instead (docs/facts.md):

* A kubelet >= 1.30 copies CRI Status ``runtime_handlers`` into ``node.status.runtimeHandlers``.
  gpuop publishes the handlers a real containerd sandbox daemon reported (status subresource, kwok
  nodes only). containerd 2.x reports ``runtime_handlers`` itself (``""`` = the default handler);
  containerd 1.6 does not, so for it the loaded runtimes' names (CRI Status ``config``) stand in,
  and the node says so in the annotation ``gpuop.io/runtime-handlers-source``.
* A pod whose RuntimeClass handler the node has not loaded never starts: RunPodSandbox fails and
  the kubelet records ``FailedCreatePodSandBox`` with containerd's message; the pod stays Pending
  with its containers waiting in ``ContainerCreating``. gpuop asks the daemon itself for that
  message (containerd_runtimes' RunPodSandbox probe) and gives kwok one Stage per blocked
  (RuntimeClass, node) pair that writes that event and status.
* A node whose containerd lost its CRI plugin (1.x after the restart) has no kubelet that can run:
  gpuop marks it NotReady (annotation ``gpuop.io/cri-error`` + a node Stage) and blocks every pod on it.

kwok's own default stages (read from its Go module, ``kustomize/stage/...``) are applied with one
selector added each, so that every pod and node matches exactly one of them or of the gate's stages:
the pod stages key on ``(.spec.runtimeClassName // "") + "@" + (.spec.nodeName // "")`` with
``In`` (gate) and ``NotIn`` (kwok's pod-ready) over the same list, the node stages on the
``gpuop.io/cri-error`` annotation with ``Exists`` and ``DoesNotExist``.
"""

import copy
import json
import os
import re
import time

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import NotFound, is_kwok_managed, node_path, wait_for

POLL_INTERVAL = 0.2
GROUP = "kwok.x-k8s.io"
STAGES = "/apis/kwok.x-k8s.io/v1alpha1/stages"
STAGE_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/stages.kwok.x-k8s.io"
RUNTIME_CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
GATE_LABEL = "gpuop.io/runtime-gate"
CRI_ERROR = "gpuop.io/cri-error"
SOURCE = "gpuop.io/runtime-handlers-source"
VERSION = "gpuop.io/containerd-version"
PAIR_KEY = '(.spec.runtimeClassName // "") + "@" + (.spec.nodeName // "")'
NO_PAIR = "<none>"
PROBE_PREFIX = "gate-probe-"
WAITING_KEY = ".status.containerStatuses.[].state.waiting.reason"
READY_KEY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
# kwok's defaults as kwokctl configures them (binary runtime, node leases on).
DEFAULT_STAGES = (
    ("node-initialize", "node/fast/node-initialize.yaml"),
    ("node-heartbeat-with-lease", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"),
    ("pod-ready", "pod/fast/pod-ready.yaml"),
    ("pod-complete", "pod/fast/pod-complete.yaml"),
    ("pod-delete", "pod/fast/pod-delete.yaml"),
)
_RPC = re.compile(r"(rpc error: code = \w+ desc = .*)$")
_DNS = re.compile(r"[^a-z0-9-]+")

BLOCKED_STATUS = """{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodScheduled
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  message: "containers with unready status: [{{ range $i, $c := .spec.containers }}{{ if $i }} {{ end }}{{ $c.name }}{{ end }}]"
  reason: ContainersNotReady
  status: "False"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  message: "containers with unready status: [{{ range $i, $c := .spec.containers }}{{ if $i }} {{ end }}{{ $c.name }}{{ end }}]"
  reason: ContainersNotReady
  status: "False"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  imageID: ""
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: ContainerCreating
{{ end }}
phase: Pending
startTime: {{ $now | Quote }}
"""

CRI_DOWN_STATUS = """{{ $now := Now }}
{{ $message := index .metadata.annotations "gpuop.io/cri-error" }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
{{ if eq .type "Ready" }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ printf "container runtime is down: %s" $message | Quote }}
  reason: KubeletNotReady
  status: "False"
  type: Ready
{{ else }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
{{ end }}
"""


# --------------------------------------------------------------------------------------------
# Pure: what a node publishes, what is blocked, which stages say so
# --------------------------------------------------------------------------------------------

def rpc_message(text):
    """The ``rpc error: ...`` part of a crictl line (quotes unescaped), or the text itself."""
    for line in (text or "").splitlines()[::-1]:
        found = _RPC.search(line.replace('\\"', '"'))
        if found:
            return found.group(1).rstrip('"').rstrip()
    return (text or "").strip()


def node_handlers(loaded):
    """(NodeRuntimeHandler list as a kubelet writes it, source) from a daemon's loaded view."""
    if not loaded["cri_loaded"]:
        return [], "none: CRI plugin failed"
    reported = loaded.get("cri_runtime_handlers")
    if reported is not None:
        out = []
        for handler in reported:
            features = handler.get("features") or {}
            out.append({"name": handler.get("name", ""),
                        "features": {"recursiveReadOnlyMounts": bool(features.get("recursive_read_only_mounts",
                                                                                  features.get("recursiveReadOnlyMounts"))),
                                     "userNamespaces": bool(features.get("user_namespaces",
                                                                         features.get("userNamespaces")))}})
        return out, "CRI Status runtime_handlers"
    return ([{"name": name, "features": {"recursiveReadOnlyMounts": False, "userNamespaces": False}}
             for name in loaded["runtimes"]], "CRI Status config (containerd 1.x reports no runtime_handlers)")


def blocked_pairs(nodes, runtime_classes):
    """{pair: message} of every (RuntimeClass, node) pod that cannot start, with containerd's words.

    ``nodes``: [{name, loaded, probes}]; ``runtime_classes``: {name: handler}.
    """
    out = {}
    for node in nodes:
        loaded = node["loaded"]
        if not loaded["cri_loaded"]:
            why = rpc_message(loaded.get("crictl_error")) or loaded["error"]
            message = "Failed to create pod sandbox: %s" % why
            out["@" + node["name"]] = message
            for rc in runtime_classes:
                out["%s@%s" % (rc, node["name"])] = message
            continue
        names = {h["name"] for h in node_handlers(loaded)[0]}
        probes = {p["handler"]: p for p in node.get("probes") or []}
        for rc, handler in sorted(runtime_classes.items()):
            if handler in names:
                continue
            probe = probes.get(handler)
            if not probe or not probe.get("message"):
                raise GpuopError("node %s lacks handler %r (RuntimeClass %s) but no RunPodSandbox probe answered for it: "
                                 "add %s to the probed handlers" % (node["name"], handler, rc, handler))
            out["%s@%s" % (rc, node["name"])] = "Failed to create pod sandbox: %s" % probe["message"]
    return out


def _with(stage, *expressions):
    stage = copy.deepcopy(stage)
    selector = stage["spec"].setdefault("selector", {})
    selector.setdefault("matchExpressions", []).extend(expressions)
    return stage


def _labelled(stage):
    # The Stage CRD's defaults, written out so that a stage read back equals the one applied.
    stage["spec"].setdefault("weight", 0)
    if "next" in stage["spec"]:
        stage["spec"]["next"].setdefault("statusSubresource", "status")
    meta = stage.setdefault("metadata", {})
    meta.setdefault("labels", {})[GATE_LABEL] = "true"
    stage["apiVersion"] = "%s/v1alpha1" % GROUP
    stage["kind"] = "Stage"
    return stage


def _stage_name(pair):
    rc, node = pair.split("@", 1)
    name = "gpuop-gate-pod-%s-%s" % (node, rc or "default")
    return _DNS.sub("-", name.lower()).strip("-")[:253]


def stages(defaults, blocked):
    """Every Stage the cluster gets: kwok's defaults with one selector each, and the gate's own."""
    pairs = sorted(blocked) or [NO_PAIR]
    out = []
    no_error = {"key": '.metadata.annotations["%s"]' % CRI_ERROR, "operator": "DoesNotExist"}
    for name, stage in defaults:
        if name in ("node-initialize", "node-heartbeat-with-lease"):
            stage = _with(stage, no_error)
        elif name == "pod-ready":
            stage = _with(stage, {"key": PAIR_KEY, "operator": "NotIn", "values": pairs})
        out.append(_labelled(copy.deepcopy(stage)))
    out.append(_labelled({
        "metadata": {"name": "gpuop-gate-node-cri-down"},
        "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Node"},
                 "selector": {"matchExpressions": [
                     {"key": '.metadata.annotations["%s"]' % CRI_ERROR, "operator": "Exists"},
                     {"key": READY_KEY, "operator": "NotIn", "values": ["False"]}]},
                 "next": {"statusTemplate": CRI_DOWN_STATUS}}}))
    for pair in sorted(blocked):
        out.append(_labelled({
            "metadata": {"name": _stage_name(pair), "annotations": {"gpuop.io/pair": pair}},
            "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                     "selector": {"matchExpressions": [
                         {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                         {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
                         {"key": PAIR_KEY, "operator": "In", "values": [pair]},
                         {"key": WAITING_KEY, "operator": "NotIn", "values": ["ContainerCreating"]}]},
                     "next": {"event": {"type": "Warning", "reason": "FailedCreatePodSandBox",
                                        "message": blocked[pair]},
                              "statusTemplate": BLOCKED_STATUS}}}))
    return out


def load_defaults(stage_dir):
    """kwok's default stages from its Go module (``.../kwok@vX/kustomize/stage``)."""
    if not HAS_YAML:  # pragma: no cover
        raise GpuopError("the python 'yaml' package is missing")
    out = []
    for name, rel in DEFAULT_STAGES:
        path = os.path.join(stage_dir, rel)
        try:
            with open(path, encoding="utf-8") as handle:
                stage = yaml.safe_load(handle)
        except OSError as exc:
            raise GpuopError("kwok stage %s: %s (stage_dir must be kwok's kustomize/stage folder)" % (path, exc.strerror))
        if not isinstance(stage, dict) or stage.get("kind") != "Stage" or stage.get("metadata", {}).get("name") != name:
            raise GpuopError("%s: not kwok's Stage %s" % (path, name))
        out.append((name, stage))
    return out


# --------------------------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------------------------

def _stage_path(name):
    return "%s/%s" % (STAGES, name)


def has_gate_stages(cluster):
    """Whether gpuop's stages are on the cluster already (and its Stage CRD at all)."""
    try:
        return bool(cluster.list(STAGES, label_selector="%s=true" % GATE_LABEL))
    except NotFound:
        raise GpuopError("the cluster has no Stage CRD (stages.kwok.x-k8s.io): create it with "
                         "`kwokctl create cluster --enable-crds=Stage` (playbooks/runtime-gate.yml does)")


def apply_stages(cluster, desired, check_mode=False):
    """Create or replace gpuop's stages whose spec differs; delete gpuop's stages no longer wanted."""
    try:
        cluster.get(STAGE_CRD)
    except NotFound:
        raise GpuopError("the cluster has no Stage CRD (stages.kwok.x-k8s.io): create it with "
                         "`kwokctl create cluster --enable-crds=Stage` (playbooks/runtime-gate.yml does)")
    existing = {s["metadata"]["name"]: s for s in cluster.list(STAGES)}
    changed = []
    for stage in desired:
        name = stage["metadata"]["name"]
        have = existing.get(name)
        if have and have.get("spec") == stage["spec"] and \
                (have["metadata"].get("labels") or {}).get(GATE_LABEL) == "true" and \
                (have["metadata"].get("annotations") or {}).get("gpuop.io/pair") == \
                (stage["metadata"].get("annotations") or {}).get("gpuop.io/pair"):
            continue
        changed.append(name)
        if check_mode:
            continue
        if have:
            body = copy.deepcopy(stage)
            body["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
            cluster.request("PUT", _stage_path(name), body=body)
        else:
            cluster.request("POST", STAGES, body=stage)
    wanted = {s["metadata"]["name"] for s in desired}
    for name, have in sorted(existing.items()):
        if name not in wanted and (have["metadata"].get("labels") or {}).get(GATE_LABEL) == "true":
            changed.append(name)
            if not check_mode:
                cluster.request("DELETE", _stage_path(name))
    return changed


def publish_node(cluster, name, handlers, source, version, cri_error, check_mode=False):
    """node.status.runtimeHandlers (status subresource) and gpuop's annotations; kwok nodes only."""
    node = cluster.get(node_path(name))
    if not is_kwok_managed(node):
        raise GpuopError("node %s is not managed by kwok: gpuop publishes runtimeHandlers only on kwok nodes "
                         "(a real kubelet publishes its own)" % name)
    changed = False
    if (node.get("status") or {}).get("runtimeHandlers") != handlers:
        changed = True
        if not check_mode:
            cluster.patch(node_path(name) + "/status", {"status": {"runtimeHandlers": handlers}})
    annotations = node["metadata"].get("annotations") or {}
    want = {SOURCE: source, VERSION: version, CRI_ERROR: cri_error}
    patch = {k: v for k, v in want.items() if annotations.get(k) != v}
    if patch:
        changed = True
        if not check_mode:
            cluster.patch(node_path(name), {"metadata": {"annotations": patch}})
    return changed


def forget(cluster, namespace, check_mode=False, timeout=60.0):
    """A new gate on a reused cluster: delete gpuop's probe pods (at once, and wait until they are gone),
    and take gpuop's handlers and annotations off every kwok node."""
    changed = []
    pods_path = "/api/v1/namespaces/%s/pods" % namespace
    selector = "%s=probe" % GATE_LABEL
    for pod in cluster.list(pods_path, label_selector=selector):
        changed.append("pod/%s" % pod["metadata"]["name"])
        if not check_mode:
            cluster.request("DELETE", "%s/%s" % (pods_path, pod["metadata"]["name"]),
                            body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    if changed and not check_mode:
        wait_for(lambda: cluster.list(pods_path, label_selector=selector), lambda pods: not pods, timeout,
                 "gpuop's probe pods in %s to be gone" % namespace)
    for node in cluster.list("/api/v1/nodes"):
        if not is_kwok_managed(node):
            continue
        name = node["metadata"]["name"]
        annotations = node["metadata"].get("annotations") or {}
        stale = {k: None for k in (SOURCE, VERSION, CRI_ERROR) if k in annotations}
        has_handlers = (node.get("status") or {}).get("runtimeHandlers") is not None
        if not stale and not has_handlers:
            continue
        changed.append("node/%s" % name)
        if check_mode:
            continue
        if has_handlers:
            cluster.patch(node_path(name) + "/status", {"status": {"runtimeHandlers": None}})
        if stale:
            cluster.patch(node_path(name), {"metadata": {"annotations": stale}})
    return changed


def runtime_classes(cluster):
    return {rc["metadata"]["name"]: rc["handler"] for rc in cluster.list(RUNTIME_CLASSES)}


def ensure_pods(cluster, namespace, pods, image, check_mode=False, sa_timeout=60.0):
    """Create the probe pods that do not exist yet (each pinned by nodeName, one container)."""
    created = []
    if not pods:
        return created
    if cluster.get_or_none("/api/v1/namespaces/%s" % namespace) is None:
        created.append("namespace/%s" % namespace)
        if not check_mode:
            cluster.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": namespace}})
    if not check_mode:
        # The controller-manager creates the namespace's default ServiceAccount; pods are refused until then.
        sa = "/api/v1/namespaces/%s/serviceaccounts/default" % namespace
        wait_for(lambda: cluster.get_or_none(sa), lambda found: found is not None, sa_timeout,
                 "ServiceAccount %s/default" % namespace)
    for pod in pods:
        path = "/api/v1/namespaces/%s/pods/%s" % (namespace, pod["name"])
        if cluster.get_or_none(path) is not None:
            continue
        created.append("pod/%s" % pod["name"])
        if check_mode:
            continue
        spec = {"nodeName": pod["node"], "containers": [{"name": "probe", "image": image}],
                "tolerations": [{"operator": "Exists"}]}
        if pod.get("runtime_class"):
            spec["runtimeClassName"] = pod["runtime_class"]
        cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace,
                        body={"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": pod["name"], "namespace": namespace, "labels": {GATE_LABEL: "probe"}},
                              "spec": spec})
    return created


def pod_state(cluster, namespace, name):
    """phase, the first container's waiting reason, and the FailedCreatePodSandBox messages of a pod."""
    pod = cluster.get("/api/v1/namespaces/%s/pods/%s" % (namespace, name))
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    waiting = ((statuses[0].get("state") or {}).get("waiting") or {}).get("reason")
    events = cluster.list("/api/v1/namespaces/%s/events" % namespace,
                          field_selector="involvedObject.name=%s,reason=FailedCreatePodSandBox" % name)
    return {"name": name, "node": pod["spec"].get("nodeName"), "runtime_class": pod["spec"].get("runtimeClassName"),
            "phase": (pod.get("status") or {}).get("phase"), "waiting": waiting,
            "events": sorted({e.get("message", "") for e in events})}


def kick(cluster, namespace, names, generation):
    """Touch pods (an annotation) so kwok matches them against changed stages, as a kubelet retries."""
    for name in names:
        cluster.patch("/api/v1/namespaces/%s/pods/%s" % (namespace, name),
                      {"metadata": {"annotations": {"gpuop.io/runtime-gate-generation": generation}}})


def wait_pods(cluster, namespace, expect, timeout, clock=time.monotonic, sleep=time.sleep):
    """Wait (poll 0.2 s) until every pod of ``expect`` ({name: 'blocked' | 'running'}) is so.

    blocked: phase Pending, waiting ContainerCreating, a FailedCreatePodSandBox event.
    running: phase Running.
    """
    deadline = clock() + timeout
    while True:
        states = {name: pod_state(cluster, namespace, name) for name in sorted(expect)}
        ok = True
        for name, want in expect.items():
            st = states[name]
            if want == "blocked":
                ok = ok and st["phase"] == "Pending" and st["waiting"] == "ContainerCreating" and bool(st["events"])
            else:
                ok = ok and st["phase"] == "Running"
        if ok:
            return states
        if clock() >= deadline:
            raise GpuopError("pods did not reach %s within %ss; last seen: %s"
                             % (json.dumps(expect, sort_keys=True), timeout, json.dumps(states, sort_keys=True)))
        sleep(POLL_INTERVAL)
