"""Guards, proven on live clusters: refusal and override, nothing written elsewhere, no redirect, a reset that deletes only ours.

* Node status writes (node_extended_resource, the node_advertisement and gpu_time_slicing roles,
  kwok_nodes) refuse a node kwok does not manage; the ``allow_unmanaged_nodes`` override writes it.
  A node that does not exist is named, and nothing is written to the others.
* site.yml on a fresh root and cluster (guard-fs), traced with strace: no file is written, made,
  renamed or removed under $HOME (but ~/.kwok/clusters/guard-fs, kwok_cluster's empty lock file
  ~/.kwok/gpuop-create.lock, ~/.cache/gpuop, ~/.ansible),
  /tmp (but its root) or /etc/containerd. A snapshot of those areas before and after is taken too;
  other sessions share this machine, so a change found there counts only when the trace shows
  site.yml's own processes made it.
* The same run has KUBECONFIG pointing at a user kubeconfig whose current context is a server
  of this test (a listening socket): nothing ever connects to it, the file is untouched, and the
  lab's kubeconfig is mode 0600.
* reset.yml then deletes the cluster and gpuop's files, and keeps a user's file under gpuop_root,
  a user's drop-in beside gpuop's, and a kwok cluster gpuop did not create.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
import yaml
from kubernetes import client

from ansible_collections.gpuop.gates.plugins.module_utils.kwok_cluster import LOCK_NAME, creation_lock
from gpuop_testlib import ROOT, ansible_env, run_module

HOME = os.path.expanduser("~")
KWOK_HOME = os.path.join(HOME, ".kwok", "clusters")
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
PATH_CALLS = re.compile(r'^(\d+) +(openat|open|creat|mkdir|mkdirat|rename|renameat|renameat2|unlink|unlinkat|rmdir|'
                        r'link|linkat|symlink|symlinkat|chmod|fchmodat|truncate|utimensat)\((.*)\) += (-?\d+)')
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


# ----------------------------------------------------------------------------- node status guards


@pytest.fixture
def foreign_node(k8s):
    """A Node object without kwok's annotation: what a real kubelet's node looks like to gpuop."""
    core, _, _ = k8s
    name = "guard-real-%s" % uuid.uuid4().hex[:6]
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels={"guard": "real"})))
    yield name
    core.delete_node(name)


def _allocatable(core, name, resource):
    return (core.read_node(name).status.allocatable or {}).get(resource)


def test_status_write_refuses_a_node_kwok_does_not_manage_and_writes_nothing(k8s, lab_kubeconfig, foreign_node):
    core, _, _ = k8s
    before = _allocatable(core, "lab-node-2", "example.com/guard")
    result = run_module("node_extended_resource", {"kubeconfig": lab_kubeconfig, "nodes": ["lab-node-2", foreign_node],
                                                   "resource": "example.com/guard", "quantity": 3})
    assert result["failed"] is True
    assert re.match(r"^refusing to write status\.capacity/allocatable of node\(s\) %s on the cluster at "
                    r"https://127\.0\.0\.1:\d+: kwok does not manage them \(no annotation kwok\.x-k8s\.io/node: fake\)\. "
                    r".*set allow_unmanaged_nodes: true to write it anyway \(through the roles: "
                    r"node_advertisement_allow_unmanaged_nodes or gpu_time_slicing_allow_unmanaged_nodes\)$" % foreign_node, result["msg"]), result["msg"]
    assert _allocatable(core, foreign_node, "example.com/guard") is None
    assert _allocatable(core, "lab-node-2", "example.com/guard") == before  # the kwok node was not written either


def test_status_write_override_writes_a_node_kwok_does_not_manage(k8s, lab_kubeconfig, foreign_node):
    core, _, _ = k8s
    result = run_module("node_extended_resource", {"kubeconfig": lab_kubeconfig, "nodes": [foreign_node],
                                                   "resource": "example.com/guard", "quantity": 3,
                                                   "allow_unmanaged_nodes": True})
    assert result.get("failed") is not True, result
    assert result["changed"] is True and result["nodes"][0]["managed_by_kwok"] is False
    assert _allocatable(core, foreign_node, "example.com/guard") == "3"


def test_status_write_names_a_node_that_does_not_exist(k8s, lab_kubeconfig):
    core, _, _ = k8s
    result = run_module("node_extended_resource", {"kubeconfig": lab_kubeconfig, "nodes": ["lab-node-1", "lab-node-9"],
                                                   "resource": "example.com/guard", "quantity": 2})
    assert result["failed"] is True
    assert re.match(r"^node\(s\) not found on the cluster at https://127\.0\.0\.1:\d+: lab-node-9$", result["msg"]), result["msg"]
    assert _allocatable(core, "lab-node-1", "example.com/guard") is None


def test_kwok_nodes_never_takes_over_a_real_node(lab_kubeconfig, foreign_node):
    result = run_module("kwok_nodes", {"kubeconfig": lab_kubeconfig, "names": [foreign_node],
                                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "wait_timeout": 10})
    assert result["failed"] is True
    assert result["msg"] == ("node %s exists but kwok does not manage it (no kwok.x-k8s.io/node: fake annotation); "
                             "gpuop will not take over a real node" % foreign_node)


def _role_play(tmp_path, role, variables):
    playbook = tmp_path / ("%s.yml" % role)
    playbook.write_text(yaml.safe_dump([{"name": "guard", "hosts": "localhost", "gather_facts": False,
                                         "roles": [{"role": "gpuop.gates." + role, "vars": variables}]}]))
    return subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), str(playbook)], cwd=ROOT,
                          env=ansible_env(), capture_output=True, text=True, check=False)


@pytest.mark.parametrize("role,nodes_var,allow_var,extra", [
    ("node_advertisement", "node_advertisement_nodes", "node_advertisement_allow_unmanaged_nodes",
     {"node_advertisement_resource": "example.com/guard-adv", "node_advertisement_quantity": 2}),
    ("gpu_time_slicing", "gpu_time_slicing_nodes", "gpu_time_slicing_allow_unmanaged_nodes",
     {"gpu_time_slicing_namespace": "guard-slicing", "gpu_time_slicing_configmap": "guard-slicing",
      "gpu_time_slicing_resource": "nvidia.com/gpu"}),
])
def test_roles_refuse_then_allow_a_node_kwok_does_not_manage(k8s, lab_kubeconfig, foreign_node, tmp_path, role, nodes_var,
                                                            allow_var, extra):
    core, _, _ = k8s
    # The lab's group_vars fill in the story's waits and outputs: this play asks for none of them, and
    # points gpuop_root at its own folder so that nothing could land in ~/gpuop.
    variables = {"gpuop_root": str(tmp_path), "node_advertisement_wait_pod": {}, "node_advertisement_table_dest": "",
                 "gpu_time_slicing_dest": "", "gpu_time_slicing_manifest": str(tmp_path / "k8s" / "time-slicing.yaml")}
    variables.update(extra)
    variables.update({nodes_var: [foreign_node], role + "_kubeconfig": lab_kubeconfig})
    refused = _role_play(tmp_path, role, variables)
    assert refused.returncode != 0
    assert "refusing to write status.capacity/allocatable of node(s) %s" % foreign_node in refused.stdout, refused.stdout[-3000:]
    assert "set allow_unmanaged_nodes: true to write it anyway" in refused.stdout
    assert role + "_allow_unmanaged_nodes" in refused.stdout  # the role's own variable is named
    assert "Traceback" not in refused.stdout + refused.stderr
    node = core.read_node(foreign_node)
    assert not [k for k in (node.status.allocatable or {}) if k.startswith(("example.com/", "nvidia.com/"))]
    variables[allow_var] = True
    allowed = _role_play(tmp_path, role, variables)
    assert allowed.returncode == 0, allowed.stdout[-3000:]
    want = ("example.com/guard-adv", "2") if role == "node_advertisement" else ("nvidia.com/gpu", "20")
    assert _allocatable(core, foreign_node, want[0]) == want[1]
    if role == "gpu_time_slicing":
        core.delete_namespace("guard-slicing")


# ----------------------------------------------------------------------------- filesystem, kubeconfig, reset


class Listener(threading.Thread):
    """A TCP server on 127.0.0.1 that counts every connection made to it (the 'elsewhere' of a context switch)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            self.connections += 1
            conn.close()
        self.sock.close()


