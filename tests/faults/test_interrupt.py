"""site.yml SIGKILLed at every step boundary and inside every wait, then run again: nothing is lost.

The kill points are found, not listed by hand: a step boundary is the first task of each role
after another role's (from the reference run's task banners, in order), and a wait is every task
of roles/*/tasks that calls pod_wait, daemonset_rollout or kwok_nodes, or runs a command with
``--wait`` (kwokctl create), and ran in the reference run. "Inside" a wait means its process is
running and talks to the cluster (an ESTABLISHED connection to the API server), or, for
kwokctl, the control plane it starts is up and kwokctl waits for it. The scheduler and the kwok
controller, which would meet most waits at the first look, are frozen (SIGSTOP) from the task
before the wait until the kill, then thawed: the run is killed while the wait polls.

Each point: a fresh root and cluster (fault-<n>); site.yml starts; at the point the run's whole
process tree is frozen and SIGKILLed; site.yml runs again to the end. Then every output must be
byte-identical to the reference run's (only the root path and the cluster name normalised; the
kubeconfig byte-identical to kwokctl's own for that cluster), with the same mode, no temporary file
may be left, and a watcher thread that read every output over and over during both runs must never
have read a partial or foreign version.
"""

import concurrent.futures
import difflib
import json
import os
import re
import shutil
import signal
import time

import faultlib

ATTEMPTS = 3  # a wait that ends between two looks of the killer is tried again on a new cluster


def kill_points(reference):
    banners = reference["banners"]
    points, counts, previous = [], {}, None
    for title, _status, _at in banners:
        counts[title] = counts.get(title, 0) + 1
        role = faultlib.role_of(title)
        if role is None or role == previous:
            continue
        if previous is not None:
            points.append({"id": "boundary %s -> %s" % (previous, role), "title": title,
                           "occurrence": counts[title], "needle": None})
        previous = role
    for role, name, needle in faultlib.wait_tasks():
        title = "%s : %s" % (role, name)
        ran = [i for i, b in enumerate(banners) if b[0] == title and b[1] not in (None, "skipping")]
        if not ran:
            continue
        point = {"id": "inside wait %s" % title, "title": title, "occurrence": 1, "needle": needle, "hold": None}
        if needle == faultlib.WORKER:
            # Most waits are met at their first look on an idle cluster. To kill *inside* one, the components
            # that would meet it (scheduler, kwok) are frozen (SIGSTOP) from the task before it that ran, so
            # the wait is polling when the run is killed; they are thawed (SIGCONT) right after the kill.
            before = [b[0] for b in banners[:ran[0]] if b[1] not in (None, "skipping")][-1]
            point["hold"] = (before, [b[0] for b in banners[:ran[0]]].count(before))
        points.append(point)
    return points


def _post_cluster_title(reference):
    """The first task after the cluster is made: from there on, runs may overlap safely."""
    seen_cluster = False
    for title, _status, _at in reference["banners"]:
        role = faultlib.role_of(title)
        if role == "kwok_cluster":
            seen_cluster = True
        elif seen_cluster and role is not None:
            return title
    raise AssertionError("no task after the kwok_cluster role in the reference run")


HELD = ("kube-scheduler", "kwok-controller")


def _hold(cluster, sig):
    for component in HELD:
        try:
            os.kill(faultlib.component_pid(cluster, component), sig)
        except (OSError, ValueError):
            pass


def _trigger(one, point, cluster):
    """Wait for the kill point; True when reached (the caller kills), False when the run got past it."""
    if point.get("hold"):
        if not one.wait_banner(*point["hold"]):
            return False
        _hold(cluster, signal.SIGSTOP)
        point = dict(point, held=True)
    if not one.wait_banner(point["title"], point["occurrence"]):
        return False
    if point["needle"] is None:
        return True
    seen = len([b for b in one.banners if b[0] == point["title"]])
    port = None
    pids_file = os.path.join(faultlib.KWOK_HOME, cluster, "pids", "kube-apiserver.pid")
    while True:
        with one.changed:
            moved_on = len(one.banners) > 0 and [b[0] for b in one.banners].count(point["title"]) == seen \
                and one.banners[-1][0] != point["title"]
        if moved_on or one.proc.poll() is not None:
            return False
        for pid in faultlib.holders(one.proc.pid, point["needle"]):
            if point["needle"].startswith("kwokctl"):
                if os.path.exists(pids_file):
                    return True
                continue
            if port is None:
                try:
                    port = faultlib.apiserver_port(cluster)
                except (OSError, KeyError, TypeError, ValueError):
                    continue
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid):
                if faultlib.established_to(pid, port):
                    if point.get("held"):
                        time.sleep(0.5)  # a few polls of 0.2 s: the wait is waiting
                    return True
                time.sleep(0.002)
        time.sleep(0.01)


