"""Machinery of the fault suite: real playbook runs, killed or starved on purpose, on clusters of their own.

Nothing here is mocked. A run is ``ansible-playbook`` of this checkout in a session of its own;
``kill_tree`` freezes and SIGKILLs that session *and* every process it spawned (Ansible's workers
call ``setsid``, so killing the first process group alone would let a worker finish its task).
A ``Watcher`` thread reads every output file again and again while a run goes and records any
read that is not absent or a complete, valid version of the file.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import yaml

from gpuop_testlib import ROOT, ansible_env

PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
KWOK_HOME = os.path.join(os.path.expanduser("~"), ".kwok", "clusters")
# A role task's banner names its role by FQCN (gpuop.gates.<role> : <task>); titles here keep "<role> : <task>".
BANNER_RE = re.compile(r"^TASK \[(?:gpuop\.gates\.)?(.*?)\] \*+\s*$")
STATUS_RE = re.compile(r"^(ok|changed|skipping|fatal|failed|included)\b")
RECAP_RE = re.compile(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")
TEMP_RE = re.compile(r"(^\..*\.tmp$)|(^\.ansible_tmp)")
# Waits of the project: the module that waits, and what to look for in the command line of the process
# that holds the wait. The wait modules run in-process on the controller (plugins/action): the wait is
# held by an Ansible worker, a fork of ansible-playbook below the run's first process (WORKER; the first
# process itself never talks to the cluster). kwok_cluster runs `kwokctl create cluster --wait` (the
# needle: its command line) before its nodes' wait.
WORKER = "ansible-playbook"
WAIT_MODULES = {"pod_wait": WORKER, "daemonset_rollout": WORKER, "kwok_nodes": WORKER, "kwok_cluster": "kwokctl create"}
# Cluster creation is not safe to run twice at the same moment (kwokctl picks free ports by probing).
CLUSTER_LOCK = threading.Lock()


def bin_dir():
    """The control-plane binaries the toolchain built (the newest cached pin that has kwokctl)."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "gpuop")
    found = [os.path.join(cache, d, "bin") for d in os.listdir(cache) if os.path.isfile(os.path.join(cache, d, "bin", "kwokctl"))]
    if not found:
        raise AssertionError("no control-plane build in %s: run `make toolchain` first" % cache)
    return max(found, key=lambda d: os.stat(os.path.join(d, "kwokctl")).st_mtime)


def site_vars(root, cluster, extra=None):
    args = ["-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % cluster]
    if extra:
        args += ["-e", json.dumps(extra)]
    return args


# ------------------------------------------------------------------------------------ processes

def _ppid_map():
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid):
    """``pid`` and every process below it (through /proc ppid links)."""
    children = _ppid_map()
    out, todo = [], [pid]
    while todo:
        one = todo.pop()
        out.append(one)
        todo.extend(children.get(one, []))
    return out


