"""playbooks/nodes.yml under faults, on node twins of each test's own: the re-run converges, no node keeps a half-written file.

Three twins (Debian's containerd 1.6.20 twice, the built 2.4.2 once), reached over real SSH, restarted one
at a time (serial 1, max_fail_percentage 0). Each test breaks one thing while the second twin is in its
batch, then runs nodes.yml again as a user would:

* SSH to that twin drops while its containerd restarts (the twin's sshd session processes are SIGKILLed);
* that twin's containerd does not come back after its restart (its restart command stops it and exits 0:
  the role's wait on the socket must fail the node, and the later batch must not run);
* the whole run is SIGKILLed while that twin's containerd restarts.

After the re-run every twin's daemon answers (crictl info) with nvidia and runc, every main file is its
original plus one import line, every drop-in reads as TOML, no temporary file is left in /etc/containerd,
and a third run changes nothing.
"""

import json
import os
import signal
import socket
import subprocess
import time
import tomllib

import pytest
import yaml

import faultlib
from gpuop_testlib import ROOT, ansible_env

PYENV = "/root/.pyenv/versions"
TWINS = [("fault-node-a", "system", "3.10.13"), ("fault-node-b", "system", "3.8.18"),
         ("fault-node-c", "built", "3.13.0")]
VICTIM = "fault-node-b"
RESTART = "nvidia_runtime : Restart containerd with the node's restart command"
IMPORT = 'imports = ["/etc/containerd/conf.d/99-nvidia.toml"]'


def _free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def _playbook(name, extra):
    proc = subprocess.run([faultlib.PLAYBOOK, os.path.join(ROOT, "playbooks", name), "-e", json.dumps(extra)],
                          cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.fixture
def twins(tmp_path):
    folder = str(tmp_path / "twins")
    extra = {"node_twins_dir": folder, "node_twins_inventory": os.path.join(folder, "inventory.yml"),
             "node_twins_list": [{"name": name, "port": port, "containerd": containerd,
                                  "python": os.path.join(PYENV, python, "bin", "python3")}
                                 for (name, containerd, python), port in zip(TWINS, _free_ports(len(TWINS)))]}
    try:
        # Inside the try: twins.yml that fails half-way has started some twins, and twins-down.yml stops them.
        _playbook("twins.yml", extra)
        with open(extra["node_twins_inventory"]) as handle:
            hosts = yaml.safe_load(handle)["all"]["children"]["gpu_nodes"]["hosts"]
        state = {"extra": extra, "folder": folder, "inventory": extra["node_twins_inventory"], "hosts": hosts}
        state["original"] = {name: _on(state, name, "cat /etc/containerd/config.toml") for name in hosts}
        yield state
    finally:
        _playbook("twins-down.yml", extra)


def _on(twins, name, command):
    """Run ``command`` on a twin over SSH (its own key and port); its stdout."""
    host = twins["hosts"][name]
    proc = subprocess.run(["ssh", "-i", host["ansible_ssh_private_key_file"], "-p", str(host["ansible_port"]),
                           "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                           "-o", "BatchMode=yes", "root@127.0.0.1", command],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "%s on %s: %s" % (command, name, proc.stderr)
    return proc.stdout


def _record(twins, name):
    with open(os.path.join(twins["folder"], name, "twin.json")) as handle:
        return json.load(handle)


def _in_twin(twins, name, needle):
    """Pids of processes in the twin's mount namespace whose command line holds ``needle``."""
    mnt = _record(twins, name)["mnt_ns"]
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/ns/mnt" % entry) == mnt and needle in faultlib.cmdline(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _wait_for(predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("timed out waiting for %s" % what)


def _nodes(twins, env=None):
    return faultlib.Run(os.path.join(ROOT, "playbooks", "nodes.yml"), ["-i", twins["inventory"]], env)


def _at_victims_restart(twins, run):
    """Block until the victim's restart command runs inside it (its batch is the second)."""
    assert run.wait_banner(RESTART, occurrence=2), run.tail()
    return _wait_for(lambda: _in_twin(twins, VICTIM, "containerd-service restart"), "the restart on %s" % VICTIM)


def _assert_converged(twins):
    for name in twins["hosts"]:
        host = twins["hosts"][name]
        info = json.loads(_on(twins, name, "%s --runtime-endpoint unix:///run/containerd/containerd.sock info"
                              % host["nvidia_runtime_crictl"]))
        assert sorted(info["config"]["containerd"]["runtimes"]) == ["nvidia", "runc"], (name, info["config"])
        main = _on(twins, name, "cat /etc/containerd/config.toml")
        assert main == twins["original"][name].replace("version = 2\n", "version = 2\n%s\n" % IMPORT, 1), (name, main)
        left = _on(twins, name, "find /etc/containerd -name '.*.tmp' -o -name '*.tmp'").split()
        assert left == [], (name, left)
        dropin = tomllib.loads(_on(twins, name, "cat /etc/containerd/conf.d/99-nvidia.toml"))
        runtimes = dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
        assert "nvidia" in runtimes, (name, dropin)
    again = _nodes(twins)
    assert again.wait() == 0, again.tail(80)
    assert "changed=0" in again.stdout and not any("changed=%d" % n in again.stdout for n in range(1, 10)), again.tail(40)


def _rerun(twins):
    one = _nodes(twins)
    assert one.wait() == 0, one.tail(80)
    _assert_converged(twins)


def test_ssh_to_one_twin_drops_mid_run_then_the_rerun_converges(twins):
    run = _nodes(twins)
    _at_victims_restart(twins, run)
    listener = _record(twins, VICTIM)["pid"]
    sessions = [pid for pid in faultlib.descendants(listener) if pid != listener and "sshd" in faultlib.cmdline(pid)]
    assert sessions, "no SSH session to %s while its restart ran" % VICTIM
    for pid in sessions:
        os.kill(pid, signal.SIGKILL)
    assert run.wait() != 0, run.tail(80)
    assert "UNREACHABLE" in run.stdout or "unreachable=1" in run.stdout, run.tail(80)
    # max_fail_percentage 0: the third twin's batch never ran.
    assert _on(twins, "fault-node-c", "cat /etc/containerd/config.toml") == twins["original"]["fault-node-c"]
    _rerun(twins)


def test_a_twin_whose_containerd_does_not_come_back_fails_and_stops_the_rollout(twins):
    # Its restart command stops containerd and exits 0: only the wait on the socket can tell.
    host_vars = os.path.join(os.path.dirname(twins["inventory"]), "host_vars")
    os.makedirs(host_vars)
    with open(os.path.join(host_vars, VICTIM + ".yml"), "w") as handle:
        yaml.safe_dump({"nvidia_runtime_restart_command": ["/etc/gpuop-twin/containerd-service", "stop"],
                        "nvidia_runtime_wait_timeout": 5}, handle)
    run = _nodes(twins)
    assert run.wait() == 2, run.tail(80)
    assert "did not report its CRI plugin within 5" in run.stdout, run.tail(80)
    assert _on(twins, "fault-node-c", "cat /etc/containerd/config.toml") == twins["original"]["fault-node-c"]
    report = os.path.join(twins["folder"], "report", "nodes", "fault-node-c.json")
    assert not os.path.exists(report)
    os.unlink(os.path.join(host_vars, VICTIM + ".yml"))
    _rerun(twins)


def test_the_run_killed_mid_batch_then_the_rerun_converges(twins):
    run = _nodes(twins)
    _at_victims_restart(twins, run)
    run.kill()
    assert run.killed, "nothing was killed"
    _rerun(twins)
