#!/usr/bin/env python3
"""bench/run.py: site.yml against the same steps done by hand, on a fresh kwok cluster per run.

    .venv/bin/python bench/run.py [--rounds 5] [--bin-dir DIR] [--workdir /tmp/gpuop-bench] [--out FILE]

Each round creates a fresh cluster for the by-hand baseline (bench/byhand.sh) and one for
`ansible-playbook site.yml` (cluster creation with playbooks/cluster.yml is not timed), alternating
which goes first, then times the idempotent re-run of site.yml on the playbook's cluster (changed=0
and byte-identical files are checked). A concurrent watch on the pod and the DaemonSet records the
moment each waited-for condition first holds; the playbook's JSON callback gives each task's start
and end and each wait module's `reached_at`. Outputs of both are diff-checked (root path
normalised). Every cluster (bench-*) is deleted with playbooks/reset.yml, also on failure.
Prints medians and the ratios playbook/by-hand and re-run/by-hand; writes everything to --out.
"""

import argparse
import atexit
import datetime
import hashlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import PROJECT, VENV_BIN, Clusters, env, find_bin_dir, loadavg, median, uptime_line  # noqa: E402
import k8sraw  # noqa: E402

try:
    from ansible_collections.gpuop.gates.plugins.module_utils import rollout as gpuop_rollout  # the project's own definition of complete/stalled
except Exception:  # pragma: no cover - the status fallback below is used
    gpuop_rollout = None

NEW_IMAGE = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"

# Outputs whose format is exact (seed, issues 4 and 5): compared byte for byte (root normalised).
EXACT = [
    "etc/containerd/config.toml", "etc/containerd/conf.d/99-nvidia.toml", "out/merge.txt",
    "k8s/runtimeclass.yaml", "k8s/gpu-pod.yaml", "k8s/time-slicing.yaml", "k8s/toolkit-ds.yaml",
    "out/unscheduled.txt", "out/node-gpu.txt", "out/slots.txt", "out/rollout.txt",
]
# Compared by behaviour: same verdict on the same containerd dumps.
CHECK_SCRIPT = "bin/check-runtime.sh"

WAITS = ("pod PodScheduled=False", "pod Running", "DaemonSet complete", "DaemonSet stalled")

DUMP_1X = """version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"  # nvidia
"""
DUMP_2X = """version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s]
          runtime_type = 'io.containerd.runc.v2'
"""
CHECK_CASES = [
    ("1.x dump with nvidia", DUMP_1X % ("nvidia", "nvidia"), 0),
    ("1.x dump with runc only", DUMP_1X % ("runc", "runc"), 1),
    ("1.x dump with decoy nvidia-cdi", DUMP_1X % ("nvidia-cdi", "nvidia-cdi"), 1),
    ("2.x dump with nvidia", DUMP_2X % "nvidia", 0),
    ("2.x dump with decoy nvidia-legacy", DUMP_2X % "nvidia-legacy", 1),
    ("dump fails", None, "nonzero"),
]


def utc_epoch(text):
    """'2026-12-02T16:49:40.123456Z' (or without fraction) -> epoch seconds."""
    if not text:
        return None
    text = text.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.timezone.utc).timestamp()


# ------------------------------------------------------------------ the concurrent watch