def run_point(point, number, base, reference, post_cluster):
    cluster = "fault-%d" % number
    root = os.path.join(base, cluster + "-root")
    faultlib.delete_cluster(cluster)
    shutil.rmtree(root, ignore_errors=True)
    result = {"point": point["id"], "cluster": cluster, "problems": []}
    watcher = faultlib.Watcher(root, cluster, reference["outputs"])
    watcher.start()
    started = time.monotonic()
    try:
        reached = False
        for one_pass in ("killed", "re-run"):
            faultlib.CLUSTER_LOCK.acquire()
            locked = True
            try:
                one = faultlib.Run("site.yml", faultlib.site_vars(root, cluster))
                if one_pass == "killed":
                    if faultlib.role_of(point["title"]) != "kwok_cluster" and point["title"] != post_cluster \
                            and faultlib.role_of(point["title"]) != "toolchain":
                        one.wait_banner(post_cluster)
                        faultlib.CLUSTER_LOCK.release()
                        locked = False
                    try:
                        reached = _trigger(one, point, cluster)
                        if reached:
                            one.kill()
                    finally:
                        if point.get("hold"):
                            _hold(cluster, signal.SIGCONT)
                    if not reached:
                        one.kill()
                        result["missed"] = True
                        return result
                    result["killed_at"] = round(time.monotonic() - one.started, 1)
                    result["killed_pids"] = len(one.killed)
                    result["last_task"] = one.banners[-1][0] if one.banners else None
                else:
                    one.wait_banner(post_cluster)
                    faultlib.CLUSTER_LOCK.release()
                    locked = False
                    one.wait()
                    result["rerun_seconds"] = round(one.elapsed, 1)
                    if one.proc.returncode != 0:
                        result["problems"].append("re-run failed (rc %s):\n%s" % (one.proc.returncode, one.tail(40)))
            finally:
                if locked:
                    faultlib.CLUSTER_LOCK.release()
        watcher.stop()
        result["watcher_reads"] = watcher.reads
        result["problems"] += ["partial read: %s" % bad for bad in watcher.bad]
        got = faultlib.outputs(root, cluster)
        want = reference["outputs"]
        if sorted(got) != sorted(want):
            result["problems"].append("files differ: missing %s, extra %s"
                                      % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
        for rel in sorted(set(got) & set(want)):
            if rel == "kubeconfig":  # kwokctl's own, per cluster: byte-identical to it
                with open(os.path.join(faultlib.KWOK_HOME, cluster, "kubeconfig.yaml"), "rb") as handle:
                    if got[rel][0] != handle.read():
                        result["problems"].append("kubeconfig is not kwokctl's kubeconfig of %s" % cluster)
                if got[rel][1] != want[rel][1]:
                    result["problems"].append("kubeconfig mode %s, want %s" % (got[rel][1], want[rel][1]))
            elif got[rel] != want[rel]:
                result["problems"].append("%s differs from the reference run (mode %s vs %s):\n%s"
                                          % (rel, got[rel][1], want[rel][1], _diff(want[rel][0], got[rel][0])))
        left = faultlib.temporaries(root)
        if left:
            result["problems"].append("temporary files left: %s" % left)
    finally:
        watcher.stop()
        faultlib.delete_cluster(cluster)
        shutil.rmtree(root, ignore_errors=True)
        result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _diff(want, got, lines=20):
    """The first lines of a unified diff reference -> re-run (what a failure must show to be fixed)."""
    text = difflib.unified_diff(want.decode("utf-8", "replace").splitlines(), got.decode("utf-8", "replace").splitlines(),
                                "reference", "re-run", lineterm="", n=1)
    return "\n".join(list(text)[:lines])


def test_killed_anywhere_then_rerun_ends_as_uninterrupted(reference, fault_base, fault_jobs):
    points = kill_points(reference)
    kinds = [p["needle"] is None for p in points]
    # site.yml has 7 roles (6 boundaries) and at least the 5 waits of the foundation and steps 5-8.
    assert kinds.count(True) >= 6 and kinds.count(False) >= 5, json.dumps(points, indent=1)
    post_cluster = _post_cluster_title(reference)
    # To replay some points only: GPUOP_FAULT_POINTS=<regex on the point id> (the whole list is the default).
    only = os.environ.get("GPUOP_FAULT_POINTS")
    if only:
        points = [p for p in points if re.search(only, p["id"])]
        kinds = [p["needle"] is None for p in points]
        assert points, "GPUOP_FAULT_POINTS=%s matches no kill point" % only
    started = time.monotonic()
    results = [None] * len(points)
    numbers = iter(range(1, 1000))

    def attempt(index):
        for _ in range(ATTEMPTS):
            got = run_point(points[index], next(numbers), fault_base, reference, post_cluster)
            if not got.get("missed"):
                return got
        got["problems"].append("the kill point was never reached in %d attempts" % ATTEMPTS)
        return got

    with concurrent.futures.ThreadPoolExecutor(max_workers=fault_jobs) as pool:
        for index, got in zip(range(len(points)), pool.map(attempt, range(len(points)))):
            results[index] = got
    summary = {"points": len(points), "boundaries": kinds.count(True), "waits": kinds.count(False),
               "wall_seconds": round(time.monotonic() - started, 1),
               "reference_seconds": round(reference["elapsed"], 1), "results": results}
    with open(os.path.join(os.environ.get("GPUOP_FAULT_REPORT_DIR", fault_base), "interrupt-summary.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps(summary, indent=1))
    failed = [r for r in results if r["problems"]]
    assert not failed, "\n\n".join("%s (%s):\n%s" % (r["point"], r["cluster"], "\n".join(r["problems"])) for r in failed)
    assert all(r["watcher_reads"] > 0 for r in results)