def holders(run_pid, needle):
    """Pids below the run whose command line holds ``needle``: a worker (not the run itself) for WORKER."""
    out = []
    for pid in descendants(run_pid):
        line = cmdline(pid)
        if needle not in line or "/bin/sh" in line or (needle == WORKER and pid == run_pid):
            continue
        out.append(pid)
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def kill_tree(pid):
    """SIGKILL the run's process group and everything it spawned, whatever session it moved to.

    Freeze first (SIGSTOP, top-down, until no new process appears) so that nothing forks or
    finishes between the listing and the kill, then SIGKILL all at once.
    """
    stopped = set()
    for _ in range(50):
        tree = [p for p in descendants(pid) if p not in stopped]
        if not tree:
            break
        for one in tree:
            try:
                os.kill(one, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            stopped.add(one)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for one in stopped:
        try:
            os.kill(one, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return sorted(stopped)


def established_to(pid, port):
    """Whether process ``pid`` holds an ESTABLISHED TCP connection to local port ``port``."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle)
                for line in handle:
                    cols = line.split()
                    if cols[3] == "01" and cols[9] in inodes and int(cols[2].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def apiserver_port(cluster):
    with open(os.path.join(KWOK_HOME, cluster, "kubeconfig.yaml")) as handle:
        server = yaml.safe_load(handle)["clusters"][0]["cluster"]["server"]
    return int(server.rsplit(":", 1)[1].split("/")[0])


class Run(object):
    """One ``ansible-playbook`` run in a new session; its output is read line by line as it comes."""

    def __init__(self, playbook, args, env=None):
        self.argv = [PLAYBOOK, playbook] + list(args)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv, cwd=ROOT, env=ansible_env(dict({"PYTHONUNBUFFERED": "1", "ANSIBLE_FORCE_COLOR": "0",
                                                       "ANSIBLE_NOCOLOR": "1"}, **(env or {}))),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
        self.lines = []
        self.banners = []  # [task title, status or None, monotonic time]
        self.changed = threading.Condition()
        self.killed = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            with self.changed:
                self.lines.append(line)
                banner = BANNER_RE.match(line)
                if banner:
                    self.banners.append([banner.group(1), None, time.monotonic()])
                else:
                    status = STATUS_RE.match(line)
                    if status and self.banners and self.banners[-1][1] is None:
                        self.banners[-1][1] = status.group(1)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def titles(self):
        with self.changed:
            return [b[0] for b in self.banners]

    def wait_banner(self, title, occurrence=1, timeout=900):
        """Block until the ``occurrence``-th banner ``TASK [title]`` is printed; False if the run ends first."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                if sum(1 for b in self.banners if b[0] == title) >= occurrence:
                    return True
                if self.proc.poll() is not None and not self.reader.is_alive():
                    return False
                if time.monotonic() > deadline:
                    raise AssertionError("timed out waiting for TASK [%s] in %s" % (title, " ".join(self.argv)))
                self.changed.wait(0.2)

    def kill(self):
        self.killed = kill_tree(self.proc.pid)
        self.proc.wait()
        self.reader.join(30)

    def wait(self, timeout=1800):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("%s did not end within %ss:\n%s" % (" ".join(self.argv), timeout, self.tail()))
        self.reader.join(30)
        self.elapsed = time.monotonic() - self.started
        return self.proc.returncode

    @property
    def stdout(self):
        return "\n".join(self.lines)

    def tail(self, n=60):
        return "\n".join(self.lines[-n:])

    def recap(self):
        found = RECAP_RE.search(self.stdout)
        return tuple(int(x) for x in found.groups()) if found else None


def run(playbook, args, env=None, timeout=1800):
    one = Run(playbook, args, env)
    one.wait(timeout)
    return one


# ------------------------------------------------------------------------------------ clusters and roots

def delete_cluster(cluster):
    """``kwokctl delete cluster`` (its processes and ~/.kwok/clusters/<name>), whatever state it is in."""
    if not os.path.isdir(os.path.join(KWOK_HOME, cluster)):
        return
    binaries = bin_dir()
    env = dict(os.environ, PATH=binaries + os.pathsep + os.environ.get("PATH", ""))
    subprocess.run([os.path.join(binaries, "kwokctl"), "delete", "cluster", "--name", cluster],
                   env=env, capture_output=True, text=True, check=False, timeout=300)
    if os.path.isdir(os.path.join(KWOK_HOME, cluster)):
        shutil.rmtree(os.path.join(KWOK_HOME, cluster), ignore_errors=True)


def kwokctl(*args, timeout=300):
    binaries = bin_dir()
    env = dict(os.environ, PATH=binaries + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(binaries, "kwokctl")] + list(args), env=env, capture_output=True,
                          text=True, check=False, timeout=timeout)


def component_pid(cluster, component):
    with open(os.path.join(KWOK_HOME, cluster, "pids", component + ".pid")) as handle:
        return int(handle.read().strip())


def stop_component(cluster, component):
    """Stop one control-plane component the way a crash does: SIGKILL its pid from kwokctl's pid file."""
    pid = component_pid(cluster, component)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError("%s of %s (pid %d) did not stop" % (component, cluster, pid))


# ------------------------------------------------------------------------------------ outputs

def normalise(data, root, cluster):
    """Only the run-specific parts: the root folder and the cluster name."""
    return data.replace(root.encode(), b"@ROOT@").replace(cluster.encode(), b"@CLUSTER@")


def outputs(root, cluster):
    """relative path -> (normalised bytes, mode) of every file under ``root``.

    ``var/`` is left out: it is the containerd sandboxes' private working state (daemon logs with
    timestamps, content store), not an output of the lab.
    """
    found = {}
    for folder, dirs, names in os.walk(root):
        if folder == root and "var" in dirs:
            dirs.remove("var")
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(cluster, "@CLUSTER@")
            with open(path, "rb") as handle:
                data = handle.read()
            if rel != "kubeconfig":
                data = normalise(data, root, cluster)
            found[rel] = (data, oct(os.stat(path).st_mode & 0o7777))
    return found


def stop_sandboxes(base):
    """SIGKILL every containerd sandbox daemon recorded under ``base`` (a run killed mid-walk leaves them)."""
    for record in glob.glob(os.path.join(base, "**", "var", "*", "daemon.json"), recursive=True):
        try:
            with open(record) as handle:
                pid = json.load(handle)["pid"]
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if b"containerd" not in handle.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError, TypeError):
            continue