def _snapshot(areas, skip):
    found = {}
    for area in areas:
        for folder, dirs, names in os.walk(area):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
            for name in names + dirs:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                found[path] = (st.st_mtime_ns, st.st_size, st.st_mode, st.st_ino)
    return found


def _traced_writes(trace_file):
    """Paths the traced processes wrote, made, renamed, removed or re-moded (absolute, as strace printed them)."""
    paths = set()
    with open(trace_file, errors="replace") as handle:
        for line in handle:
            match = PATH_CALLS.match(line)
            if not match or match.group(4).startswith("-"):
                continue
            call, args = match.group(2), match.group(3)
            if call in ("openat", "open") and (not any(flag in args for flag in WRITE_FLAGS) or "O_TMPFILE" in args):
                continue  # a read, or an anonymous file (O_TMPFILE) that never has a name
            for quoted in QUOTED.findall(args):
                path = quoted.encode().decode("unicode_escape")
                paths.add(path if os.path.isabs(path) else os.path.join(ROOT, path))
    return paths


def _allowed(path, root, cluster):
    allowed = [root, os.path.join(KWOK_HOME, cluster), os.path.join(os.path.dirname(KWOK_HOME), LOCK_NAME),
               os.path.join(HOME, ".cache", "gpuop"), os.path.join(HOME, ".ansible")]
    if any(path == a or path.startswith(a + os.sep) for a in allowed):
        return True
    watched = [HOME, "/tmp", "/etc/containerd"]
    return not any(path == w or path.startswith(w + os.sep) for w in watched)


