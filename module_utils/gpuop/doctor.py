# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The incident doctor: one read-only look at a cluster, every broken GPU gate named with its evidence.

``collect`` does the I/O through a ``gpuop.k8s.Cluster``: a fixed set of LIST calls (and one GET of
``/version``), whatever the number of nodes, pods or DaemonSets; never a write verb, never a call
per object. ``diagnose`` is pure: it takes the raw JSON lists and returns the findings and the
gates' states. The decisions reuse the project's own logic, imported, never copied:

* rollouts: ``gpuop.rollout.analyse`` (phase, blocker and its numbers) for every DaemonSet;
* sharing: ``gpuop.sharing.parse_config`` / ``compute`` (the device plugin's own rules) for every
  ConfigMap value that is a sharing config (found by content: ``version: v1`` and ``sharing:``);
* containerd: ``gpuop.containerd_merge.analyze`` (what 1.x and 2.x load after a restart);
* scheduler messages and quantities: ``gpuop.rollout.parse_scheduler_message``, ``pod_request``,
  ``base_units``; extended resource names: ``gpuop.node_resources.validate_resource_name``.

Gates and what each finding means (severity in brackets):

* ``runtime-handler``: every RuntimeClass used by a live pod, or named in ``runtime_classes`` and
  present, against each eligible node's ``status.runtimeHandlers`` (what the kubelet says the
  runtime loaded, Kubernetes >= 1.30). ``handler-not-loaded`` [critical when a pod using the class
  sits on such a node, or no node has the handler; warning otherwise]; ``handler-unknown``
  [warning]: nodes that report no handler at all are never taken as healthy;
  ``sandbox-failed`` [critical]: a live pod with a ``FailedCreatePodSandBox`` event (containerd's
  message kept); ``runtimeclass-missing`` [critical]: pods name a RuntimeClass that is gone.
* ``advertisement``: ``pod-insufficient-resource`` [critical]: pods Pending with
  ``Insufficient <extended resource>``, with every node's capacity / allocatable / requested of it.
* ``sharing``: ``sharing-config`` [info]: each config found, its slots and the memory guaranteed per
  slot; ``sharing-config-invalid`` [warning]: the device plugin would refuse it;
  ``advertisement-mismatch`` [warning]: GPU nodes whose advertisement is not physical x replicas;
  ``physical-gpus-unknown`` [info]: GPU nodes that could not be checked.
* ``rollout``: ``rollout-stalled`` [critical] with the blocker and its numbers;
  ``daemonset-missing`` [warning] for a selected DaemonSet that does not exist.
* ``containerd``: ``containerd-cri-fails`` [critical]: after a restart, that containerd version's CRI
  plugin would not load; ``containerd-runtime-dropped`` [warning]: a written runtime would not be
  loaded; ``containerd-warning`` [warning]: the merge module's warnings.
* any gate: ``read-failed`` [warning]: a list the gate needs was refused (RBAC, old API).

