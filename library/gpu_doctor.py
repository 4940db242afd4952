#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: the incident doctor, a read-only diagnosis of every GPU gate of a cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_doctor
short_description: Name every broken GPU gate of a cluster, read-only, with the command that shows the evidence
description:
  - Reads the cluster with a fixed set of calls, whatever its size (C(GET /version), then one LIST
    each of nodes, pods, RuntimeClasses, DaemonSets, ConfigMaps and C(FailedCreatePodSandBox)
    events). It never sends a write verb and never a call per object; RV(api_calls) lists every
    request.
  - B(runtime-handler) gate. Every RuntimeClass used by a live pod (or named in O(runtime_classes)
    and present) against each eligible node's C(status.runtimeHandlers), what the kubelet says the
    runtime loaded (Kubernetes 1.30 and later). Nodes that report no handler are C(unknown), never
    healthy. Live pods with a C(FailedCreatePodSandBox) event are reported with containerd's message.
  - B(advertisement) gate. Pods Pending on C(Insufficient <extended resource>), with every node's
    capacity, allocatable and requested of that resource.
  - B(sharing) gate. The device plugin's sharing configs, found in ConfigMaps by content (a data
    value whose C(version) is V(v1) and that has C(sharing)), parsed by the device plugin's rules, give the slots and the
    memory guaranteed per slot (0 under time-slicing). GPU nodes whose advertisement is not
    physical GPUs x replicas. The physical count comes from the node label C(nvidia.com/gpu.count),
    else O(physical_gpus). The config of a node is the one its C(nvidia.com/device-plugin.config)
    label names, else O(sharing_default_key), else the only config found.
  - B(rollout) gate. Every DaemonSet (or those in O(daemonsets)) whose rollout is stalled, with the
    blocker and its numbers, and its blast radius (the nodes where no pod of it runs any more).
  - B(containerd) gate, only with O(containerd_configs). What the files define, against what
    containerd 1.x and 2.x would load after a restart.
  - Each finding is one line with a severity (V(critical), V(warning), V(info)), its gate, and the
    one command that shows the evidence, worst first.
  - B(containerd-nodes) gate, only with O(nodes). Each node's containerd as read over SSH.
  - With O(output_dir), writes there C(doctor.md), C(doctor.json) (with C(schema_version)), C(doctor.sarif)
    (SARIF 2.1.0), C(doctor.junit.xml), C(doctor.html) (one self-contained page) and C(doctor.txt) (the
    terminal lines), atomically and only when the content differs. The content has no timestamp, so the
    same cluster state gives the same bytes.
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  output_dir:
    description: Write C(doctor.md) and C(doctor.json) into this folder (created when missing). Nothing is written without it.
    type: path
  fail_on:
    description:
      - Fail the task when a finding of this severity or worse exists (after writing the reports).
        V(none) never fails.
    type: str
    default: none
    choices: [critical, warning, none]
  runtime_classes:
    description: RuntimeClasses to check even when no pod uses them (ignored when absent from the cluster).
    type: list
    elements: str
    default: []
  daemonsets:
    description: Only these DaemonSets (C(namespace/name)) for the rollout gate; all when empty.
    type: list
    elements: str
    default: []
  configmap_selector:
    description: Label selector for the ConfigMap list (all ConfigMaps of all namespaces when omitted).
    type: str
  physical_gpus:
    description: Physical GPUs per node where the node has no C(nvidia.com/gpu.count) label; 0 means unknown.
    type: int
    default: 0
  vram_per_gpu_gib:
    description:
      - Memory per GPU in GiB for the per-slot arithmetic; 0 means unknown (then the node label
        C(nvidia.com/gpu.memory) is used where present).
    type: float
    default: 0.0
  sharing_default_key:
    description:
      - The sharing config key used on nodes without a C(nvidia.com/device-plugin.config) label (the
        GPU Operator's C(devicePlugin.config.default)). Omitted, the only config found applies.
    type: str
  containerd_configs:
    description:
      - containerd main config files on this host to check (each with its imports). A missing file
        fails the task.
    type: list
    elements: path
    default: []
  containerd_daemon_cwd:
    description: The containerd 1.x daemon's working directory (relative glob imports are matched against it).
    type: path
    default: /
  suppressions:
    description:
      - Findings to report as suppressed, never dropped. Each has C(code), C(subject) (an fnmatch pattern matched
        against the finding's subject, or against every node of a fleet group) and C(reason). A suppressed finding
        is listed with its reason after the others and does not count toward O(fail_on).
    type: list
    elements: dict
    default: []
  nodes:
    description:
      - The fleet gate C(containerd-nodes). Node name to what C(gpuop.gates.containerd_node_view) returned on that
        node (its registered result, with C(view)), or to a failed or unreachable result (then the node is
        C(node-unreadable)). Omitted, the gate is not judged.
      - Verdicts per node, nodes sharing one grouped into one finding. C(cri-fails-on-restart),
        C(runtime-dropped-on-restart), C(handler-not-loaded) (pods on the node whose RuntimeClass handler the
        daemon has not loaded) are critical; C(restart-pending), C(orphan-dropin), C(runtime-incomplete),
        C(plugin-path-ignored), C(dropin-minimal-on-1x), C(node-unreadable) are warnings; C(dropin-self-sufficient)
        is info. The result gains C(nodes), a node by column (C(read), C(restart), C(files), C(handlers)) matrix.
    type: dict
extends_documentation_fragment:
  - gpuop.gates.k8s
attributes:
  check_mode:
    support: full
    description: The cluster is only read in any mode; in check mode the reports are not written.
  diff_mode:
    support: full
    description: Before and after of C(doctor.md) and C(doctor.json).
requirements:
  - kubernetes (python)
"""

EXAMPLES = r"""
- name: Diagnose the lab cluster and write the reports
  gpuop.gates.gpu_doctor:
    kubeconfig: "{{ gpuop_root }}/kubeconfig"
    output_dir: "{{ gpuop_root }}/out"
    physical_gpus: 4
    vram_per_gpu_gib: 40
    sharing_default_key: any
  register: __gpuop_doctor

- name: Gate a CI job on any other cluster; fail on a critical finding
  gpuop.gates.gpu_doctor:
    kubeconfig: /etc/ci/kubeconfig
    context: prod-gpu
    fail_on: critical
    runtime_classes: [nvidia]
    daemonsets: [gpu-operator/nvidia-container-toolkit-daemonset]
    containerd_configs: [/etc/containerd/config.toml]
"""

RETURN = r"""
msg:
  description: The human report, a summary line, then per finding a line and its evidence command on the next.
  returned: always
  type: str
  sample: "gpu doctor: 1 critical, 0 warning, 0 info\nCRITICAL rollout  DaemonSet gpu-operator/nvidia-container-toolkit rollout stalled: ..."
lines:
  description: The same report as a list of lines (each evidence command whole, indented by two spaces after C($)).
  returned: always
  type: list
  elements: str
findings:
  description: Every finding, worst first (severity, then gate, subject, text).
  returned: always
  type: list
  elements: dict
  contains:
    severity:
      description: V(critical), V(warning) or V(info).
      type: str
    gate:
      description: V(runtime-handler), V(advertisement), V(sharing), V(rollout) or V(containerd).
      type: str
    code:
      description:
        - Stable kind of finding, e.g. C(handler-not-loaded), C(handler-unknown), C(sandbox-failed),
          C(pod-insufficient-resource), C(advertisement-mismatch), C(sharing-config), C(rollout-stalled),
          C(containerd-cri-fails), C(read-failed).
      type: str
    subject:
      description: What it is about, e.g. C(daemonset/gpu-operator/nvidia-container-toolkit).
      type: str
    text:
      description: The one-line finding.
      type: str
    command:
      description: The one command that shows the evidence.
      type: str
    details:
      description: The numbers behind the line (names, requests, allocatable, blocker, ...).
      type: dict
  sample:
    - severity: critical
      gate: rollout
      code: rollout-stalled
      subject: daemonset/gpu-operator/nvidia-container-toolkit
      text: "DaemonSet gpu-operator/nvidia-container-toolkit rollout stalled: insufficient-memory on lab-node-0:
        requests 64Gi > 32Gi allocatable (largest node 32Gi); desired 3, updated 1, ready 2, unavailable 1, maxUnavailable 1"
      command: "kubectl --kubeconfig /root/gpuop/kubeconfig -n gpu-operator get pod nvidia-container-toolkit-x2b9k -o 'jsonpath=...'"
summary:
  description: Number of findings per severity, and C(total).
  returned: always
  type: dict
  sample: {critical: 1, warning: 1, info: 1, total: 3}
gates:
  description: Each gate's state (V(broken), V(unknown), V(ok), V(not-applicable)) and what it checked.
  returned: always
  type: dict
failed_gate:
  description: Whether a finding at O(fail_on) or worse exists (the task fails then).
  returned: always
  type: bool
server_version:
  description: The API server's gitVersion.
  returned: always
  type: str
  sample: v1.36.1
counts:
  description: Objects read per list.
  returned: always
  type: dict
  sample: {nodes: 3, pods: 4, runtimeclasses: 1, daemonsets: 1, configmaps: 7, events: 0}
api_calls:
  description: Every API request made, as C(METHOD path), in order. Their number does not depend on the cluster's size.
  returned: always
  type: list
  elements: str
elapsed:
  description: Seconds the reading and the diagnosis took (not written to the reports).
  returned: always
  type: float
  sample: 0.41
report:
  description: The Markdown report (what C(doctor.md) holds).
  returned: always
  type: str
files:
  description: The report files' paths; empty without O(output_dir).
  returned: always
  type: list
  elements: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.doctor import argument_spec, render_md, run
from ansible_collections.gpuop.gates.plugins.module_utils import doctor_outputs
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    started = time.monotonic()
    changed, diffs, files = False, [], []
    try:
        cluster = Cluster(params["kubeconfig"], params["context"], params["request_timeout"])
        result, meta = run(cluster, params, now=time.time())
        result = doctor_outputs.apply_suppressions(result, params["suppressions"])
        elapsed = round(time.monotonic() - started, 3)
        markdown = render_md(result, meta)
        lines = doctor_outputs.render_terminal(result)
        outputs = [("doctor.md", markdown), ("doctor.json", doctor_outputs.render_json_v2(result, meta)),
                   ("doctor.sarif", doctor_outputs.render_sarif(result, meta)),
                   ("doctor.junit.xml", doctor_outputs.render_junit(result, meta)),
                   ("doctor.html", doctor_outputs.render_html(result, meta)), ("doctor.txt", "\n".join(lines) + "\n")]
        if params["output_dir"]:
            for name, content in outputs:
                path = os.path.join(params["output_dir"], name)
                one_changed, diff = ensure_file(path, content, 0o644, module.check_mode)
                changed = changed or one_changed
                diffs.append(diff)
                files.append(path)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    failed = doctor_outputs.failing(result, params["fail_on"])
    out = dict(changed=changed, lines=lines, findings=result["findings"], summary=result["summary"],
               gates=result["gates"], failed_gate=failed, server_version=result["server_version"],
               counts=result["counts"], api_calls=meta["api_calls"], elapsed=elapsed, report=markdown, files=files)
    if module._diff:
        out["diff"] = diffs
    if failed:
        module.fail_json(msg="fail_on=%s: %s\n%s" % (params["fail_on"], lines[0], "\n".join(lines[1:])), **out)
    module.exit_json(msg="\n".join(lines), **out)


if __name__ == "__main__":
    main()