@pytest.fixture(scope="module")
def guard_run():
    """site.yml under strace on a fresh root and its own cluster (guard-fs), with a hostile KUBECONFIG."""
    base = tempfile.mkdtemp(prefix="gpuop-guard-")
    root, cluster = os.path.join(base, "root"), "guard-fs"
    user = tempfile.mkdtemp(prefix="gpuop-guard-user-")
    listener = Listener()
    listener.start()
    user_kubeconfig = os.path.join(user, "config")
    with open(user_kubeconfig, "w") as handle:
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
                        "clusters": [{"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:%d" % listener.port,
                                                                       "insecure-skip-tls-verify": True}}],
                        "users": [{"name": "elsewhere", "user": {"token": "user-token"}}],
                        "contexts": [{"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "elsewhere",
                                                                       "namespace": "gpu-lab"}}]}, handle)
    user_before = (open(user_kubeconfig, "rb").read(), os.stat(user_kubeconfig).st_mtime_ns)
    kwokctl = os.path.join(_bin_dir(), "kwokctl")
    subprocess.run([kwokctl, "delete", "cluster", "--name", cluster], capture_output=True, check=False)
    areas = [HOME, "/tmp", "/etc/containerd"]
    skip = {os.path.join(HOME, ".cache", "gpuop"), os.path.join(HOME, ".ansible"), base, os.path.join(HOME, "go"),
            os.path.join(KWOK_HOME, cluster)}
    before = _snapshot(areas, skip)
    trace = os.path.join(base, "trace")
    env = ansible_env({"KUBECONFIG": user_kubeconfig})
    strace = subprocess.Popen(
        ["strace", "-f", "-qq", "--seccomp-bpf", "-o", trace, "-e",
         "trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,"
         "symlinkat,chmod,fchmodat,truncate,utimensat",
         os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "site.yml", "-e", "gpuop_root=%s" % root,
         "-e", "gpuop_cluster_name=%s" % cluster],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # strace follows the control plane kwokctl starts too: stop tracing when ansible-playbook itself has ended.
    out = []
    reader = threading.Thread(target=lambda: out.extend(strace.stdout), daemon=True)
    reader.start()
    playbook_pid = None
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        children = [int(p) for p in open("/proc/%d/task/%d/children" % (strace.pid, strace.pid)).read().split()] \
            if os.path.exists("/proc/%d" % strace.pid) else []
        if playbook_pid is None and children:
            playbook_pid = children[0]
        if playbook_pid is not None and not os.path.exists("/proc/%d" % playbook_pid):
            break
        if strace.poll() is not None:
            break
        time.sleep(0.2)
    # strace stays: killing it would leave the cluster it traces with its seccomp filter and no tracer. It
    # ends by itself when the cluster is deleted (reset.yml below, or this fixture's teardown).
    after = _snapshot(areas, skip)
    listener.done.set()
    listener.join(5)
    yield {"root": root, "cluster": cluster, "stdout": "".join(out), "trace": trace, "before": before, "after": after,
           "listener": listener, "user_kubeconfig": user_kubeconfig, "user_before": user_before,
           "base": base}
    subprocess.run([kwokctl, "delete", "cluster", "--name", cluster], capture_output=True, check=False)
    try:
        strace.wait(120)
    except subprocess.TimeoutExpired:
        strace.kill()
        strace.wait(30)
    reader.join(10)
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(user, ignore_errors=True)


def _bin_dir():
    cache = os.path.join(HOME, ".cache", "gpuop")
    found = [os.path.join(cache, d, "bin") for d in os.listdir(cache) if os.path.isfile(os.path.join(cache, d, "bin", "kwokctl"))]
    return max(found, key=lambda d: os.stat(os.path.join(d, "kwokctl")).st_mtime)


def test_site_writes_nothing_outside_its_root(guard_run):
    assert re.search(r"localhost\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0", guard_run["stdout"]), guard_run["stdout"][-3000:]
    written = _traced_writes(guard_run["trace"])
    assert any(p.startswith(guard_run["root"] + "/out/") for p in written), "the trace saw none of the outputs"
    outside = [p for p in written if not _allowed(p, guard_run["root"], guard_run["cluster"])]
    # Python's and Ansible's own temporary files (module payloads, anonymous temp files) come and go during the
    # run; what matters is what stays or was there before: a file left behind, or a file of the user's touched.
    before, after = guard_run["before"], guard_run["after"]
    lasting = sorted(p for p in outside if os.path.lexists(p) or p in before)
    assert lasting == [], "site.yml left or touched files outside gpuop_root: %s" % json.dumps(lasting, indent=1)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    ours = sorted(p for p in changed if p in written)
    assert ours == [], "changed by site.yml outside gpuop_root: %s" % ours


def test_a_context_switch_in_the_users_kubeconfig_never_redirects_the_lab(guard_run):
    assert guard_run["listener"].connections == 0, "the lab connected to the user's current context"
    path = guard_run["user_kubeconfig"]
    assert (open(path, "rb").read(), os.stat(path).st_mtime_ns) == guard_run["user_before"]
    lab = os.path.join(guard_run["root"], "kubeconfig")
    assert oct(os.stat(lab).st_mode & 0o777) == "0o600"
    with open(lab) as handle:
        server = yaml.safe_load(handle)["clusters"][0]["cluster"]["server"]
    assert server != "https://127.0.0.1:%d" % guard_run["listener"].port


def test_reset_deletes_only_what_gpuop_created(guard_run):
    root, cluster = guard_run["root"], guard_run["cluster"]
    kwokctl = os.path.join(_bin_dir(), "kwokctl")
    mine = os.path.join(root, "notes.txt")
    mine_dropin = os.path.join(root, "etc", "containerd", "conf.d", "50-mine.toml")
    for path, text in ((mine, "my notes\n"), (mine_dropin, "# my drop-in\n")):
        with open(path, "w") as handle:
            handle.write(text)
    foreign = "guard-foreign"
    env = dict(os.environ, PATH=_bin_dir() + os.pathsep + os.environ["PATH"])
    subprocess.run([kwokctl, "delete", "cluster", "--name", foreign], env=env, capture_output=True, check=False)
    # Under gpuop's machine-wide creation lock, as kwok_cluster creates: a molecule scenario may create beside it.
    with creation_lock(os.path.dirname(KWOK_HOME), 300):
        made = subprocess.run([kwokctl, "create", "cluster", "--name", foreign, "--runtime", "binary", "--kubeconfig", "",
                               "--wait", "120s"] + ["--%s-binary=%s/%s" % (flag, _bin_dir(), binary) for flag, binary in (
                                   ("etcd", "etcd"), ("kube-apiserver", "kube-apiserver"),
                                   ("kube-controller-manager", "kube-controller-manager"), ("kube-scheduler", "kube-scheduler"),
                                   ("kwok-controller", "kwok"))], env=env, capture_output=True, text=True, check=False)
    try:
        assert made.returncode == 0, made.stderr[-2000:]
        reset = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "playbooks/reset.yml",
                                "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % cluster], cwd=ROOT,
                               env=ansible_env(), capture_output=True, text=True, check=False)
        assert reset.returncode == 0, reset.stdout[-3000:]
        assert not os.path.isdir(os.path.join(KWOK_HOME, cluster)), "gpuop's cluster was not deleted"
        for gone in ("kubeconfig", "out", "k8s", "bin/check-runtime.sh", "etc/containerd/config.toml",
                     "etc/containerd/conf.d/99-nvidia.toml", ".gpuop-cluster-%s" % cluster):
            assert not os.path.lexists(os.path.join(root, gone)), gone
        assert open(mine).read() == "my notes\n"
        assert open(mine_dropin).read() == "# my drop-in\n"
        listed = subprocess.run([kwokctl, "get", "clusters"], env=env, capture_output=True, text=True, check=False)
        assert foreign in listed.stdout.split()
        # Asked to reset a cluster of that very name, reset.yml still leaves it: gpuop's marker is not there.
        again = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "playbooks/reset.yml",
                                "-e", "gpuop_root=%s" % root, "-e", "gpuop_cluster_name=%s" % foreign], cwd=ROOT,
                               env=ansible_env(), capture_output=True, text=True, check=False)
        assert again.returncode == 0, again.stdout[-3000:]
        listed = subprocess.run([kwokctl, "get", "clusters"], env=env, capture_output=True, text=True, check=False)
        assert foreign in listed.stdout.split(), "reset.yml deleted a cluster gpuop did not create"
    finally:
        subprocess.run([kwokctl, "delete", "cluster", "--name", foreign], env=env, capture_output=True, check=False)