class ConditionWatch(object):
    """Watches the GPU pod and the toolkit DaemonSet; records when each waited-for condition first holds."""

    def __init__(self, kubeconfig):
        self.api = k8sraw.Api(kubeconfig)
        self.stop = k8sraw.StopFlag()
        self.first = {}
        self.lock = threading.Lock()
        self.ds = None
        self.pods = {}
        self.threads = [
            threading.Thread(target=self.api.watch, daemon=True, args=(
                "/api/v1/namespaces/gpu-lab/pods", self._on_probe, self.stop, {"fieldSelector": "metadata.name=cuda-probe"})),
            threading.Thread(target=self.api.watch, daemon=True, args=(
                "/apis/apps/v1/namespaces/gpu-operator/daemonsets", self._on_ds, self.stop,
                {"fieldSelector": "metadata.name=nvidia-container-toolkit"})),
            threading.Thread(target=self.api.watch, daemon=True, args=(
                "/api/v1/namespaces/gpu-operator/pods", self._on_ds_pod, self.stop,
                {"labelSelector": "app=nvidia-container-toolkit"})),
        ]

    def start(self):
        for t in self.threads:
            t.start()
        time.sleep(0.3)  # let the three streams open before the timed run starts (setup, not timed)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(2)
        self.api.close()

    def _mark(self, what, t):
        with self.lock:
            self.first.setdefault(what, t)

    def _on_probe(self, kind, pod, t):
        if kind == "DELETED":
            return
        status = pod.get("status") or {}
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                self._mark("pod PodScheduled=False", t)
        if status.get("phase") == "Running":
            self._mark("pod Running", t)

    def _on_ds(self, kind, ds, t):
        if kind == "DELETED":
            return
        with self.lock:
            self.ds = ds
        self._judge(t)

    def _on_ds_pod(self, kind, pod, t):
        name = pod["metadata"]["name"]
        with self.lock:
            if kind == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = pod
        self._judge(t)

    def _judge(self, t):
        with self.lock:
            ds, pods = self.ds, list(self.pods.values())
        if ds is None:
            return
        gen = (ds.get("metadata") or {}).get("generation")
        if gpuop_rollout is not None:
            try:
                phase = gpuop_rollout.analyse(ds, pods, None, t)["phase"]
            except Exception:
                phase = _status_phase(ds, pods)
        else:
            phase = _status_phase(ds, pods)
        if phase == "complete" and gen == 1:
            self._mark("DaemonSet complete", t)
        if phase == "stalled" and gen and gen >= 2:
            self._mark("DaemonSet stalled", t)


def _status_phase(ds, pods):
    st = ds.get("status") or {}
    gen = ds["metadata"].get("generation")
    desired = st.get("desiredNumberScheduled", 0)
    if st.get("observedGeneration") != gen or desired == 0:
        return "progressing"
    if st.get("updatedNumberScheduled") == desired == st.get("numberAvailable"):
        return "complete"
    stuck = [p for p in pods if (p.get("status") or {}).get("phase") == "Pending" and any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in p["status"].get("conditions") or [])]
    return "stalled" if stuck and st.get("numberUnavailable", 0) >= 1 else "progressing"


def controllers_up(kubeconfig, timeout=300):
    api = k8sraw.Api(kubeconfig)
    t0 = time.monotonic()
    try:
        while True:
            try:
                api.get("/api/v1/namespaces/default/serviceaccounts/default")
                return round(time.monotonic() - t0, 2)
            except k8sraw.ApiError as exc:
                if exc.status != 404:
                    raise
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("the controller-manager made no default ServiceAccount in %ss" % timeout)
            time.sleep(0.5)
    finally:
        api.close()


# ------------------------------------------------------------------ the two ways


