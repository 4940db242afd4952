#!/usr/bin/env python3
"""bench/scale.py: the rollout report, the advertisement and the sharing at N kwok nodes.

    .venv/bin/python bench/scale.py [--nodes 10,100,1000] [--repeat 3] [--bin-dir DIR] [--workdir DIR] [--out FILE]

One kwok cluster (bench-scale-<pid>, made by playbooks/cluster.yml with
kwok_cluster_create_args: [--disable-qps-limits]) grows to each N in turn: nodes are created in
bulk (one `kubectl create -f -` of a List; the 3 lab nodes count in N), the toolkit DaemonSet is
rolled out on all of them and then stalled by the 64Gi update. Then, --repeat times each:
  - `ansible localhost -m daemonset_rollout` (the rollout report): wall time, its own api_calls;
  - the same report in-process (the module's logic and calls without Ansible's start-up);
  - `ansible localhost -m node_extended_resource` on the 3 lab nodes (a few nodes);
  - `ansible localhost -m gpu_sharing` (pure arithmetic, no API call);
  - bench/scale-roles.yml: the node_advertisement and gpu_time_slicing roles;
  - bench/scale-report.yml: the rollout report and the doctor as two tasks of one playbook (each task's time).
Server-side GET/LIST counts come from the apiserver's apiserver_request_total (before/after; the
controllers' own GET/LIST traffic is included, their watches and status writes are not).
The cluster is deleted at the end, also on failure.
"""

import argparse
import atexit
import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import COLLECTIONS, PROJECT, VENV_BIN, Clusters, env, find_bin_dir, loadavg, median, uptime_line  # noqa: E402
import k8sraw  # noqa: E402
from ansible_collections.gpuop.gates.plugins.module_utils.kwok_nodes import desired_node  # noqa: E402  (the lab's node shape, from the project)

NS = "gpu-operator"
DS = "nvidia-container-toolkit"
OLD_IMAGE = "nvcr.io/nvidia/k8s/container-toolkit:v1.16.2"
NEW_IMAGE = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
LAB_NODES = ["lab-node-0", "lab-node-1", "lab-node-2"]
SHARING_CONFIG = ("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: false\n    failRequestsGreaterThanOne: true\n"
                  "    resources:\n      - name: nvidia.com/gpu\n        replicas: 5")


def daemonset():
    labels = {"app": DS}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": DS, "namespace": NS, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                {"name": "toolkit", "image": OLD_IMAGE, "resources": {"requests": {"memory": "128Mi"}}}]}},
        },
    }


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class NodeReady(object):
    """Counts Ready nodes from a watch on /api/v1/nodes."""

    def __init__(self, api):
        self.ready = set()
        self.lock = threading.Lock()
        self.stop = k8sraw.StopFlag()
        self.thread = threading.Thread(target=api.watch, args=("/api/v1/nodes", self._on, self.stop), daemon=True)
        self.thread.start()

    def _on(self, kind, node, _t):
        name = node["metadata"]["name"]
        ok = kind != "DELETED" and any(c.get("type") == "Ready" and c.get("status") == "True"
                                       for c in (node.get("status") or {}).get("conditions") or [])
        with self.lock:
            (self.ready.add if ok else self.ready.discard)(name)

    def count(self):
        with self.lock:
            return len(self.ready)

    def close(self):
        self.stop.set()


