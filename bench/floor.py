#!/usr/bin/env python3
"""bench/floor.py: what Ansible itself costs on this machine, and the fastest site.yml its task count allows.

Times generated playbooks (nothing of the lab in them) with the project's ansible.cfg:
  start       one `debug` task (ansible-playbook start-up, inventory, one task, the end)
  controller  N `debug` tasks: the cost of a task that runs no module (assert, set_fact, include...)
  module      N `ansible.builtin.stat` tasks: a module run on localhost (AnsiballZ, a new Python)
  cluster     N `k8s_apply` tasks reading one Namespace (gpuop's cluster modules: + the kubernetes client)
each --rounds times (median), then prints the floor of a playbook made of the given numbers of
controller-only tasks, local module runs and cluster module runs (default: the no-op re-run of
site.yml, 105, 10 and 10, counted from its JSON callback output: docs/performance.md), against the
by-hand time given.

  .venv/bin/python bench/floor.py --kubeconfig /tmp/gpuop-test/kubeconfig [--by-hand 1.14] [--out F]
  ANSIBLE_STRATEGY=mitogen_linear .venv/bin/python bench/floor.py ...   # the same under mitogen
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import PROJECT, VENV_BIN, env, median, uptime_line  # noqa: E402


def playbook(tasks):
    return [{"name": "floor", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def variants(n, kubeconfig):
    debug = {"ansible.builtin.debug": {"msg": "x"}, "changed_when": False}
    out = {
        "start": playbook([dict(debug, name="t0")]),
        "controller": playbook([dict(debug, name="t%d" % i) for i in range(n)]),
        "module": playbook([{"name": "t%d" % i, "ansible.builtin.stat": {"path": PROJECT}} for i in range(n)]),
    }
    if kubeconfig:
        read = {"kubeconfig": kubeconfig, "read": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]}
        out["cluster"] = playbook([{"name": "t%d" % i, "gpuop.gates.k8s_apply": read} for i in range(n)])
    return out


def time_playbook(path):
    # No profile_tasks (ansible.cfg enables it): its own per-task work is not Ansible's floor. Never empty
    # (ansible-core 2.19 fails on ''): the junit callback writes nothing unless told where.
    e = env({"ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit", "JUNIT_OUTPUT_DIR": os.path.dirname(path)})
    t0 = time.monotonic()
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), path], cwd=PROJECT, env=e,
                          capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit("bench/floor: %s failed (rc %d): %s" % (os.path.basename(path), proc.returncode, proc.stdout[-1500:]))
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubeconfig", help="a cluster for the k8s_apply variant (skipped without it)")
    ap.add_argument("--tasks", type=int, default=20, help="tasks per timed playbook (default 20)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--controller-tasks", type=int, default=105, help="controller-only tasks of the playbook to bound")
    ap.add_argument("--module-runs", type=int, default=10, help="local module runs of the playbook to bound")
    ap.add_argument("--cluster-runs", type=int, default=10, help="cluster module runs of the playbook to bound")
    ap.add_argument("--by-hand", type=float, default=1.14, help="by-hand seconds to compare with (bench/run.py)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()

    results = {"strategy": os.environ.get("ANSIBLE_STRATEGY", "linear"), "uptime_before": uptime_line(),
               "tasks": args.tasks, "rounds": args.rounds, "walls": {}}
    with tempfile.TemporaryDirectory(prefix="gpuop-floor-") as tmp:
        books = {}
        for name, doc in variants(args.tasks, args.kubeconfig).items():
            books[name] = os.path.join(tmp, name + ".yml")
            with open(books[name], "w") as handle:
                json.dump(doc, handle)  # JSON is YAML
        for _ in range(args.rounds):  # variants interleaved: a load change hits all of them alike
            for name, path in books.items():
                results["walls"].setdefault(name, []).append(round(time_playbook(path), 3))
    results["uptime_after"] = uptime_line()

    med = {name: median(walls) for name, walls in results["walls"].items()}
    per = {name: (med[name] - med["start"]) / (args.tasks - 1) for name in med if name != "start"}
    start = med["start"] - per["controller"]  # one debug task is in the start playbook
    results["median"] = med
    results["per_task"] = {name: round(value, 4) for name, value in per.items()}
    results["start"] = round(start, 3)
    runs = args.module_runs + args.cluster_runs
    floor = (start + args.controller_tasks * per["controller"] + args.module_runs * per["module"]
             + args.cluster_runs * per.get("cluster", per["module"]))
    zero = start + (args.controller_tasks + runs) * per["controller"]
    results["floor"] = {"controller_tasks": args.controller_tasks, "module_runs": args.module_runs,
                        "cluster_runs": args.cluster_runs,
                        "seconds": round(floor, 2), "ratio": round(floor / args.by_hand, 1),
                        "modules_free_seconds": round(zero, 2), "modules_free_ratio": round(zero / args.by_hand, 1),
                        "by_hand": args.by_hand}

    print("strategy %s, %d tasks per playbook, median of %d; %s" % (results["strategy"], args.tasks, args.rounds,
                                                                    results["uptime_after"]))
    print("  ansible-playbook start (no task)        %.3f s" % start)
    for name, label in (("controller", "controller-only task (debug)"), ("module", "module run (stat)"),
                        ("cluster", "cluster module run (k8s_apply read)")):
        if name in per:
            print("  %-39s %.3f s each" % (label, per[name]))
    print("floor of %d controller-only tasks + %d local and %d cluster module runs: %.2f s = %.1fx by hand (%.2f s);"
          " with every module run as cheap as a controller-only task: %.2f s = %.1fx"
          % (args.controller_tasks, args.module_runs, args.cluster_runs, floor, floor / args.by_hand, args.by_hand,
             zero, zero / args.by_hand))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=1)
            handle.write("\n")


if __name__ == "__main__":
    main()
