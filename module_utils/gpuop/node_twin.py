# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A node twin: a stand-in GPU node on this machine, reached over real SSH (module node_twin).

A twin has its own mount and UTS namespaces (``unshare --mount --uts --propagation private``). In them
``/etc``, ``/opt``, ``/run`` and ``/var/lib`` are covered by overlays whose upper layers live on the
twin's tmpfs, so ``/etc/containerd``, ``/run/containerd`` and ``/var/lib/containerd`` are the standard
paths and private to the twin. The host's files are never written. The twin has its own hostname and an
sshd on 127.0.0.1:<port> with key authentication only; Ansible reaches it with ``ansible_connection:
ssh``, as it reaches a real node.

The twin's containerd is started by a small service shim, ``/etc/gpuop-twin/containerd-service``
(start, stop, restart, status; pid file ``/run/gpuop-twin/containerd.pid``), because a twin has no
systemd. Its main config is written inside the twin (through ``/proc/<sshd pid>/root``) from
``main_config``.

Processes are found by pid, never by name: the pid namespace is the host's, so ``pidof containerd``
in a twin also sees the host's and the other twins' daemons. A twin's processes are those whose mount
namespace is the twin sshd's (``/proc/<pid>/ns/mnt``). Stopping a twin sends SIGTERM to each of them,
SIGKILL after the timeout, and waits until they are gone; the overlays vanish with the last one.
"""

import json
import os
import shlex
import signal
import socket
import subprocess
import time

from ansible_collections.gpuop.gates.plugins.module_utils.containerd_sandbox import proc_start_time
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import atomic_write, read_text
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_LABEL_RE

POLL_INTERVAL = 0.2
OVERLAID = ("etc", "opt", "run", "var/lib")
SHIM = "/etc/gpuop-twin/containerd-service"
SHIM_PID = "/run/gpuop-twin/containerd.pid"
SHIM_LOG = "/var/log/gpuop-twin-containerd.log"

ARG_SPEC = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "default": "started", "choices": ["started", "stopped"]},
    "dir": {"type": "path", "required": True},
    "port": {"type": "int"},
    "containerd": {"type": "path", "default": "/usr/bin/containerd"},
    "main_config": {"type": "str", "default": ""},
    "start_containerd": {"type": "bool", "default": True},
    "wait_timeout": {"type": "float", "default": 30.0},
}


def validate(params):
    name = params.get("name")
    if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL_RE.match(name):
        raise GpuopError("name=%s must be a DNS label (it is the twin's hostname)" % json.dumps(name))
    if not os.path.isabs(params.get("dir") or ""):
        raise GpuopError("dir=%s must be an absolute path" % json.dumps(params.get("dir")))
    for top in ("/etc", "/opt", "/run", "/var/lib"):
        if params["dir"] == top or params["dir"].startswith(top + "/"):
            raise GpuopError("dir=%s lies under %s, which the twin covers with an overlay" % (params["dir"], top))
    if params["state"] == "started":
        port = params.get("port")
        if not isinstance(port, int) or not 1024 <= port <= 65535:
            raise GpuopError("port=%s must be a free TCP port from 1024 to 65535" % json.dumps(port))


def paths(folder):
    return {"dir": folder, "key": os.path.join(folder, "key"), "client_key": os.path.join(folder, "key", "id"),
            "host_key": os.path.join(folder, "key", "host"), "authorized": os.path.join(folder, "key", "authorized_keys"),
            "confine": os.path.join(folder, "confine"), "start": os.path.join(folder, "start.sh"),
            "record": os.path.join(folder, "twin.json"), "log": os.path.join(folder, "sshd.log")}


def start_script(name, where, port):
    """The twin's init: tmpfs, the overlays, the hostname, then sshd in the foreground (its pid is the twin's)."""
    lines = ["#!/bin/sh", "# The init of node twin %s (written by gpuop.gates.node_twin; edits are overwritten)." % name,
             "set -e", "mount -t tmpfs -o mode=0700 gpuop-twin %s" % shlex.quote(where["confine"])]
    for index, folder in enumerate(OVERLAID):
        upper = os.path.join(where["confine"], str(index))
        lines += ["mkdir -p %s/u %s/w" % (shlex.quote(upper), shlex.quote(upper)),
                  "mount -t overlay gpuop-twin -o lowerdir=/%s,upperdir=%s/u,workdir=%s/w /%s"
                  % (folder, upper, upper, folder)]
    lines += ["hostname %s" % shlex.quote(name), "mkdir -p /run/sshd",
              "exec /usr/sbin/sshd -D -e -p %d -o ListenAddress=127.0.0.1 -h %s -o AuthorizedKeysFile=%s "
              "-o PidFile=none -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UsePAM=no "
              "-o StrictModes=no" % (port, shlex.quote(where["host_key"]), shlex.quote(where["authorized"]))]
    return "\n".join(lines) + "\n"


def shim_script(containerd, config="/etc/containerd/config.toml"):
    """The twin's containerd service: start, stop, restart, status by its pid file (no systemd in a twin)."""
    return """#!/bin/sh
# containerd's service on this node twin (no systemd here): start | stop | restart | status.
# Written by gpuop.gates.node_twin. The daemon is found by its pid file, never by name.
PIDFILE=%(pid)s
CONTAINERD=%(containerd)s
CONFIG=%(config)s
running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
start() {
    running && return 0
    mkdir -p "$(dirname "$PIDFILE")"
    setsid "$CONTAINERD" --config "$CONFIG" >>%(log)s 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    i=0
    while [ $i -lt 150 ]; do
        [ -S /run/containerd/containerd.sock ] && return 0
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { echo "containerd exited; see %(log)s" >&2; return 1; }
        sleep 0.2; i=$((i + 1))
    done
    echo "containerd did not create its socket in 30 s" >&2; return 1
}
stop() {
    running || { rm -f "$PIDFILE"; return 0; }
    pid=$(cat "$PIDFILE"); kill "$pid"
    i=0
    while kill -0 "$pid" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 150 ] && kill -9 "$pid"; sleep 0.2
    done
    rm -f "$PIDFILE" /run/containerd/containerd.sock
}
case "$1" in
    start) start ;;
    stop) stop ;;
    restart) stop && start ;;
    status) if running; then echo "running (pid $(cat "$PIDFILE"))"; else echo stopped; exit 3; fi ;;
    *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
""" % {"pid": SHIM_PID, "containerd": shlex.quote(containerd), "config": shlex.quote(config), "log": SHIM_LOG}