The report is deterministic: same cluster state, same bytes (no timestamps, sorted everywhere).
"""

import copy
import json
import re
import shlex

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge, fleet, rollout, sharing
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import K8S_ARG_SPEC
from ansible_collections.gpuop.gates.plugins.module_utils.node_resources import validate_resource_name

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

SEVERITIES = ("critical", "warning", "info")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
GATES = ("runtime-handler", "advertisement", "sharing", "rollout", "containerd")
# The fleet gate, judged only when node views are given (option nodes): each node's containerd over SSH.
FLEET_GATE = "containerd-nodes"
# Columns of the node x gate matrix, and the verdicts that break each.
NODE_COLUMNS = (("read", ("node-unreadable",)),
                ("restart", ("cri-fails-on-restart", "runtime-dropped-on-restart", "restart-pending")),
                ("files", ("orphan-dropin", "runtime-incomplete", "plugin-path-ignored", "dropin-minimal-on-1x")),
                ("handlers", ("handler-not-loaded",)))
GATE_RANK = {name: rank for rank, name in enumerate(GATES + ("containerd-nodes",))}
FAIL_ON = ("critical", "warning", "none")

# Gate states, worst first.
STATE_BROKEN = "broken"
STATE_UNKNOWN = "unknown"
STATE_OK = "ok"
STATE_NOT_APPLICABLE = "not-applicable"

GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # GFD: MiB per GPU
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
SANDBOX_REASON = "FailedCreatePodSandBox"
NAMES_SHOWN = 5

# Every call the doctor makes, in order. None of them depends on the cluster's size.
LISTS = (
    ("version", "/version", True),
    ("nodes", "/api/v1/nodes", True),
    ("pods", "/api/v1/pods", True),
    ("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses", False),
    ("daemonsets", "/apis/apps/v1/daemonsets", False),
    ("configmaps", "/api/v1/configmaps", False),
    ("events", "/api/v1/events", False),
)
# Which gate cannot be judged when a list is refused.
LIST_GATES = {"runtimeclasses": "runtime-handler", "events": "runtime-handler", "daemonsets": "rollout",
              "configmaps": "sharing"}

_NO_RUNTIME_RE = re.compile(r'no runtime for "([^"]+)" is configured')
_INSUFFICIENT_RE = re.compile(r"^Insufficient (\S+)$")
_DS_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def argument_spec():
    spec = copy.deepcopy(K8S_ARG_SPEC)
    spec.update({
        "output_dir": {"type": "path"},
        "fail_on": {"type": "str", "default": "none", "choices": list(FAIL_ON)},
        "runtime_classes": {"type": "list", "elements": "str", "default": []},
        "daemonsets": {"type": "list", "elements": "str", "default": []},
        "configmap_selector": {"type": "str"},
        "physical_gpus": {"type": "int", "default": 0},
        "vram_per_gpu_gib": {"type": "float", "default": 0.0},
        # A ConfigMap data key (the sharing config's name), not a secret: no_log=False says so.
        "sharing_default_key": {"type": "str", "no_log": False},
        "containerd_configs": {"type": "list", "elements": "path", "default": []},
        "containerd_daemon_cwd": {"type": "path", "default": "/"},
        # The fleet gate: node name -> its containerd_node_view result (view), or {"error": why}. None: not judged.
        "nodes": {"type": "dict"},
        # Findings reported as suppressed, never dropped: each {code, subject (fnmatch pattern), reason}.
        "suppressions": {"type": "list", "elements": "dict", "default": []},
    })
    return spec


def validate_options(options):
    """Bad input is one clear failure naming the option, before any call."""
    for item in options.get("daemonsets") or []:
        if not _DS_NAME_RE.match(item or ""):
            raise GpuopError("daemonsets: %r is not namespace/name" % (item,))
    if (options.get("physical_gpus") or 0) < 0:
        raise GpuopError("physical_gpus must be 0 (unknown) or more, got %r" % options["physical_gpus"])
    if (options.get("vram_per_gpu_gib") or 0) < 0:
        raise GpuopError("vram_per_gpu_gib must be 0 (unknown) or more, got %r" % options["vram_per_gpu_gib"])
    if options.get("fail_on", "none") not in FAIL_ON:
        raise GpuopError("fail_on must be one of %s, got %r" % (", ".join(FAIL_ON), options.get("fail_on")))


# ---------------------------------------------------------------------------------------------
# Reading the cluster: a fixed number of calls

def collect(cluster, configmap_selector=None):
    """Every list the gates need, one call each. Returns ``{name: items, ..., "errors": {name: msg}}``.

    nodes and pods are required (a failure there is a GpuopError); a refused optional list is
    recorded in ``errors`` and its gate reported as unknown.
    """
    snapshot = {"errors": {}}
    for name, path, required in LISTS:
        try:
            if name == "version":
                snapshot[name] = cluster.get(path)
            elif name == "configmaps":
                snapshot[name] = cluster.list(path, label_selector=configmap_selector)
            elif name == "events":
                snapshot[name] = cluster.list(path, field_selector="reason=%s" % SANDBOX_REASON)
            else:
                snapshot[name] = cluster.list(path)
        except GpuopError as exc:
            if required and name != "version":
                raise
            snapshot[name] = {} if name == "version" else []
            snapshot["errors"][name] = exc.msg
    return snapshot


# ---------------------------------------------------------------------------------------------
# Small readers

def _meta(obj):
    return obj.get("metadata") or {}


def _name(obj):
    return _meta(obj).get("name") or ""


def _ns_name(obj):
    return "%s/%s" % (_meta(obj).get("namespace") or "", _name(obj))


def _labels(obj):
    return _meta(obj).get("labels") or {}


def _status(obj):
    return obj.get("status") or {}


def _live(pod):
    return _status(pod).get("phase") not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def _controller(pod):
    for ref in _meta(pod).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def names_text(names, shown=NAMES_SHOWN):
    """``a, b, c`` or ``a, b, c, d, e and 995 more``: lines stay short at any scale."""
    names = list(names)
    if len(names) <= shown:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:shown]), len(names) - shown)


def _handler_label(name):
    return name if name else "(default)"


def _jsonpath_key(key):
    return key.replace(".", "\\.")


class Kubectl(object):
    """Builds the one command that shows a finding's evidence, shell-quoted."""

    def __init__(self, kubeconfig, context=None):
        self.prefix = ["kubectl", "--kubeconfig", kubeconfig] + (["--context", context] if context else [])

    def __call__(self, *args):
        return " ".join(shlex.quote(a) for a in self.prefix + list(args))


def finding(severity, gate, code, subject, text, command, **details):
    return {"severity": severity, "gate": gate, "code": code, "subject": subject, "text": text,
            "command": command, "details": details}


# ---------------------------------------------------------------------------------------------
# Gate: runtime handler

def node_handlers(node):
    """The handler names the node reports (``""`` is the default handler), or None when it reports none."""
    handlers = _status(node).get("runtimeHandlers") or []
    if not handlers:
        return None
    return sorted({h.get("name") or "" for h in handlers})