def wait_until(pred, timeout, what, interval=0.5):
    t0 = time.monotonic()
    while True:
        value = pred()
        if value:
            return round(time.monotonic() - t0, 2)
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def kubectl(bin_dir, kubeconfig, args, stdin=None):
    proc = subprocess.run([os.path.join(bin_dir, "kubectl"), "--kubeconfig", kubeconfig] + args, input=stdin,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("kubectl %s: %s" % (" ".join(args[:3]), proc.stderr[-1000:]))
    return proc.stdout


def add_nodes(bin_dir, kubeconfig, start, stop):
    items = [desired_node("scale-node-%04d" % i, CAPACITY) for i in range(start, stop)]
    if not items:
        return 0.0
    t0 = time.monotonic()
    kubectl(bin_dir, kubeconfig, ["create", "-f", "-"], stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return round(time.monotonic() - t0, 2)


def ds_status(api):
    try:
        ds = api.get("/apis/apps/v1/namespaces/%s/daemonsets/%s" % (NS, DS))
    except k8sraw.ApiError as exc:
        if exc.status == 404:
            return None
        raise
    return ds


def rolled_out(api, n):
    ds = ds_status(api)
    if not ds:
        return False
    st = ds.get("status") or {}
    return (st.get("observedGeneration") == ds["metadata"]["generation"] == 1 and st.get("desiredNumberScheduled") == n
            and st.get("updatedNumberScheduled") == n and st.get("numberAvailable") == n)


def stalled(api, n):
    ds = ds_status(api)
    st = (ds or {}).get("status") or {}
    if not ds or st.get("observedGeneration") != ds["metadata"]["generation"] or ds["metadata"]["generation"] < 2:
        return False
    if not (st.get("updatedNumberScheduled", 0) >= 1 and st.get("numberUnavailable", 0) >= 1
            and st.get("numberReady") == n - 1):
        return False
    pending = api.get("/api/v1/namespaces/%s/pods" % NS, {"fieldSelector": "status.phase=Pending"}).get("items", [])
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for p in pending for c in (p.get("status") or {}).get("conditions") or [])


def adhoc(module, args, kubeconfig_env=None):
    """`ansible localhost -m MODULE -a JSON` with the JSON stdout callback: (wall, result)."""
    e = env({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
             "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit", "JUNIT_OUTPUT_DIR": "/tmp/gpuop-bench/junit-adhoc"})
    t0 = time.monotonic()
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpuop.gates." + module, "-a", json.dumps(args)],
                          cwd=PROJECT, env=e, capture_output=True, text=True)
    wall = round(time.monotonic() - t0, 3)
    try:
        doc = json.loads(proc.stdout[proc.stdout.index("{"):])
        result = doc["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise RuntimeError("ansible -m %s printed no result (rc %s): %s %s" % (module, proc.returncode, proc.stdout[-800:], proc.stderr[-800:]))
    if result.get("failed"):
        raise RuntimeError("ansible -m %s failed: %s" % (module, result.get("msg")))
    return wall, result


IN_PROCESS = r"""
import json, sys, time
t0 = time.monotonic()
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster
from ansible_collections.gpuop.gates.plugins.module_utils import rollout
t1 = time.monotonic()
c = Cluster(sys.argv[2])
t2 = time.monotonic()
analysis, _ = rollout.observe(c, sys.argv[3], sys.argv[4])
t3 = time.monotonic()
text = rollout.report_text(analysis)
print(json.dumps({"import": round(t1 - t0, 3), "client": round(t2 - t1, 3), "observe": round(t3 - t2, 3),
                  "total": round(time.monotonic() - t0, 3), "calls": c.calls, "report": text}))
"""


def in_process_report(kubeconfig):
    t0 = time.monotonic()
    proc = subprocess.run([os.path.join(VENV_BIN, "python"), "-c", IN_PROCESS, COLLECTIONS,
                           kubeconfig, NS, DS], capture_output=True, text=True)
    wall = round(time.monotonic() - t0, 3)
    if proc.returncode != 0:
        raise RuntimeError("in-process report failed: %s" % proc.stderr[-1000:])
    out = json.loads(proc.stdout)
    out["process_wall"] = wall
    return out


def playbook_tasks(playbook, extra):
    """ansible-playbook PLAYBOOK -e EXTRA with the JSON callback: (wall, [(task name, seconds)] in run order)."""
    e = env({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    t0 = time.monotonic()
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), playbook, "-e", json.dumps(extra)],
                          cwd=PROJECT, env=e, capture_output=True, text=True)
    wall = round(time.monotonic() - t0, 3)
    try:  # the JSON document, then whatever the enabled callbacks print after it (profile_tasks' recap)
        doc, _end = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{"):])
    except ValueError as exc:
        raise RuntimeError("%s printed no JSON (rc %s, %s): %s" % (playbook, proc.returncode, exc, proc.stderr[-1500:]))
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (playbook, proc.stdout[-1500:]))
    return wall, [(t["task"]["name"], _span(t["task"]["duration"])) for play in doc["plays"] for t in play["tasks"]]


def roles_run(root, kubeconfig, tag):
    out_dir = os.path.join(root, "out-%s" % tag)
    os.makedirs(out_dir, exist_ok=True)
    extra = {
        "gpuop_root": root, "gpuop_kubeconfig": kubeconfig,
        "node_advertisement_kubeconfig": kubeconfig, "node_advertisement_nodes": ["lab-node-0"],
        "node_advertisement_quantity": 4, "node_advertisement_wait_pod": {},
        "node_advertisement_table_nodes": LAB_NODES, "node_advertisement_table_dest": os.path.join(out_dir, "node-gpu.txt"),
        "gpu_time_slicing_kubeconfig": kubeconfig, "gpu_time_slicing_manifest": os.path.join(out_dir, "time-slicing.yaml"),
        "gpu_time_slicing_nodes": ["lab-node-1"], "gpu_time_slicing_dest": os.path.join(out_dir, "slots.txt"),
    }
    wall, tasks = playbook_tasks("bench/scale-roles.yml", extra)
    return wall, sorted(tasks, key=lambda x: -(x[1] or 0))[:5]