# --------------------------------------------------------------------------------- processes


def _mnt_ns(pid):
    try:
        return os.readlink("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None


def read_record(where):
    text = read_text(where["record"])
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def alive(record):
    """The twin's sshd still runs: its pid has the recorded start time and mount namespace."""
    if not record:
        return False
    pid = record.get("pid")
    return isinstance(pid, int) and proc_start_time(pid) == record.get("start_time") and _mnt_ns(pid) == record.get("mnt_ns")


def members(mnt_ns):
    """Every pid whose mount namespace is ``mnt_ns`` (the twin's processes)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _mnt_ns(int(entry)) == mnt_ns:
            found.append(int(entry))
    return sorted(found)


def _ssh_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            return conn.recv(16).startswith(b"SSH-")
    except OSError:
        return False


def _keys(where):
    os.makedirs(where["key"], 0o700, exist_ok=True)
    for key in (where["client_key"], where["host_key"]):
        if not os.path.isfile(key):
            proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuop-twin", "-f", key],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
            if proc.returncode != 0:
                raise GpuopError("ssh-keygen failed for %s: %s" % (key, proc.stderr.strip()))
    with open(where["client_key"] + ".pub") as handle:
        atomic_write(where["authorized"], handle.read(), 0o600)


def run_in(record, argv, timeout=60):
    """Run ``argv`` inside the twin's namespaces (nsenter by the sshd's pid)."""
    return subprocess.run(["nsenter", "-t", str(record["pid"]), "-m", "-u", "--"] + list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False)


def start(params, clock=time.monotonic, sleep=time.sleep):
    where = paths(params["dir"])
    record = read_record(where)
    if alive(record) and record.get("port") == params["port"]:
        return {"changed": False, "record": record}
    if alive(record):
        stop(params, clock, sleep)
    os.makedirs(where["confine"], 0o700, exist_ok=True)
    _keys(where)
    atomic_write(where["start"], start_script(params["name"], where, params["port"]), 0o700)
    with open(where["log"], "ab") as log:
        proc = subprocess.Popen(["unshare", "--mount", "--uts", "--propagation", "private", where["start"]],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    deadline = clock() + params["wait_timeout"]
    while not _ssh_answers(params["port"]):
        if proc.poll() is not None:
            raise GpuopError("node twin %s: its sshd exited with %s; its log %s ends: %s"
                             % (params["name"], proc.returncode, where["log"], (read_text(where["log"]) or "")[-400:]))
        if clock() > deadline:
            raise GpuopError("node twin %s: no SSH answer on 127.0.0.1:%d after %.0f s" % (params["name"], params["port"],
                                                                                           params["wait_timeout"]))
        sleep(POLL_INTERVAL)
    record = {"name": params["name"], "pid": proc.pid, "start_time": proc_start_time(proc.pid), "mnt_ns": _mnt_ns(proc.pid),
              "port": params["port"], "client_key": where["client_key"]}
    atomic_write(where["record"], json.dumps(record, sort_keys=True) + "\n", 0o600)
    return {"changed": True, "record": record}


def setup_node(params, record):
    """Inside the twin: the containerd shim, the main config, and containerd started through the shim."""
    root = "/proc/%d/root" % record["pid"]
    changed = False
    for path, content, mode in ((SHIM, shim_script(params["containerd"]), 0o755),) + (
            (("/etc/containerd/config.toml", params["main_config"], 0o644),) if params["main_config"] else ()):
        inside = root + path
        if read_text(inside) != content:
            atomic_write(inside, content, mode)
            changed = True
    if params["start_containerd"]:
        status = run_in(record, [SHIM, "status"])
        if status.returncode != 0:
            proc = run_in(record, [SHIM, "start"], timeout=60)
            if proc.returncode != 0:
                raise GpuopError("node twin %s: containerd did not start: %s"
                                 % (params["name"], (proc.stderr or proc.stdout).strip()[-300:]))
            changed = True
    return changed


def stop(params, clock=time.monotonic, sleep=time.sleep):
    where = paths(params["dir"])
    record = read_record(where)
    # The namespace id cannot be reused while a process holds it: its members are the twin's, even when
    # its sshd is gone (a containerd started over SSH outlives the session).
    pids = members(record["mnt_ns"]) if record and record.get("mnt_ns") else []
    if not pids:
        return {"changed": False, "stopped": []}
    for sig, grace in ((signal.SIGTERM, params["wait_timeout"]), (signal.SIGKILL, 10.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = clock() + grace
        while clock() < deadline and [p for p in pids if _mnt_ns(p) == record["mnt_ns"]]:
            sleep(POLL_INTERVAL)
        if not [p for p in pids if _mnt_ns(p) == record["mnt_ns"]]:
            break
    left = members(record["mnt_ns"])
    if left:
        raise GpuopError("node twin %s: processes %s are still running in its namespace" % (params["name"], left))
    return {"changed": True, "stopped": pids}


def ensure(params, check_mode=False):
    validate(params)
    where = paths(params["dir"])
    record = read_record(where)
    if check_mode:
        running = alive(record)
        return {"changed": running != (params["state"] == "started"), "record": record if running else None}
    if params["state"] == "stopped":
        return dict(stop(params), record=None)
    result = start(params)
    result["changed"] = setup_node(params, result["record"]) or result["changed"]
    return result


__all__ = ["ARG_SPEC", "ensure", "members", "shim_script", "start_script", "validate"]
