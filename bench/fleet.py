#!/usr/bin/env python3
"""bench/fleet.py: the doctor's fleet gate and its outputs at N simulated nodes (no cluster, no SSH).

    .venv/bin/python bench/fleet.py [--nodes 50,1000] [--repeat 5]

Each node answers as containerd_node_view does on a real twin (the shape of fleet.read_node's view), with the
mix an incident leaves: most nodes clean, some restart-pending, some with an orphan drop-in, some unreadable,
and a pod of RuntimeClass nvidia on a few whose daemon lacks the handler. Timed: doctor.diagnose (every gate,
the fleet gate included) on the step-8 snapshot plus those N nodes, then every output of doctor_outputs
(SARIF, JUnit, HTML, JSON, terminal). The reading over SSH is not in these figures: one module run per node,
in parallel up to Ansible's forks (docs/performance.md).
"""

import argparse
import copy
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.gpuop.gates.plugins.module_utils import doctor, doctor_outputs  # noqa: E402

CONFIG = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"


def view(index):
    kind = index % 20
    loaded = ["nvidia", "runc"]
    predicted = ["nvidia", "runc"]
    files = [{"path": CONFIG, "loaded": True, "error": None, "version": 2, "plugin_ids": ["io.containerd.grpc.v1.cri"],
              "runtimes": ["runc"], "imports": [DROPIN], "cri_keys": {"io.containerd.grpc.v1.cri": ["cni", "containerd"]},
              "incomplete": [], "cri_line": 4},
             {"path": DROPIN, "loaded": True, "error": None, "version": 2, "plugin_ids": ["io.containerd.grpc.v1.cri"],
              "runtimes": ["nvidia", "runc"], "imports": [],
              "cri_keys": {"io.containerd.grpc.v1.cri": ["cni", "containerd"]}, "incomplete": [], "cri_line": 6}]
    if kind == 1:
        loaded = ["runc"]  # restart pending
    if kind == 2:
        files.append({"path": "/etc/containerd/config.d/99-nvidia.toml", "loaded": False, "error": None})
    if kind == 3:
        return {"msg": "Failed to connect to the host via ssh: Connection timed out", "unreachable": True}
    return {"view": {"config": CONFIG, "containerd_version": "1.7.24", "containerd_major": 1,
                     "load_order": [CONFIG, DROPIN], "files": files, "warnings": [],
                     "predicted": {"runtimes": predicted, "default_runtime_name": "runc", "cri_loads": True,
                                   "error": None, "reason": "from the files"},
                     "loaded": {"runtimes": loaded, "default_runtime_name": "runc", "cri_loaded": True, "error": None}}}


def snapshot(n):
    with open(os.path.join(ROOT, "tests", "fixtures", "doctor", "step8.json")) as handle:
        data = json.load(handle)
    template = data["nodes"][0]
    for index in range(n):
        node = copy.deepcopy(template)
        node["metadata"]["name"] = "gpu-%04d" % index
        data["nodes"].append(node)
        if index % 20 == 1:
            data["pods"].append({"metadata": {"name": "cuda-%04d" % index, "namespace": "ml", "uid": "p%d" % index},
                                 "spec": {"nodeName": "gpu-%04d" % index, "runtimeClassName": "nvidia", "containers": []},
                                 "status": {"phase": "Running"}})
    return data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="50,1000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    options = {"kubeconfig": "/k", "context": None, "physical_gpus": 4, "vram_per_gpu_gib": 40,
               "sharing_default_key": "any", "runtime_classes": ["nvidia"], "daemonsets": []}
    meta = {"kubeconfig": "/k", "context": None, "server": "https://127.0.0.1:6443", "api_calls": ["GET /version"],
            "fail_on": "warning"}
    results = []
    for n in [int(x) for x in args.nodes.split(",")]:
        snap = snapshot(n)
        views = {"gpu-%04d" % i: view(i) for i in range(n)}
        diag, render = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = doctor.diagnose(copy.deepcopy(snap), dict(options, nodes=views), 1764800000.0)
            diag.append(time.perf_counter() - start)
            start = time.perf_counter()
            outputs = doctor_outputs.render_all(result, meta)
            render.append(time.perf_counter() - start)
        fleet = [f for f in result["findings"] if f["gate"] == "containerd-nodes"]
        row = {"nodes": n, "diagnose_s": round(min(diag), 4), "outputs_s": round(min(render), 4),
               "fleet_findings": len(fleet), "bytes": {k: len(v) for k, v in sorted(outputs.items())}}
        results.append(row)
        print("%5d nodes: diagnose %.3f s, every output %.3f s, %d fleet findings (grouped), html %d bytes"
              % (n, row["diagnose_s"], row["outputs_s"], row["fleet_findings"], row["bytes"]["doctor.html"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