def temporaries(root):
    """Temporary files left under ``root`` (ours ``.<name>.*.tmp``, Ansible's ``.ansible_tmp*``)."""
    left = []
    for folder, dirs, names in os.walk(root):
        left += [os.path.relpath(os.path.join(folder, n), root) for n in names + dirs if TEMP_RE.search(n)]
    return sorted(left)


class Watcher(threading.Thread):
    """Reads every output under ``root`` again and again while a run goes.

    Each read must be absent or a complete version: the normalised bytes the reference run ended
    with (every output is written once per run, so that is its only valid version), and for the
    kubeconfig a parseable kubeconfig naming the cluster's API server. Bad reads are recorded.
    """

    def __init__(self, root, cluster, reference):
        super().__init__(daemon=True)
        self.root, self.cluster, self.reference = root, cluster, reference
        self.stop_event = threading.Event()
        self.reads = 0
        self.bad = []

    def check(self, rel, data):
        if rel == "kubeconfig":
            try:
                doc = yaml.safe_load(data)
                server = doc["clusters"][0]["cluster"]["server"]
                assert server.startswith("https://127.0.0.1:"), server
                user = doc["users"][0]["user"]
                assert user.get("client-key-data") or user.get("client-key"), "no client key"
                assert user.get("client-certificate-data") or user.get("client-certificate"), "no client certificate"
                assert doc["current-context"], "no current-context"
            except Exception as exc:  # noqa: BLE001 - any way of being incomplete is a finding
                return "not a complete kubeconfig (%s: %s)" % (type(exc).__name__, exc)
            return None
        want = self.reference.get(rel)
        if want is None:
            return None  # not an output of the reference run (temporary files are checked at the end)
        got = normalise(data, self.root, self.cluster)
        if got != want[0]:
            return "read %d bytes that are not the complete output (%d bytes)" % (len(got), len(want[0]))
        return None

    def run(self):
        while not self.stop_event.is_set():
            for rel in list(self.reference) + ["kubeconfig"]:
                try:
                    with open(os.path.join(self.root, rel.replace("@CLUSTER@", self.cluster)), "rb") as handle:
                        data = handle.read()
                except (FileNotFoundError, NotADirectoryError):
                    continue
                self.reads += 1
                problem = self.check(rel, data)
                if problem and len(self.bad) < 20:
                    self.bad.append("%s: %s" % (rel, problem))
            self.stop_event.wait(0.005)

    def stop(self):
        self.stop_event.set()
        self.join(10)


def role_of(title):
    return title.split(" : ", 1)[0] if " : " in title else None


def wait_tasks():
    """(role, task name, needle) of every task that waits: the wait modules, and commands given --wait."""
    found = []

    def walk(role, tasks):
        for task in tasks or []:
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always"):
                walk(role, task.get(key))
            for module, needle in WAIT_MODULES.items():
                if module in task or "gpuop.gates." + module in task:
                    found.append((role, task["name"], needle))
            for key in ("ansible.builtin.command", "command"):
                args = task.get(key)
                if isinstance(args, dict) and "--wait" in json.dumps(args.get("argv", "")):
                    found.append((role, task["name"], "kwokctl"))
    roles_dir = os.path.join(ROOT, "roles")
    for role in sorted(os.listdir(roles_dir)):
        tasks_dir = os.path.join(roles_dir, role, "tasks")
        if not os.path.isdir(tasks_dir):
            continue
        for name in sorted(os.listdir(tasks_dir)):
            with open(os.path.join(tasks_dir, name)) as handle:
                walk(role, yaml.safe_load(handle))
    return found