def _selector_matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def runtime_handler_gate(nodes, pods, runtimeclasses, events, wanted, kubectl):
    findings = []
    classes = {_name(rc): rc for rc in runtimeclasses}
    users = {}
    for pod in pods:
        rc_name = (pod.get("spec") or {}).get("runtimeClassName")
        if rc_name and _live(pod):
            users.setdefault(rc_name, []).append(pod)
    checked = []
    states = []
    for rc_name in sorted(set(users) - set(classes)):
        pods_using = sorted(_ns_name(p) for p in users[rc_name])
        findings.append(finding(
            "critical", "runtime-handler", "runtimeclass-missing", "runtimeclass/%s" % rc_name,
            "RuntimeClass %s does not exist but %d pod(s) name it: %s" % (rc_name, len(pods_using), names_text(pods_using)),
            kubectl("get", "runtimeclass", rc_name), pods=pods_using))
        states.append(STATE_BROKEN)
    in_use = sorted((set(users) & set(classes)) | (set(wanted or []) & set(classes)))
    for rc_name in in_use:
        rc = classes[rc_name]
        handler = rc.get("handler") or ""
        selector = ((rc.get("scheduling") or {}).get("nodeSelector")) or {}
        eligible = [n for n in nodes if _selector_matches(selector, _labels(n))]
        loaded, missing, unknown, reported = [], [], [], set()
        for node in eligible:
            names = node_handlers(node)
            if names is None:
                unknown.append(_name(node))
            elif handler in names:
                loaded.append(_name(node))
            else:
                missing.append(_name(node))
                reported.update(names)
        loaded, missing, unknown = sorted(loaded), sorted(missing), sorted(unknown)
        pods_using = users.get(rc_name, [])
        missing_set = set(missing)
        stranded = sorted("%s on %s" % (_ns_name(p), (p.get("spec") or {}).get("nodeName"))
                          for p in pods_using if (p.get("spec") or {}).get("nodeName") in missing_set)
        evidence = kubectl("get", "nodes", "-o",
                           "custom-columns=NAME:.metadata.name,HANDLERS:.status.runtimeHandlers[*].name")
        summary = {"runtime_class": rc_name, "handler": handler, "eligible_nodes": len(eligible),
                   "loaded": len(loaded), "missing": len(missing), "unknown": len(unknown),
                   "pods": len(pods_using)}
        if missing:
            severity = "critical" if stranded or (pods_using and not loaded) else "warning"
            text = ("RuntimeClass %s: handler %s not loaded on %d of %d nodes: %s (they report %s)"
                    % (rc_name, handler, len(missing), len(eligible), names_text(missing),
                       ", ".join(_handler_label(h) for h in sorted(reported))))
            if stranded:
                text += "; pods using it there: %s" % names_text(stranded)
            findings.append(finding(severity, "runtime-handler", "handler-not-loaded", "runtimeclass/%s" % rc_name,
                                    text, evidence, nodes=missing, reported=sorted(reported), pods=stranded))
        if unknown:
            findings.append(finding(
                "warning", "runtime-handler", "handler-unknown", "runtimeclass/%s" % rc_name,
                "RuntimeClass %s: %d of %d nodes report no runtime handlers, so whether handler %s is loaded "
                "is unknown: %s" % (rc_name, len(unknown), len(eligible), handler, names_text(unknown)),
                evidence, nodes=unknown))
        states.append(STATE_BROKEN if missing else (STATE_UNKNOWN if unknown or not eligible else STATE_OK))
        checked.append(summary)

    pods_by_uid = {_meta(p).get("uid"): p for p in pods}
    latest = {}
    for event in events:
        obj = event.get("involvedObject") or {}
        if event.get("reason") != SANDBOX_REASON or obj.get("kind") != "Pod":
            continue
        pod = pods_by_uid.get(obj.get("uid"))
        if pod is None or not _live(pod) or _status(pod).get("phase") == "Running":
            continue  # gone, finished, or its sandbox was made after all: the event is history
        stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""
        key = obj.get("uid")
        if key not in latest or (stamp, _name(event)) > latest[key][0]:
            latest[key] = ((stamp, _name(event)), event, pod)
    for key in sorted(latest, key=lambda k: _ns_name(latest[k][2])):
        _stamp, event, pod = latest[key]
        message = event.get("message") or ""
        match = _NO_RUNTIME_RE.search(message)
        node = (pod.get("spec") or {}).get("nodeName") or "(no node)"
        findings.append(finding(
            "critical", "runtime-handler", "sandbox-failed", "pod/%s" % _ns_name(pod),
            "pod %s on %s: %s: %s" % (_ns_name(pod), node, SANDBOX_REASON, message),
            kubectl("-n", _meta(pod).get("namespace") or "", "get", "events", "--field-selector",
                    "involvedObject.name=%s,reason=%s" % (_name(pod), SANDBOX_REASON)),
            node=node, handler=match.group(1) if match else None, count=event.get("count")))
        states.append(STATE_BROKEN)
    return findings, _worst(states), {"runtime_classes": checked}


# ---------------------------------------------------------------------------------------------
# Gate: resource advertisement

def is_extended_resource(name):
    try:
        validate_resource_name(name)
    except GpuopError:
        return False
    return True


def _insufficient_extended(pod):
    """The extended resources the scheduler said are insufficient for a Pending pod (sorted), or []."""
    if _status(pod).get("phase") != "Pending" or not rollout.pod_unschedulable(pod):
        return []
    cond = rollout._conditions(pod).get("PodScheduled") or {}
    parsed = rollout.parse_scheduler_message(cond.get("message") or "")
    if parsed is None:
        return []
    found = set()
    for item in parsed["reasons"]:
        match = _INSUFFICIENT_RE.match(item["reason"])
        if match and is_extended_resource(match.group(1)):
            found.add(match.group(1))
    return sorted(found)


def node_numbers(nodes, pods, resource):
    """Per node: capacity, allocatable and requested (live pods bound there) of ``resource``, in its unit."""
    requested = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and _live(pod):
            amount = rollout.pod_request(pod, resource)
            if amount:
                requested[node] = requested.get(node, 0) + amount
    rows = {}
    for node in nodes:
        status = _status(node)
        cap = (status.get("capacity") or {}).get(resource)
        alloc = (status.get("allocatable") or {}).get(resource)
        rows[_name(node)] = (
            rollout.base_units(resource, cap) if cap is not None else 0,
            rollout.base_units(resource, alloc) if alloc is not None else 0,
            requested.get(_name(node), 0),
        )
    return rows


