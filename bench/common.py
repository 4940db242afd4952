"""Shared helpers of bench/run.py and bench/scale.py: paths, the toolchain, cluster create/delete."""

import glob
import json
import os
import subprocess
import sys
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(PROJECT, ".venv", "bin")
# The checkout is the collection gpuop.gates: .collections/ansible_collections/gpuop/gates links back to it
# (make setup), so the project's code imports as Ansible loads it (ansible_collections.gpuop.gates.plugins...).
COLLECTIONS = os.path.join(PROJECT, ".collections")
if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "gpuop", "gates")):
    sys.exit("bench: %s/ansible_collections/gpuop/gates is missing: run make setup first" % COLLECTIONS)
sys.path.insert(0, COLLECTIONS)


def find_bin_dir(explicit=None):
    if explicit:
        if not os.path.isfile(os.path.join(explicit, "kubectl")):
            sys.exit("bench: no kubectl in --bin-dir %s" % explicit)
        return explicit
    dirs = [d for d in glob.glob(os.path.expanduser("~/.cache/gpuop/*/bin")) if os.path.isfile(os.path.join(d, "kubectl"))]
    if not dirs:
        sys.exit("bench: no ~/.cache/gpuop/<pin>/bin with kubectl: build the toolchain (playbooks/cluster.yml) or give --bin-dir")
    return max(dirs, key=os.path.getmtime)


def env(extra=None):
    e = dict(os.environ)
    e["PATH"] = VENV_BIN + os.pathsep + e.get("PATH", "")
    e.setdefault("ANSIBLE_CONFIG", os.path.join(PROJECT, "ansible.cfg"))
    e["ANSIBLE_NOCOLOR"] = "1"
    e.update(extra or {})
    return e


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def uptime_line():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: %s" % loadavg()


class Clusters(object):
    """Creates kwok clusters with playbooks/cluster.yml and deletes every one of them (reset.yml), also on failure."""

    def __init__(self, bin_dir, log_dir):
        self.bin_dir = bin_dir
        self.log_dir = log_dir
        self.live = {}

    def create(self, name, root, extra_vars=None, attempts=2):
        """playbooks/cluster.yml; on a loaded machine kwok can take over 60 s to make nodes Ready, so the
        wait is 300 s and a failed creation is reset and tried once more (setup, never timed)."""
        os.makedirs(root, exist_ok=True)
        self.live[name] = root
        extra = {"kwok_cluster_wait_timeout": 300}
        extra.update(extra_vars or {})
        args = [os.path.join(VENV_BIN, "ansible-playbook"), "playbooks/cluster.yml",
                "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % name, "-e", json.dumps(extra)]
        t0 = time.monotonic()
        for attempt in range(1, attempts + 1):
            log = os.path.join(self.log_dir, "cluster-%s-%d.log" % (name, attempt))
            with open(log, "w") as f:
                rc = subprocess.run(args, cwd=PROJECT, env=env(), stdout=f, stderr=subprocess.STDOUT).returncode
            if rc == 0:
                return round(time.monotonic() - t0, 2)
            if attempt < attempts:
                self.delete(name)
                os.makedirs(root, exist_ok=True)
                self.live[name] = root
        raise RuntimeError("creating cluster %s failed (rc %s); see %s" % (name, rc, log))

    def delete(self, name):
        root = self.live.pop(name, None)
        if root is None:
            return
        log = os.path.join(self.log_dir, "reset-%s.log" % name)
        with open(log, "w") as f:
            subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "playbooks/reset.yml",
                            "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % name],
                           cwd=PROJECT, env=env(), stdout=f, stderr=subprocess.STDOUT)
        # Belt and braces: the cluster must be gone even when reset.yml failed.
        listed = subprocess.run([os.path.join(self.bin_dir, "kwokctl"), "get", "clusters"], capture_output=True,
                                text=True, env=env({"PATH": self.bin_dir + os.pathsep + os.environ.get("PATH", "")}))
        if name in listed.stdout.split():
            subprocess.run([os.path.join(self.bin_dir, "kwokctl"), "delete", "cluster", "--name", name],
                           capture_output=True, env=env({"PATH": self.bin_dir + os.pathsep + os.environ.get("PATH", "")}))
        subprocess.run(["rm", "-rf", root])

    def delete_all(self):
        for name in list(self.live):
            try:
                self.delete(name)
            except Exception as exc:  # keep deleting the others
                print("bench: deleting %s failed: %s" % (name, exc), file=sys.stderr)


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0