def _span(d):
    try:
        a = datetime.datetime.fromisoformat(d["start"].rstrip("Z"))
        b = datetime.datetime.fromisoformat(d["end"].rstrip("Z"))
        return round((b - a).total_seconds(), 3)
    except (KeyError, ValueError, AttributeError):
        return None


def measured(api, fn):
    before = k8sraw.request_totals(api.metrics_text())
    value = fn()
    after = k8sraw.request_totals(api.metrics_text())
    delta = k8sraw.diff_totals(before, after)
    # The two /metrics reads themselves are GETs on no resource: not counted.
    delta = {k: v for k, v in delta.items() if k.strip() != "GET"}
    return value, delta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="10,100,1000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bin-dir")
    ap.add_argument("--workdir", default="/tmp/gpuop-bench")
    ap.add_argument("--out")
    ap.add_argument("--ready-timeout", type=float, default=900)
    args = ap.parse_args()
    sizes = sorted(int(x) for x in args.nodes.split(","))
    if sizes[0] < len(LAB_NODES):
        sys.exit("scale: N counts the 3 lab nodes; give N >= 3")

    bin_dir = find_bin_dir(args.bin_dir)
    os.makedirs(args.workdir, exist_ok=True)
    clusters = Clusters(bin_dir, args.workdir)
    atexit.register(clusters.delete_all)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    name = "bench-scale-%d" % (os.getpid() % 100000)
    root = os.path.join(args.workdir, name)
    kubeconfig = os.path.join(root, "kubeconfig")
    out = args.out or os.path.join(args.workdir, "scale-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    results = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "sizes": [],
               "cluster": name, "bin_dir": bin_dir}
    log("scale: N = %s; %s" % (sizes, uptime_line()))
    try:
        results["cluster_create_s"] = clusters.create(name, root, {"kwok_cluster_create_args": ["--disable-qps-limits"]})
        log("cluster %s created in %ss" % (name, results["cluster_create_s"]))
        api = k8sraw.Api(kubeconfig, timeout=60)
        ready = NodeReady(api)
        try:
            api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        except k8sraw.ApiError as exc:
            if exc.status != 409:
                raise
        have = len(LAB_NODES)
        for n in sizes:
            row = {"nodes": n, "load_start": loadavg()}
            row["create_nodes_s"] = add_nodes(bin_dir, kubeconfig, have - len(LAB_NODES), n - len(LAB_NODES))
            have = n
            row["nodes_ready_s"] = wait_until(lambda: ready.count() >= n, args.ready_timeout, "%d nodes Ready" % n, 1.0)
            log("N=%d: nodes created in %ss, all Ready after %ss more" % (n, row["create_nodes_s"], row["nodes_ready_s"]))
            api.request("POST", "/apis/apps/v1/namespaces/%s/daemonsets" % NS, daemonset())
            row["rollout_complete_s"] = wait_until(lambda: rolled_out(api, n), args.ready_timeout, "rollout on %d nodes" % n, 0.5)
            api.request("PATCH", "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (NS, DS),
                        {"spec": {"template": {"spec": {"containers": [{"name": "toolkit", "image": NEW_IMAGE,
                                                                          "resources": {"requests": {"memory": "64Gi"}}}]}}}},
                        content_type="application/strategic-merge-patch+json")
            row["stalled_after_update_s"] = wait_until(lambda: stalled(api, n), 300, "stalled at %d nodes" % n, 0.2)
            log("N=%d: rolled out in %ss, stalled %ss after the update" % (n, row["rollout_complete_s"], row["stalled_after_update_s"]))

            reps = {"report_wall": [], "report_calls": [], "report_server": [], "in_process": [],
                    "advertise_wall": [], "advertise_calls": [], "advertise_server": [],
                    "sharing_wall": [], "roles_wall": [], "roles_server": [], "roles_slowest": [],
                    "doctor_wall": [], "doctor_calls": [], "doctor_elapsed": [],
                    "playbook_wall": [], "report_task": [], "doctor_task": []}
            for r in range(args.repeat):
                (wall, res), server = measured(api, lambda: adhoc("daemonset_rollout", {
                    "kubeconfig": kubeconfig, "namespace": NS, "name": DS}))
                reps["report_wall"].append(wall)
                reps["report_calls"].append(len(res.get("api_calls") or []))
                reps["report_server"].append(server)
                row["report_text"] = res.get("report")
                row["report_api_calls"] = res.get("api_calls")
                reps["in_process"].append(in_process_report(kubeconfig))
                (wall, res), server = measured(api, lambda: adhoc("node_extended_resource", {
                    "kubeconfig": kubeconfig, "nodes": LAB_NODES, "resource": "nvidia.com/gpu", "quantity": 4 + r + 10 * sizes.index(n)}))
                reps["advertise_wall"].append(wall)
                reps["advertise_calls"].append(len(res.get("api_calls") or []))
                reps["advertise_server"].append(server)
                # The doctor (issue 10): list calls only, their number flat in N; its own elapsed beside the whole run.
                wall, res = adhoc("gpu_doctor", {"kubeconfig": kubeconfig})
                reps["doctor_wall"].append(wall)
                reps["doctor_calls"].append(len(res.get("api_calls") or []))
                reps["doctor_elapsed"].append(res.get("elapsed"))
                # Both as tasks of one playbook (what a user's play pays per task once the client is imported).
                wall, tasks = playbook_tasks("bench/scale-report.yml", {"bench_kubeconfig": kubeconfig, "bench_namespace": NS,
                                                                         "bench_daemonset": DS})
                reps["playbook_wall"].append(wall)
                reps["report_task"].append(dict(tasks)["Rollout report"])
                reps["doctor_task"].append(dict(tasks)["Doctor"])
                wall, res = adhoc("gpu_sharing", {"config": SHARING_CONFIG, "physical_gpus": 4, "vram_per_gpu_gib": 40})
                reps["sharing_wall"].append(wall)
                (wall_slow), server = measured(api, lambda: roles_run(root, kubeconfig, "%d-%d" % (n, r)))
                reps["roles_wall"].append(wall_slow[0])
                reps["roles_slowest"].append(wall_slow[1])
                reps["roles_server"].append(server)
            row["load_end"] = loadavg()
            row["uptime"] = uptime_line()
            row["runs"] = reps
            row["median"] = {
                "report_wall": median(reps["report_wall"]), "report_calls": median(reps["report_calls"]),
                "report_in_process_observe": median([x["observe"] for x in reps["in_process"]]),
                "report_in_process_total": median([x["total"] for x in reps["in_process"]]),
                "advertise_wall": median(reps["advertise_wall"]), "advertise_calls": median(reps["advertise_calls"]),
                "sharing_wall": median(reps["sharing_wall"]), "roles_wall": median(reps["roles_wall"]),
                "roles_server_get_list": median([sum(s.values()) for s in reps["roles_server"]]),
                "report_server_get_list": median([sum(s.values()) for s in reps["report_server"]]),
                "doctor_wall": median(reps["doctor_wall"]), "doctor_calls": median(reps["doctor_calls"]),
                "doctor_elapsed": median([x for x in reps["doctor_elapsed"] if x is not None] or [0]),
                "report_task": median(reps["report_task"]), "doctor_task": median(reps["doctor_task"]),
                "report_doctor_playbook_wall": median(reps["playbook_wall"]),
            }
            results["sizes"].append(row)
            log("N=%d: %s  load %s" % (n, json.dumps(row["median"]), row["load_end"]))
            with open(out, "w") as f:
                json.dump(results, f, indent=1)
            if n != sizes[-1]:
                api.request("DELETE", "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (NS, DS),
                            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
                wait_until(lambda: not api.get("/api/v1/namespaces/%s/pods" % NS, {"limit": "1"}).get("items")
                           and ds_status(api) is None, 600, "the DaemonSet and its pods to be gone", 0.5)
        ready.close()
    except Exception as exc:
        results["error"] = str(exc)
        log("scale FAILED: %s" % exc)
    finally:
        clusters.delete(name)
        results["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    print("\n N     | rollout report (ansible -m) | calls | in-process observe | advertise 3 nodes: s / calls | sharing s "
          "| roles s / server GET+LIST | doctor (ansible -m) s / calls / own elapsed s | in a playbook: report task s / doctor task s")
    for row in results["sizes"]:
        m = row["median"]
        print(" %-5d | %27.2f | %5d | %18.3f | %12.2f / %-5d | %9.2f | %7.2f / %-17d | %.2f / %d / %.2f | %.3f / %.3f"
              % (row["nodes"], m["report_wall"], m["report_calls"], m["report_in_process_observe"], m["advertise_wall"],
                 m["advertise_calls"], m["sharing_wall"], m["roles_wall"], m["roles_server_get_list"],
                 m["doctor_wall"], m["doctor_calls"], m["doctor_elapsed"], m["report_task"], m["doctor_task"]))
    log("results in %s; %s" % (out, uptime_line()))
    return 1 if "error" in results else 0


if __name__ == "__main__":
    sys.exit(main())