def _group_rows(rows, resource, shown=3):
    """``3 nodes 0/0/0`` groups of equal capacity/allocatable/requested, largest group first."""
    groups = {}
    for name, row in rows.items():
        groups.setdefault(row, []).append(name)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    parts = []
    for row, names in ordered[:shown]:
        label = names[0] if len(names) == 1 else "%d nodes" % len(names)
        parts.append("%s %s" % (label, "/".join(rollout.human(resource, v) for v in row)))
    if len(ordered) > shown:
        parts.append("%d more groups" % (len(ordered) - shown))
    return ", ".join(parts)


def advertisement_gate(nodes, pods, skip_uids, kubectl):
    """``skip_uids``: pods another gate already explains (a stalled DaemonSet's)."""
    by_resource = {}
    for pod in pods:
        if _meta(pod).get("uid") in skip_uids:
            continue
        for resource in _insufficient_extended(pod):
            by_resource.setdefault(resource, []).append(pod)
    findings = []
    checked = {}
    for resource in sorted(by_resource):
        rows = node_numbers(nodes, pods, resource)
        free = max([alloc - req for _cap, alloc, req in rows.values()] or [0])
        groups = _group_rows(rows, resource)
        for pod in sorted(by_resource[resource], key=_ns_name):
            request = rollout.pod_request(pod, resource)
            meta = _meta(pod)
            findings.append(finding(
                "critical", "advertisement", "pod-insufficient-resource", "pod/%s" % _ns_name(pod),
                "pod %s Pending on Insufficient %s: requests %s, largest free %s; capacity/allocatable/requested: %s"
                % (_ns_name(pod), resource, rollout.human(resource, request), rollout.human(resource, max(free, 0)), groups),
                kubectl("-n", meta.get("namespace") or "", "get", "pod", meta.get("name") or "", "-o",
                        "jsonpath={.status.conditions}"),
                resource=resource, requested=request, largest_free=max(free, 0),
                nodes={name: {"capacity": c, "allocatable": a, "requested": r}
                       for name, (c, a, r) in sorted(rows.items())[:NAMES_SHOWN * 20]}))
        checked[resource] = len(by_resource[resource])
    state = STATE_BROKEN if findings else STATE_OK
    return findings, state, {"pending_pods_by_resource": checked}


# ---------------------------------------------------------------------------------------------
# Gate: sharing

def find_sharing_configs(configmaps):
    """Every ConfigMap data value that is a device plugin sharing config: ``version: v1`` and ``sharing``.

    Returns ``[(configmap, key, text)]`` sorted by namespace/name/key. Cheap text test first: a
    value is parsed as YAML only when it mentions both words.
    """
    found = []
    for cm in configmaps:
        for key, value in sorted((cm.get("data") or {}).items()):
            if not isinstance(value, str) or "sharing" not in value or "version" not in value:
                continue
            try:
                doc = yaml.safe_load(value)
            except yaml.YAMLError:
                continue
            if isinstance(doc, dict) and doc.get("version") == sharing.CONFIG_VERSION and "sharing" in doc:
                found.append((cm, key, value))
    return sorted(found, key=lambda item: (_ns_name(item[0]), item[1]))


def _is_gpu_node(node, resources):
    labels = _labels(node)
    if GPU_COUNT_LABEL in labels or labels.get(GPU_PRESENT_LABEL) == "true":
        return True
    capacity = _status(node).get("capacity") or {}
    return any(r in capacity for r in resources)