def child_cpu():
    """CPU seconds (user + system) used so far by waited-for child processes (the whole tree)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_byhand(root, bin_dir, workdir):
    timing = os.path.join(workdir, "byhand-timing-%s.json" % os.path.basename(root))
    t0_epoch, t0, c0 = time.time(), time.monotonic(), child_cpu()
    proc = subprocess.run(["bash", os.path.join(PROJECT, "bench", "byhand.sh"), "--root", root, "--bin-dir", bin_dir,
                           "--timing", timing], capture_output=True, text=True, env=env())
    wall = time.monotonic() - t0
    cpu = child_cpu() - c0
    if proc.returncode != 0:
        raise RuntimeError("byhand.sh failed (rc %s): %s" % (proc.returncode, proc.stderr[-2000:]))
    with open(timing) as f:
        data = json.load(f)
    steps = {s["step"].split(" ", 1)[0]: round(s["end"] - s["start"], 3) for s in data["steps"]}
    waits = {}
    for w in data["waits"]:
        # By hand the next command runs as soon as the poll saw the condition.
        waits[w["wait"]] = {"reached": w["reached"], "started": w["started"], "moved_on": w["reached"],
                            "first_look": w["started"]}
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "start_epoch": t0_epoch, "steps": steps, "waits": waits}


SITE_ARGS = []  # extra ansible-playbook arguments (--site-arg), e.g. -e containerd_sandbox_build=false


def run_playbook(root, name, workdir, tag):
    junit = os.path.join(workdir, "junit-%s" % tag)
    e = env({
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        # Replaces profile_tasks (it would print into the JSON); never empty: ansible-core 2.19 crashes on ''.
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit",
        "JUNIT_OUTPUT_DIR": junit,
    })
    t0_epoch, t0, c0 = time.time(), time.monotonic(), child_cpu()
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "site.yml", "-e", "gpuop_root=%s" % root,
                           "-e", "gpuop_cluster_name=%s" % name] + SITE_ARGS, cwd=PROJECT, env=e, capture_output=True,
                          text=True)
    wall = time.monotonic() - t0
    cpu = child_cpu() - c0
    with open(os.path.join(workdir, "playbook-%s.json" % tag), "w") as f:
        f.write(proc.stdout)
    try:
        doc = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        raise RuntimeError("site.yml (%s) printed no JSON (rc %s): %s" % (tag, proc.returncode, proc.stderr[-2000:]))
    stats = doc.get("stats", {}).get("localhost", {})
    if proc.returncode != 0:
        failed = [t for t in flatten(doc) if t["result"].get("failed")]
        raise RuntimeError("site.yml (%s) failed (rc %s): %s" % (
            tag, proc.returncode, json.dumps([(t["name"], t["result"].get("msg")) for t in failed])[:2000]))
    tasks = flatten(doc)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "start_epoch": t0_epoch, "stats": stats, "tasks": tasks}


def flatten(doc):
    out = []
    for play in doc.get("plays", []):
        for task in play.get("tasks", []):
            info = task["task"]
            result = (task.get("hosts") or {}).get("localhost", {})
            out.append({
                "name": info["name"], "path": info.get("path", ""),
                "start": utc_epoch(info["duration"].get("start")), "end": utc_epoch(info["duration"].get("end")),
                "result": result,
            })
    return out


STEP_OF_ROLE = {
    "toolchain": "foundation", "kwok_cluster": "foundation", "containerd_config": "1-4", "gpu_pod": "5",
    "node_advertisement": "6", "gpu_time_slicing": "7", "toolkit_rollout": "8",
}


def playbook_steps(run):
    """Seconds per step: each task from its start to the next task's start (includes the engine's gaps)."""
    tasks = run["tasks"]
    steps = {"startup": round(tasks[0]["start"] - run["start_epoch"], 3) if tasks else None}
    per_task = []
    for i, task in enumerate(tasks):
        nxt = tasks[i + 1]["start"] if i + 1 < len(tasks) else run["start_epoch"] + run["wall"]
        span = nxt - task["start"]
        role = task["name"].split(" : ", 1)[0] if " : " in task["name"] else ""
        if not role and "/roles/" in task["path"]:
            role = task["path"].split("/roles/", 1)[1].split("/", 1)[0]
        step = STEP_OF_ROLE.get(role, "foundation" if "cluster.yml" in task["path"] else "plays")
        steps[step] = round(steps.get(step, 0) + span, 3)
        per_task.append((task["name"], task["path"].replace(PROJECT + "/", ""), round(span, 3)))
    run["per_task"] = per_task
    return steps


def playbook_waits(run):
    """For each wait module: when it saw its state (reached_at) and when the play moved on (next task start)."""
    found = {}
    tasks = run["tasks"]
    for i, task in enumerate(tasks):
        res = task["result"]
        if not res.get("reached_at") or res.get("skipped"):
            continue
        what = res.get("what", "")
        if "PodScheduled" in what:
            key = "pod PodScheduled=False"
        elif "phase Running" in what:
            key = "pod Running"
        elif res.get("phase") == "complete":
            key = "DaemonSet complete"
        elif res.get("phase") == "stalled":
            key = "DaemonSet stalled"
        else:
            continue
        if not res.get("waited", True) and key.startswith("pod"):
            continue
        moved_on = tasks[i + 1]["start"] if i + 1 < len(tasks) else task["end"]
        reached = utc_epoch(res["reached_at"])
        # The module's first look: reached_at minus the time it spent waiting.
        first_look = reached - float(res.get("elapsed") or 0.0)
        found[key] = {"reached": reached, "started": task["start"], "moved_on": moved_on, "first_look": first_look,
                      "task": task["name"], "module_elapsed": res.get("elapsed")}
    return found


def wait_delays(seen, waits):
    """Delay from the watch's first sight of each condition to (a) the tool seeing it, (b) moving on.

    ``from_start`` counts from max(condition, the wait's own start): a condition that held before
    the wait began is charged only from the moment the wait started.
    """
    out = {}
    for key in WAITS:
        w, t = waits.get(key), seen.get(key)
        if not w or t is None:
            out[key] = None
            continue
        base = max(t, w["started"]) if w.get("started") else t
        out[key] = {
            "condition_at": round(t, 3),
            "seen_after": round(w["reached"] - t, 3) if w.get("reached") else None,
            "moved_on_after": round(w["moved_on"] - t, 3) if w.get("moved_on") else None,
            "moved_on_after_wait_start": round(w["moved_on"] - base, 3) if w.get("moved_on") else None,
            "held_before_wait": bool(w.get("started") and t < w["started"]),
            # What polling itself adds: 0 when the condition already held at the first look.
            "poll_latency": round(max(0.0, w["reached"] - max(t, w["first_look"])), 3) if w.get("first_look") else None,
        }
    return out


# ------------------------------------------------------------------ output comparison


def tree_hashes(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for fn in files:
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, root)
            with open(path, "rb") as f:
                out[rel] = (hashlib.sha256(f.read()).hexdigest(), stat.S_IMODE(os.stat(path).st_mode))
    return out


def compare_outputs(hand_root, book_root):
    problems = []
    for rel in EXACT:
        a, b = os.path.join(hand_root, rel), os.path.join(book_root, rel)
        if not os.path.exists(a) or not os.path.exists(b):
            problems.append("%s: missing in %s" % (rel, "by-hand" if not os.path.exists(a) else "playbook"))
            continue
        ta = open(a).read().replace(hand_root, "<ROOT>")
        tb = open(b).read().replace(book_root, "<ROOT>")
        if ta != tb:
            import difflib
            problems.append("%s differs:\n%s" % (rel, "".join(difflib.unified_diff(
                tb.splitlines(True), ta.splitlines(True), "playbook", "by-hand"))))
    problems += compare_check_scripts(os.path.join(hand_root, CHECK_SCRIPT), os.path.join(book_root, CHECK_SCRIPT))
    return problems


def compare_check_scripts(hand, book):
    problems = []
    for path in (hand, book):
        if not os.access(path, os.X_OK):
            problems.append("%s is not executable" % path)
    if problems:
        return problems
    tmp = tempfile.mkdtemp(prefix="bench-fake-containerd-")
    try:
        for label, dump, want in CHECK_CASES:
            fake = os.path.join(tmp, "containerd")
            with open(fake, "w") as f:
                if dump is None:
                    f.write("#!/bin/sh\necho 'failed to load config' >&2\nexit 1\n")
                else:
                    f.write("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % dump)
            os.chmod(fake, 0o755)
            e = dict(os.environ, PATH=tmp + os.pathsep + "/usr/bin:/bin")
            rcs = [subprocess.run([p], env=e, capture_output=True).returncode for p in (hand, book)]
            for who, rc in zip(("by-hand", "playbook"), rcs):
                ok = rc != 0 if want == "nonzero" else rc == want
                if not ok:
                    problems.append("check-runtime.sh (%s) on '%s' exited %s, expected %s" % (who, label, rc, want))
    finally:
        shutil.rmtree(tmp)
    return problems


# ------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bin-dir")
    ap.add_argument("--workdir", default="/tmp/gpuop-bench")
    ap.add_argument("--out", help="results JSON (default WORKDIR/results-<time>.json)")
    ap.add_argument("--prefix", default="bench", help="cluster name prefix (names PREFIX-<pid>-<n><h|p>)")
    ap.add_argument("--site-arg", action="append", default=[],
                    help="extra argument of ansible-playbook site.yml, repeatable; like for like with the by-hand "
                         "baseline (no containerd daemons): --site-arg=-e --site-arg=containerd_sandbox_build=false")
    args = ap.parse_args()
    SITE_ARGS[:] = args.site_arg

    bin_dir = find_bin_dir(args.bin_dir)
    os.makedirs(args.workdir, exist_ok=True)
    clusters = Clusters(bin_dir, args.workdir)
    atexit.register(clusters.delete_all)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    results = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine(), "bin_dir": bin_dir, "rounds": []}
    out = args.out or os.path.join(args.workdir, "results-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    print("bench: %d rounds, toolchain %s, %s" % (args.rounds, bin_dir, uptime_line()), flush=True)
    for n in range(args.rounds):
        order = ("byhand", "playbook") if n % 2 == 0 else ("playbook", "byhand")
        rnd = {"round": n + 1, "order": list(order)}
        roots = {}
        try:
            for mode in order:
                name = "%s-%d-%d%s" % (args.prefix, os.getpid() % 100000, n + 1, mode[0])
                root = os.path.join(args.workdir, name)
                shutil.rmtree(root, ignore_errors=True)
                rnd["%s_cluster_create_s" % mode] = clusters.create(name, root)
                # Warm means the controllers run too (not timed): the ServiceAccount controller has
                # made default/default, so a new namespace gets its ServiceAccount at once.
                rnd["%s_controllers_up_s" % mode] = controllers_up(os.path.join(root, "kubeconfig"))
                watch = ConditionWatch(os.path.join(root, "kubeconfig"))
                watch.start()
                try:
                    load_before = loadavg()
                    if mode == "byhand":
                        run = run_byhand(root, bin_dir, args.workdir)
                        steps = run["steps"]
                        waits = run["waits"]
                    else:
                        run = run_playbook(root, name, args.workdir, "%d-first" % (n + 1))
                        steps = playbook_steps(run)
                        waits = playbook_waits(run)
                    load_after = loadavg()
                finally:
                    watch.close()
                rnd[mode] = {"wall": run["wall"], "cpu": run["cpu"], "steps": steps, "load_before": load_before, "load_after": load_after,
                             "wait_delays": wait_delays(watch.first, waits)}
                if mode == "playbook":
                    rnd[mode]["per_task"] = run["per_task"]
                    rnd[mode]["stats"] = run["stats"]
                    before = tree_hashes(root)
                    load_before = loadavg()
                    again = run_playbook(root, name, args.workdir, "%d-rerun" % (n + 1))
                    rnd["rerun"] = {"wall": again["wall"], "cpu": again["cpu"], "steps": playbook_steps(again), "stats": again["stats"],
                                    "load_before": load_before, "load_after": loadavg(),
                                    "per_task": again["per_task"]}
                    after = tree_hashes(root)
                    rnd["rerun"]["changed"] = again["stats"].get("changed")
                    rnd["rerun"]["files_identical"] = before == after
                    if before != after:
                        rnd["rerun"]["files_changed"] = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                roots[mode] = root
                print("  round %d %-8s %6.2fs (cpu %5.2fs)  load %s -> %s" % (n + 1, mode, run["wall"], run["cpu"], rnd[mode]["load_before"], rnd[mode]["load_after"])
                      + ("   re-run %6.2fs changed=%s identical=%s" % (rnd["rerun"]["wall"], rnd["rerun"]["changed"],
                                                                       rnd["rerun"]["files_identical"]) if mode == "playbook" else ""),
                      flush=True)
            rnd["output_problems"] = compare_outputs(roots["byhand"], roots["playbook"])
            rnd["ratio"] = round(rnd["playbook"]["wall"] / rnd["byhand"]["wall"], 2)
            rnd["rerun_ratio"] = round(rnd["rerun"]["wall"] / rnd["byhand"]["wall"], 2)
            rnd["cpu_ratio"] = round(rnd["playbook"]["cpu"] / rnd["byhand"]["cpu"], 2)
            rnd["rerun_cpu_ratio"] = round(rnd["rerun"]["cpu"] / rnd["byhand"]["cpu"], 2)
            if rnd["output_problems"]:
                print("  round %d OUTPUTS DIFFER:\n    %s" % (n + 1, "\n    ".join(rnd["output_problems"])), flush=True)
        except Exception as exc:
            rnd["error"] = str(exc)
            print("  round %d FAILED: %s" % (n + 1, exc), flush=True)
        finally:
            for mode in order:
                name = "%s-%d-%d%s" % (args.prefix, os.getpid() % 100000, n + 1, mode[0])
                clusters.delete(name)
        results["rounds"].append(rnd)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)

    results["summary"] = summarize(results["rounds"])
    results["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print_summary(results["summary"])
    print("bench: results in %s; %s" % (out, uptime_line()))
    return 0 if results["summary"].get("ok_rounds") else 1


def machine():
    import platform
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = "%.0f GiB" % (int(f.readline().split()[1]) / 1048576.0)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory": mem, "kernel": platform.release(),
            "python": platform.python_version(), "host": platform.node(),
            # ANSIBLE_STRATEGY=mitogen_linear (with mitogen's strategy plugins) measures the accelerator.
            "ansible_strategy": os.environ.get("ANSIBLE_STRATEGY", "linear")}


def summarize(rounds):
    ok = [r for r in rounds if "ratio" in r]
    s = {"ok_rounds": len(ok), "failed_rounds": len(rounds) - len(ok)}
    if not ok:
        return s
    s["byhand_median"] = median([r["byhand"]["wall"] for r in ok])
    s["playbook_median"] = median([r["playbook"]["wall"] for r in ok])
    s["rerun_median"] = median([r["rerun"]["wall"] for r in ok])
    s["ratio_of_medians"] = round(s["playbook_median"] / s["byhand_median"], 2)
    s["rerun_ratio_of_medians"] = round(s["rerun_median"] / s["byhand_median"], 2)
    s["median_of_round_ratios"] = median([r["ratio"] for r in ok])
    s["median_of_round_rerun_ratios"] = median([r["rerun_ratio"] for r in ok])
    for mode in ("byhand", "playbook", "rerun"):
        s["%s_cpu_median" % mode] = median([r[mode]["cpu"] for r in ok])
    s["median_of_round_cpu_ratios"] = median([r["cpu_ratio"] for r in ok])
    s["median_of_round_rerun_cpu_ratios"] = median([r["rerun_cpu_ratio"] for r in ok])
    s["load_range"] = [min(min(r[m]["load_before"][0], r[m]["load_after"][0]) for r in ok for m in ("byhand", "playbook")),
                       max(max(r[m]["load_before"][0], r[m]["load_after"][0]) for r in ok for m in ("byhand", "playbook"))]
    s["rerun_changed"] = [r["rerun"]["changed"] for r in ok]
    s["rerun_identical"] = [r["rerun"]["files_identical"] for r in ok]
    s["outputs_equal"] = [not r["output_problems"] for r in ok]
    for mode in ("byhand", "playbook", "rerun"):
        src = [r[mode]["steps"] for r in ok]
        keys = sorted(set(k for st in src for k in st))
        s["%s_steps_median" % mode] = {k: median([st.get(k) for st in src]) for k in keys}
    for mode in ("byhand", "playbook"):
        s["%s_wait_delays_median" % mode] = {}
        for key in WAITS:
            vals = [r[mode]["wait_delays"].get(key) for r in ok if r[mode]["wait_delays"].get(key)]
            s["%s_wait_delays_median" % mode][key] = {
                field: median([v[field] for v in vals])
                for field in ("seen_after", "moved_on_after", "moved_on_after_wait_start", "poll_latency")
            } if vals else None
            if vals:
                s["%s_wait_delays_median" % mode][key]["held_before_wait"] = sum(v["held_before_wait"] for v in vals)
    # The slowest tasks (median of their spans over the rounds)
    spans = {}
    for r in ok:
        for name, path, span in r["playbook"]["per_task"]:
            spans.setdefault((name, path), []).append(span)
    s["playbook_slowest_tasks"] = sorted(([n, p, median(v), len(v)] for (n, p), v in spans.items()), key=lambda x: -x[2])[:25]
    spans = {}
    for r in ok:
        for name, path, span in r["rerun"]["per_task"]:
            spans.setdefault((name, path), []).append(span)
    s["rerun_slowest_tasks"] = sorted(([n, p, median(v), len(v)] for (n, p), v in spans.items()), key=lambda x: -x[2])[:15]
    s["playbook_task_count"] = median([len(r["playbook"]["per_task"]) for r in ok])
    s["rerun_task_count"] = median([len(r["rerun"]["per_task"]) for r in ok])
    return s


def print_summary(s):
    print("\n== summary (%d ok rounds, %d failed)" % (s["ok_rounds"], s["failed_rounds"]))
    if not s["ok_rounds"]:
        return
    print("load average (1 min) during the timed runs: %.2f .. %.2f" % tuple(s["load_range"]))
    print("median wall: by-hand %.2fs  site.yml %.2fs  re-run %.2fs" % (s["byhand_median"], s["playbook_median"], s["rerun_median"]))
    print("ratio playbook/by-hand: %.2f (of medians), %.2f (median of same-round ratios)   goal <= 2"
          % (s["ratio_of_medians"], s["median_of_round_ratios"]))
    print("ratio re-run/by-hand:   %.2f (of medians), %.2f (median of same-round ratios)   goal <= 1.5"
          % (s["rerun_ratio_of_medians"], s["median_of_round_rerun_ratios"]))
    print("client CPU (user+sys of the whole process tree), median: by-hand %.2fs  site.yml %.2fs  re-run %.2fs;"
          " ratios %.2f / %.2f (median of same-round ratios)" % (s["byhand_cpu_median"], s["playbook_cpu_median"],
                                                               s["rerun_cpu_median"], s["median_of_round_cpu_ratios"],
                                                               s["median_of_round_rerun_cpu_ratios"]))
    print("re-run changed=%s identical=%s; outputs equal to by-hand: %s" % (s["rerun_changed"], s["rerun_identical"], s["outputs_equal"]))
    for mode in ("byhand", "playbook", "rerun"):
        print("steps (median s), %s: %s" % (mode, ", ".join("%s %.2f" % (k, v) for k, v in s["%s_steps_median" % mode].items() if v is not None)))
    for mode in ("byhand", "playbook"):
        print("wait delays (median s) %s: condition -> seen / -> moved on / from max(condition, wait start) -> moved on"
              " / poll latency (seen - max(condition, first look))" % mode)
        for key, v in s["%s_wait_delays_median" % mode].items():
            if v:
                print("  %-24s %6.3f / %6.3f / %6.3f / %6.3f   (held before the wait began in %d rounds)"
                      % (key, v["seen_after"], v["moved_on_after"], v["moved_on_after_wait_start"], v["poll_latency"],
                         v["held_before_wait"]))
            else:
                print("  %-24s n/a" % key)
    print("slowest playbook tasks (median span to the next task's start):")
    for name, path, span, count in s["playbook_slowest_tasks"][:15]:
        print("  %6.2fs  %s  (%s)" % (span, name, path))


if __name__ == "__main__":
    sys.exit(main())