def _int_label(labels, key):
    try:
        value = int(labels.get(key, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def sharing_gate(nodes, configmaps, physical_gpus, vram_per_gpu_gib, default_key, kubectl):
    findings = []
    configs = []
    states = []
    for cm, key, text in find_sharing_configs(configmaps):
        ref = "%s[%s]" % (_ns_name(cm), key)
        meta = _meta(cm)
        evidence = kubectl("-n", meta.get("namespace") or "", "get", "configmap", meta.get("name") or "", "-o",
                           "jsonpath={.data.%s}" % _jsonpath_key(key))
        try:
            config = sharing.parse_config(text)
        except GpuopError as exc:
            findings.append(finding("warning", "sharing", "sharing-config-invalid", "configmap/%s" % ref,
                                    "ConfigMap %s key %s: the device plugin would refuse it: %s" % (_ns_name(cm), key, exc.msg),
                                    evidence))
            states.append(STATE_BROKEN)
            continue
        plan = sharing.compute(text, 1, vram_per_gpu_gib or 1)
        if plan["strategy"] == sharing.STRATEGY_TIME_SLICING:
            memory = ("memory guaranteed per slot 0%s (every slot may use all of it: no memory or fault isolation)"
                      % (" GiB of %s GiB" % sharing.format_number(plan["vram_per_gpu_gib"]) if vram_per_gpu_gib else ""))
        elif plan["strategy"] == sharing.STRATEGY_MPS:
            memory = ("memory guaranteed per slot %s GiB (1/%d of %s GiB)"
                      % (sharing.format_number(plan["vram_guaranteed_per_slot_gib"]), plan["replicas"],
                         sharing.format_number(plan["vram_per_gpu_gib"]))
                      if vram_per_gpu_gib else "memory guaranteed per slot 1/%d of the GPU's" % plan["replicas"])
        else:
            memory = "no sharing: one slot per GPU"
        configs.append({"configmap": _ns_name(cm), "key": key, "text": text, "plan": plan, "config": config})
        findings.append(finding(
            "info", "sharing", "sharing-config", "configmap/%s" % ref,
            "ConfigMap %s key %s: %s, %s x %d replicas per GPU, %s"
            % (_ns_name(cm), key, plan["strategy"], plan["resource_name"], plan["replicas"], memory),
            evidence, strategy=plan["strategy"], resource=plan["resource_name"], replicas=plan["replicas"],
            vram_guaranteed_per_slot_gib=plan["vram_guaranteed_per_slot_gib"] if vram_per_gpu_gib or
            plan["strategy"] != sharing.STRATEGY_MPS else None, warnings=plan["device_plugin_warnings"]))
        states.append(STATE_OK)

    checked = {"configs": [{"configmap": c["configmap"], "key": c["key"], "strategy": c["plan"]["strategy"],
                            "replicas": c["plan"]["replicas"], "resource": c["plan"]["resource_name"]} for c in configs],
               "nodes_checked": 0, "nodes_unknown": []}
    if not configs:
        return findings, _worst(states) if states else STATE_NOT_APPLICABLE, checked

    by_key = {}
    for config in configs:
        by_key.setdefault(config["key"], []).append(config)
    resources = sorted({sharing.FULL_GPU_RESOURCE} | {c["plan"]["resource_name"] for c in configs})
    mismatches = {}
    unknown = []
    for node in sorted(nodes, key=_name):
        if not _is_gpu_node(node, resources):
            continue
        labels = _labels(node)
        key = labels.get(DEVICE_PLUGIN_CONFIG_LABEL) or default_key
        if key:
            candidates = by_key.get(key) or []
        else:
            candidates = configs if len(configs) == 1 else []
        if not candidates:
            continue  # no config applies: the plugin runs without sharing there
        config = candidates[0]
        physical = _int_label(labels, GPU_COUNT_LABEL) or (physical_gpus or None)
        if physical is None:
            unknown.append(_name(node))
            continue
        vram = vram_per_gpu_gib or ((_int_label(labels, GPU_MEMORY_LABEL) or 0) / 1024.0) or 1
        allocatable = _status(node).get("allocatable") or {}
        resource = config["plan"]["resource_name"]
        raw = allocatable.get(resource)
        advertised = rollout.base_units(resource, raw) if raw is not None else 0
        plan = sharing.compute(config["text"], physical, vram, advertised=advertised)
        checked["nodes_checked"] += 1
        if not plan["advertised_matches"]:
            group = (config["configmap"], config["key"], resource, advertised, plan["slots"], physical, plan["replicas"])
            mismatches.setdefault(group, []).append(_name(node))
    for group in sorted(mismatches):
        cm_ref, key, resource, advertised, slots, physical, replicas = group
        names = mismatches[group]
        findings.append(finding(
            "warning", "sharing", "advertisement-mismatch", "configmap/%s[%s]" % (cm_ref, key),
            "%d node(s) advertise %s %d, expected %d (%d physical x %d replicas, ConfigMap %s key %s): %s"
            % (len(names), resource, advertised, slots, physical, replicas, cm_ref, key, names_text(names)),
            kubectl("get", "nodes", "-o", "custom-columns=NAME:.metadata.name,ALLOCATABLE:.status.allocatable.%s,"
                    "GPUS:.metadata.labels.%s" % (_jsonpath_key(resource), _jsonpath_key(GPU_COUNT_LABEL))),
            nodes=names, resource=resource, advertised=advertised, expected=slots))
        states.append(STATE_BROKEN)
    if unknown:
        findings.append(finding(
            "info", "sharing", "physical-gpus-unknown", "nodes",
            "%d GPU node(s) not checked against the sharing config: no %s label and no physical_gpus given: %s"
            % (len(unknown), GPU_COUNT_LABEL, names_text(unknown)),
            kubectl("get", "nodes", "-L", GPU_COUNT_LABEL), nodes=unknown))
        states.append(STATE_UNKNOWN)
    checked["nodes_unknown"] = len(unknown)
    return findings, _worst(states), checked


# ---------------------------------------------------------------------------------------------
# Gate: rollouts

def _pods_by_daemonset(pods):
    owned = {}
    for pod in pods:
        ref = _controller(pod)
        if ref and ref.get("kind") == "DaemonSet":
            owned.setdefault(ref.get("uid"), []).append(pod)
    return owned


def _blocker_text(blocker):
    if blocker is None:
        return "no blocker named"
    kind = blocker["kind"]
    where = " on %s" % blocker["node"] if blocker.get("node") else ""
    if kind.startswith("insufficient-") and blocker.get("node_allocatable") is not None:
        return ("%s%s: requests %s > %s allocatable (largest node %s)"
                % (kind, where, blocker["requested_human"], blocker["node_allocatable_human"],
                   blocker["largest_allocatable_human"]))
    if kind == "taint" and blocker.get("untolerated_taints") is not None:
        return "%s%s: untolerated %s" % (kind, where, ", ".join(blocker["untolerated_taints"]) or "(none found)")
    if kind == "on-delete":
        return "on-delete: %s" % blocker["message"]
    return "%s%s: %s" % (kind, where, blocker.get("reason") or blocker.get("message") or "")


def rollout_rows(analysis):
    """One row per node of a DaemonSet: ``updated`` (its new pod), ``old`` (only the old one) or ``pending`` (its new pod
    cannot be scheduled there), with the blocker's text for a pending one. Sorted by node."""
    stuck = {b["node"]: b for b in analysis["blockers"] if b.get("node")}
    rows = []
    for node, slot in sorted(analysis["pods_per_node"].items()):
        if not node:
            continue
        if node in stuck:
            state, blocker = "pending", _blocker_text(stuck[node])
        elif slot["new"]:
            state, blocker = "updated", None
        else:
            state, blocker = "old", None
        rows.append({"daemonset": "%s/%s" % (analysis["namespace"], analysis["name"]), "node": node, "state": state,
                     "blocker": blocker, "old_pod": bool(slot["old"])})
    return rows


def blast_radius(ref, rows, views, runtimeclasses, kubectl, namespace, name):
    """Nodes of a stalled DaemonSet where no pod of it runs: the old pod is gone and the new one is Pending.

    A toolkit pod that terminates removes its runtime config and restarts containerd (nvidia-container-toolkit
    issue 494), so the handlers it installed are gone there. Where the node's daemon was read (fleet views), that
    is confirmed (critical) or refuted; otherwise it is a warning.
    """
    bare = [r["node"] for r in rows if r["state"] == "pending" and not r["old_pod"]]
    if not bare:
        return []
    handlers = sorted({rc.get("handler") for rc in runtimeclasses if str(rc.get("handler") or "").startswith("nvidia")})
    classes = sorted(_name(rc) for rc in runtimeclasses if str(rc.get("handler") or "").startswith("nvidia"))
    confirmed, refuted = [], []
    for node in bare:
        view = ((views or {}).get(node) or {}).get("view") if isinstance((views or {}).get(node), dict) else None
        loaded = (view or {}).get("loaded")
        if loaded and loaded.get("cri_loaded"):
            (refuted if set(handlers) & set(loaded.get("runtimes") or []) else confirmed).append(node)
    severity = "critical" if confirmed else "warning"
    text = ("DaemonSet %s: no pod of it runs on %s (the old pod is gone, the new one is Pending): a toolkit pod that "
            "terminates removes its runtime config and restarts containerd, so pods of RuntimeClass %s (handler %s) "
            "fail there" % (ref, names_text(bare), ", ".join(classes) or "(none)", ", ".join(handlers) or "nvidia"))
    if confirmed:
        text += "; confirmed by the node's daemon on %s" % names_text(confirmed)
    if refuted:
        text += "; refuted on %s (its daemon still has the handler)" % names_text(refuted)
    return [finding(severity, "rollout", "rollout-blast-radius", "daemonset/%s" % ref, text,
                    kubectl("-n", namespace, "get", "pods", "-o", "wide", "--field-selector", "spec.nodeName=%s" % bare[0]),
                    nodes=bare, confirmed=confirmed, refuted=refuted)]


def rollout_gate(daemonsets, pods, nodes, selected, now, kubectl, runtimeclasses=(), views=None, rows_out=None):
    findings = []
    owned = _pods_by_daemonset(pods)
    wanted = set(selected or [])
    seen = set()
    states = []
    stuck_uids = set()
    checked = []
    for ds in sorted(daemonsets, key=_ns_name):
        ref = _ns_name(ds)
        if wanted and ref not in wanted:
            continue
        seen.add(ref)
        ds_pods = owned.get(_meta(ds).get("uid"), [])
        # One call with the node list (already read): the blocker's numbers come with it.
        analysis = rollout.analyse(ds, ds_pods, nodes, now)
        checked.append({"daemonset": ref, "phase": analysis["phase"]})
        if analysis["phase"] != rollout.PHASE_STALLED:
            states.append(STATE_OK)
            continue
        states.append(STATE_BROKEN)
        stuck_uids.update(_meta(p).get("uid") for p in ds_pods)
        rows = rollout_rows(analysis)
        if rows_out is not None:
            rows_out.extend(rows)
        blocker = analysis["blocker"]
        namespace = _meta(ds).get("namespace") or ""
        if blocker and blocker.get("pod"):
            evidence = kubectl("-n", namespace, "get", "pod", blocker["pod"], "-o",
                               'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
        else:
            evidence = kubectl("-n", namespace, "get", "daemonset", _name(ds), "-o", "jsonpath={.status}")
        findings.append(finding(
            "critical", "rollout", "rollout-stalled", "daemonset/%s" % ref,
            "DaemonSet %s rollout stalled: %s; desired %d, updated %d, ready %d, unavailable %d, maxUnavailable %s"
            % (ref, _blocker_text(blocker), analysis["desired"], analysis["updated"], analysis["ready"],
               analysis["unavailable"], analysis["max_unavailable_spec"] if analysis["max_unavailable_spec"] is not None else "none"),
            evidence,
            blocker=None if blocker is None else {k: v for k, v in sorted(blocker.items()) if k != "node_reasons"},
            numbers={k: analysis[k] for k in ("desired", "current", "updated", "ready", "available", "unavailable",
                                              "old_image_pods", "max_unavailable")}))
        findings.extend(blast_radius(ref, rows, views, runtimeclasses, kubectl, namespace, _name(ds)))
    for ref in sorted(wanted - seen):
        namespace, name = ref.split("/", 1)
        findings.append(finding("warning", "rollout", "daemonset-missing", "daemonset/%s" % ref,
                                "DaemonSet %s was selected but does not exist" % ref,
                                kubectl("-n", namespace, "get", "daemonset", name)))
        states.append(STATE_UNKNOWN)
    state = _worst(states) if states else STATE_NOT_APPLICABLE
    return findings, state, {"daemonsets": checked}, stuck_uids


# ---------------------------------------------------------------------------------------------
# Gate: containerd config (files on this host)

def containerd_gate(paths, daemon_cwd):
    findings = []
    states = []
    checked = []
    for path in paths:
        result = containerd_merge.analyze(path, daemon_cwd)
        config = result["config"]
        written = sorted(set(result["main_runtimes"]) | set(result["dropin_runtimes"]))
        evidence = "containerd --config %s config dump" % shlex.quote(config)
        entry = {"config": config, "written": written}
        for key, label in (("containerd_1", "containerd 1.x"), ("containerd_2", "containerd 2.x")):
            pred = result["predicted"][key]
            entry[key] = {"runtimes": pred["runtimes"], "cri_loads": pred["cri_loads"]}
            if not pred["cri_loads"]:
                findings.append(finding(
                    "critical", "containerd", "containerd-cri-fails", "file/%s" % config,
                    "%s: after a restart %s's CRI plugin fails: %s (written runtimes %s; it would load %s)"
                    % (config, label, pred["error"], ", ".join(written) or "none", ", ".join(pred["runtimes"]) or "none"),
                    evidence, version=label, error=pred["error"], written=written, predicted=pred["runtimes"]))
                states.append(STATE_BROKEN)
                continue
            dropped = sorted(set(written) - set(pred["runtimes"]))
            if dropped:
                findings.append(finding(
                    "warning", "containerd", "containerd-runtime-dropped", "file/%s" % config,
                    "%s: after a restart %s loads %s; written %s would be missing"
                    % (config, label, ", ".join(pred["runtimes"]), ", ".join(dropped)),
                    evidence, version=label, written=written, predicted=pred["runtimes"]))
                states.append(STATE_BROKEN)
        for warning in result["warnings"]:
            findings.append(finding("warning", "containerd", "containerd-warning", "file/%s" % config,
                                    "%s: %s" % (config, warning), evidence))
            states.append(STATE_BROKEN)
        states.append(STATE_OK)
        checked.append(entry)
    state = _worst(states) if states else STATE_NOT_APPLICABLE
    return findings, state, {"configs": checked}


# ---------------------------------------------------------------------------------------------
# Putting it together

_STATE_RANK = {STATE_BROKEN: 0, STATE_UNKNOWN: 1, STATE_OK: 2, STATE_NOT_APPLICABLE: 3}


def _worst(states):
    if not states:
        return STATE_NOT_APPLICABLE
    return sorted(states, key=lambda s: _STATE_RANK[s])[0]


def sort_findings(findings):
    """Worst first: severity, then gate order, then subject and text."""
    return sorted(findings, key=lambda f: (SEVERITY_RANK[f["severity"]], GATE_RANK[f["gate"]], f["subject"], f["text"]))


def diagnose(snapshot, options, now=None):
    """Every gate from the raw lists in ``snapshot`` (see ``collect``). Pure."""
    kubectl = Kubectl(options["kubeconfig"], options.get("context"))
    nodes = sorted(snapshot.get("nodes") or [], key=_name)
    pods = snapshot.get("pods") or []
    errors = snapshot.get("errors") or {}
    gates = {}
    findings = []

    rows = []
    rollout_findings, state, checked, stuck_uids = rollout_gate(
        snapshot.get("daemonsets") or [], pods, nodes, options.get("daemonsets") or [], now, kubectl,
        snapshot.get("runtimeclasses") or [], options.get("nodes"), rows)
    findings += rollout_findings
    gates["rollout"] = dict(checked, state=state)

    handler_findings, state, checked = runtime_handler_gate(
        nodes, pods, snapshot.get("runtimeclasses") or [], snapshot.get("events") or [],
        options.get("runtime_classes") or [], kubectl)
    findings += handler_findings
    gates["runtime-handler"] = dict(checked, state=state)

    adv_findings, state, checked = advertisement_gate(nodes, pods, stuck_uids, kubectl)
    findings += adv_findings
    gates["advertisement"] = dict(checked, state=state)

    share_findings, state, checked = sharing_gate(
        nodes, snapshot.get("configmaps") or [], options.get("physical_gpus") or 0,
        options.get("vram_per_gpu_gib") or 0, options.get("sharing_default_key"), kubectl)
    findings += share_findings
    gates["sharing"] = dict(checked, state=state)

    cd_findings, state, checked = containerd_gate(options.get("containerd_configs") or [],
                                                  options.get("containerd_daemon_cwd") or "/")
    findings += cd_findings
    gates["containerd"] = dict(checked, state=state)

    if options.get("nodes") is not None:
        fleet_findings, state, matrix = fleet_gate(options["nodes"], nodes, pods, snapshot.get("runtimeclasses") or [], kubectl)
        findings += fleet_findings
        gates[FLEET_GATE] = {"nodes": len(matrix), "state": state}
    else:
        matrix = None

    for name in sorted(errors):
        gate = LIST_GATES.get(name)
        if gate is None:
            continue
        findings.append(finding("warning", gate, "read-failed", "list/%s" % name,
                                "cannot list %s, the %s gate is not judged: %s" % (name, gate, errors[name]),
                                kubectl("auth", "can-i", "list", name, "--all-namespaces")))
        gates[gate]["state"] = STATE_UNKNOWN

    findings = sort_findings(findings)
    summary = {s: sum(1 for f in findings if f["severity"] == s) for s in SEVERITIES}
    summary["total"] = len(findings)
    version = snapshot.get("version") or {}
    out = {
        "findings": findings,
        "summary": summary,
        "gates": {g: gates[g] for g in GATES + ((FLEET_GATE,) if matrix is not None else ())},
        "server_version": version.get("gitVersion") if isinstance(version, dict) else None,
        "counts": {name: len(snapshot.get(name) or []) for name, _path, _required in LISTS if name != "version"},
    }
    if matrix is not None:
        out["nodes"] = matrix
    if rows:
        out["rollout_rows"] = rows
    return out


# ---------------------------------------------------------------------------------------------
# Gate: each GPU node's containerd (views read over SSH by containerd_node_view)

def fleet_gate(views, nodes, pods, runtimeclasses, kubectl):
    """Verdicts per node (module_utils fleet), grouped: nodes sharing a verdict make one finding."""
    api = {_name(n): n for n in nodes}
    handler_of = {_name(rc): rc.get("handler") for rc in runtimeclasses}
    on_node = {}
    for pod in pods:
        if _live(pod):
            on_node.setdefault((pod.get("spec") or {}).get("nodeName"), []).append(pod)
    per_node = {}
    for name in sorted(views):
        entry = views[name] if isinstance(views[name], dict) else {}
        if isinstance(entry.get("view"), dict):
            view = entry["view"]
        else:  # a failed or unreachable node's registered result
            view = {"error": entry.get("error") or entry.get("msg") or "not read"}
        per_node[name] = fleet.verdicts(name, view, api.get(name), on_node.get(name, []), handler_of)
    matrix = {}
    for name in sorted(per_node):
        codes = {v["verdict"]: v["severity"] for v in per_node[name]}
        row = {}
        for column, breaking in NODE_COLUMNS:
            hit = [codes[c] for c in breaking if c in codes]
            row[column] = (STATE_UNKNOWN if column == "read" else STATE_BROKEN) if hit else STATE_OK
        if "node-unreadable" in codes:
            row = {column: STATE_UNKNOWN for column, _b in NODE_COLUMNS}
        matrix[name] = row
    findings = []
    for group in fleet.group(per_node):
        names = group["nodes"]
        subject = "nodes/%s" % names[0] if len(names) == 1 else "nodes/%s+%d" % (names[0], len(names) - 1)
        text = group["text"].replace("<node>", names[0] if len(names) == 1 else "each node")
        findings.append(finding(group["severity"], FLEET_GATE, group["verdict"], subject,
                                "%s: %s" % (names_text(names), text), group["command"].replace("<node>", names[0]),
                                nodes=names, **group["details"]))
    states = [STATE_BROKEN if f["severity"] in ("critical", "warning") and f["code"] != "node-unreadable" else
              STATE_UNKNOWN if f["code"] == "node-unreadable" else STATE_OK for f in findings]
    state = _worst(states) if states else (STATE_OK if views else STATE_NOT_APPLICABLE)
    return findings, state, matrix


def gate_failed(result, fail_on):
    """Whether a finding of severity ``fail_on`` or worse exists (``none`` never fails)."""
    if fail_on == "none":
        return False
    limit = SEVERITY_RANK[fail_on]
    return any(SEVERITY_RANK[f["severity"]] <= limit for f in result["findings"])


# ---------------------------------------------------------------------------------------------
# Rendering (deterministic: no timestamps, sorted keys)

def finding_line(item):
    return "%-8s %-15s %s  $ %s" % (item["severity"].upper(), item["gate"], item["text"], item["command"])


def summary_line(result):
    s = result["summary"]
    if not s["total"]:
        return "gpu doctor: no finding (gates: %s)" % ", ".join("%s %s" % (g, state["state"]) for g, state in result["gates"].items())
    return "gpu doctor: %d critical, %d warning, %d info" % (s["critical"], s["warning"], s["info"])


def report_lines(result):
    return [summary_line(result)] + [finding_line(f) for f in result["findings"]]


def render_json(result, meta):
    doc = dict(meta, **{k: result[k] for k in ("summary", "findings", "gates", "server_version", "counts", "nodes",
                                               "rollout_rows") if k in result})
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_md(result, meta):
    lines = ["# GPU doctor report", "",
             "Cluster `%s` (kubeconfig `%s`%s), Kubernetes %s. Read with %d API calls, none of them a write: %s."
             % (meta["server"], meta["kubeconfig"], ", context `%s`" % meta["context"] if meta.get("context") else "",
                result["server_version"] or "version unknown", len(meta["api_calls"]),
                ", ".join("%s %d" % (k, v) for k, v in sorted(result["counts"].items()))),
             "", "## Findings, worst first", ""]
    if not result["findings"]:
        lines.append("No finding: no gate found anything broken or unknown.")
    for number, item in enumerate(result["findings"], 1):
        lines.append("%d. **%s** %s: %s  \n   `%s`" % (number, item["severity"], item["gate"], item["text"], item["command"]))
    lines += ["", "## Gates", "", "| gate | state |", "| --- | --- |"]
    for gate, state in result["gates"].items():
        lines.append("| %s | %s |" % (gate, _md_cell(state["state"])))
    lines += ["", "States: `broken` (a finding above says why), `unknown` (the cluster did not say), `ok`, "
              "`not-applicable` (nothing of that kind in use).", ""]
    return "\n".join(lines)


def run(cluster, options, now=None):
    """collect + diagnose; ``meta`` describes the run (no timestamps)."""
    validate_options(options)
    if not HAS_YAML:  # pragma: no cover
        raise GpuopError("the python 'yaml' package is missing")
    snapshot = collect(cluster, options.get("configmap_selector"))
    result = diagnose(snapshot, options, now)
    meta = {"kubeconfig": options["kubeconfig"], "context": options.get("context"), "server": cluster.host,
            "api_calls": list(cluster.calls), "fail_on": options.get("fail_on", "none")}
    return result, meta
