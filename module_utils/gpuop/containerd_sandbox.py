# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A real containerd daemon confined to the lab: start, restart, stop, by its pid.

Pure process logic (no AnsibleModule); bad input and failures raise :class:`GpuopError`.

The daemon runs as root with ``--config`` the lab's main file and ``--root``, ``--state`` and
``--address`` under one private folder (``<var_dir>/<name>``). containerd still creates host paths
outside those (``/opt/containerd/{bin,lib}`` from the opt plugin, ``/etc/cni/net.d`` from the CRI
plugin's CNI watcher, ``/run/nri`` on 2.x). Changing the config to disable those plugins would
change what is observed (on containerd 1.x, any drop-in that touches the CRI section replaces it
whole), so the daemon is confined instead: it is started through ``unshare --mount --propagation
private``, and inside that private mount namespace each folder of ``confine`` (default ``/etc``,
``/opt``, ``/run``) is covered by an overlay whose upper layer lives on a tmpfs. What containerd
writes there exists only in its namespace (readable from the host through ``/proc/<pid>/root``)
and disappears with it; the host's folders are never written. The lab's own files, the socket and
the daemon's root and state must therefore lie outside the confined folders (checked).

The working directory is explicit (``cwd``): containerd 1.x globs a relative import against it.

``<name>/daemon.json`` records the launch (pid, its start time from ``/proc/<pid>/stat``, argv, cwd):
a pid is only ever signalled when ``/proc`` still shows the same process (start time and argv),
never a reused pid.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.names import RUNTIME_NAME_RE
from ansible_collections.gpuop.gates.plugins.module_utils.files import atomic_write

POLL_INTERVAL = 0.2
DEFAULT_CONFINE = ("/etc", "/opt", "/run")
# Host paths containerd creates although root, state and address are private (docs/facts.md).
HOST_PATHS = ("/opt/containerd", "/etc/cni", "/run/nri", "/etc/containerd", "/run/containerd", "/var/lib/containerd")
UNIX_PATH_MAX = 107
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/@+-]*$")
_NAME = RUNTIME_NAME_RE

# $1 tmpfs mount point for the overlays' upper layers, $2 working directory, $3.. "--" then the
# folders to confine, "--" then the daemon's argv. Runs in the new mount namespace (unshare), then
# execs containerd: the pid unshare was started with is containerd's pid.
WRAPPER = r"""set -eu
uppers="$1"; cwd="$2"; shift 2
[ "$1" = "--" ] && shift
mount -t tmpfs -o mode=0700,size=64m gpuop-confine "$uppers"
i=0
while [ "$1" != "--" ]; do
    i=$((i + 1))
    mkdir -p "$uppers/$i/upper" "$uppers/$i/work"
    mount -t overlay gpuop-confine -o "lowerdir=$1,upperdir=$uppers/$i/upper,workdir=$uppers/$i/work" "$1"
    shift
done
shift
cd "$cwd"
exec "$@"
"""


def argument_spec():
    """Options of the containerd_sandbox module."""
    return dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="started", choices=["started", "restarted", "stopped", "absent"]),
        var_dir=dict(type="path", required=True),
        config=dict(type="path"),
        containerd=dict(type="path", default="/usr/bin/containerd"),
        ctr=dict(type="path", default="/usr/bin/ctr"),
        cwd=dict(type="path", default="/"),
        confine=dict(type="list", elements="path", default=list(DEFAULT_CONFINE)),
        log_level=dict(type="str", default="info", choices=["debug", "info", "warn", "error"]),
        wait_timeout=dict(type="float", default=30.0),
    )


def paths(var_dir, name):
    """Where one sandbox keeps everything: its own folder under ``var_dir``."""
    base = os.path.join(var_dir, name)
    return {
        "base": base,
        "root": os.path.join(base, "root"),
        "state": os.path.join(base, "state"),
        "address": os.path.join(base, "containerd.sock"),
        "log": os.path.join(base, "containerd.log"),
        "record": os.path.join(base, "daemon.json"),
        "uppers": os.path.join(base, "confine"),
    }


def _under(path, folder):
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return folder == "/" or path == folder or path.startswith(folder + "/")


def validate(name, var_dir, config, containerd, cwd, confine, need_config=True):
    """Check the inputs; return :func:`paths`. Raises GpuopError naming the field."""
    if not _NAME.match(name or ""):
        raise GpuopError("name must be letters, digits, '.', '_' or '-', got %r" % (name,))
    if not os.path.isabs(var_dir) or not _SAFE_PATH.match(var_dir):
        raise GpuopError("var_dir must be an absolute path of letters, digits and ._/@+- (it goes into mount "
                         "options), got %r" % (var_dir,))
    where = paths(var_dir, name)
    if len(where["address"]) + len(".ttrpc") > UNIX_PATH_MAX:
        raise GpuopError("var_dir %s is too long: the socket %s.ttrpc exceeds %d bytes (a unix socket limit)"
                         % (var_dir, where["address"], UNIX_PATH_MAX))
    if not cwd or not os.path.isabs(cwd):
        raise GpuopError("cwd must be an absolute path, got %r" % (cwd,))
    for folder in confine:
        if not os.path.isabs(folder) or not _SAFE_PATH.match(folder) or os.path.normpath(folder) == "/":
            raise GpuopError("confine: %r must be an absolute folder other than / (letters, digits, ._/@+-)" % (folder,))
        for what, path in (("var_dir", var_dir), ("config", config), ("containerd", containerd)):
            if path and _under(path, folder):
                raise GpuopError("%s %s lies under the confined folder %s: inside the sandbox's mount namespace "
                                 "it would be hidden by the overlay. Put it elsewhere or change confine"
                                 % (what, path, folder))
    for folder in confine:
        if not os.path.isdir(folder):
            raise GpuopError("confine: %s is not an existing folder on this host" % folder)
    if need_config:
        if not config:
            raise GpuopError("config is required to start a daemon")
        if not os.path.isfile(config):
            raise GpuopError("config %s: no such file (the lab's main config must exist before the daemon starts)" % config)
        if not (os.path.isfile(containerd) and os.access(containerd, os.X_OK)):
            raise GpuopError("containerd %s: no such executable" % containerd)
    return where


def daemon_argv(containerd, config, where, log_level="info"):
    """containerd's own argv: the lab's main file, private root, state and socket."""
    return [containerd, "--config", config, "--root", where["root"], "--state", where["state"],
            "--address", where["address"], "--log-level", log_level]


def launch_argv(argv, cwd, confine, where):
    """The argv actually executed: unshare, the confinement wrapper, then containerd (exec'd)."""
    return (["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", WRAPPER, "gpuop-sandbox",
             where["uppers"], cwd, "--"] + [os.path.normpath(f) for f in confine] + ["--"] + argv)


# --------------------------------------------------------------------------------------------
# /proc
# --------------------------------------------------------------------------------------------

def proc_start_time(pid):
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), or None if gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def proc_argv(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read().split(b"\0")[:-1]]
    except OSError:
        return None


def read_record(where):
    try:
        with open(where["record"], encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise GpuopError("%s: unreadable sandbox record: %s" % (where["record"], exc))


def running(where):
    """The record of the live daemon of this sandbox, or None (no record, process gone, pid reused)."""
    record = read_record(where)
    if not record:
        return None
    pid = record.get("pid")
    if not isinstance(pid, int) or proc_start_time(pid) != record.get("start_time"):
        return None
    if proc_argv(pid) != record.get("argv"):
        return None
    return record


def _reap(pid):
    """Collect the exit status when the daemon is our own child (a test starting it in-process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    except OSError:
        pass


def log_tail(where, lines=15):
    try:
        with open(where["log"], "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# Lifecycle
# --------------------------------------------------------------------------------------------

def _ctr_answers(ctr, address):
    try:
        proc = subprocess.run([ctr, "--address", address, "--timeout", "2s", "version"], capture_output=True,
                              text=True, check=False, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "Server:" in proc.stdout


def start(params, clock=time.monotonic, sleep=time.sleep):
    """Start the daemon unless this sandbox's daemon already runs with the same launch.

    Returns (changed, record). Waits, polling every 0.2 s up to ``wait_timeout``, until the
    daemon answers on its socket (``ctr version``); a daemon that exits first fails with its log.
    """
    where = validate(params["name"], params["var_dir"], params["config"], params["containerd"],
                     params["cwd"], params["confine"])
    argv = daemon_argv(params["containerd"], params["config"], where, params.get("log_level", "info"))
    launch = launch_argv(argv, params["cwd"], params["confine"], where)
    current = running(where)
    if current and current.get("launch") == launch:
        return False, current
    if current:
        stop(params, clock=clock, sleep=sleep)
    for key in ("base", "root", "state", "uppers"):
        os.makedirs(where[key], mode=0o700, exist_ok=True)
    with open(where["log"], "ab") as log:
        log.write(("--- gpuop: starting %s (cwd %s)\n" % (" ".join(argv), params["cwd"])).encode())
        log.flush()
        try:
            proc = subprocess.Popen(launch, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd="/", start_new_session=True, close_fds=True)
        except OSError as exc:
            raise GpuopError("cannot start %s through unshare: %s" % (params["containerd"], exc))
    deadline = clock() + params["wait_timeout"]
    record = None
    while True:
        if proc.poll() is not None:
            raise GpuopError("containerd sandbox %s exited with code %s before answering on %s; log %s ends:\n%s"
                             % (params["name"], proc.returncode, where["address"], where["log"], log_tail(where)))
        # The record is written once exec has replaced the wrapper (the argv is containerd's own).
        if record is None and proc_argv(proc.pid) == argv:
            record = {"pid": proc.pid, "start_time": proc_start_time(proc.pid), "argv": argv, "launch": launch,
                      "cwd": params["cwd"], "config": params["config"], "address": where["address"],
                      "root": where["root"], "state": where["state"], "log": where["log"],
                      "confine": [os.path.normpath(f) for f in params["confine"]]}
            atomic_write(where["record"], json.dumps(record, indent=2, sort_keys=True) + "\n", 0o600)
        if record is not None and os.path.exists(where["address"]) and _ctr_answers(params["ctr"], where["address"]):
            return True, record
        if clock() >= deadline:
            _kill(proc.pid, params["wait_timeout"], clock, sleep)
            raise GpuopError("containerd sandbox %s did not answer on %s within %ss (stopped it again); log %s ends:\n%s"
                             % (params["name"], where["address"], params["wait_timeout"], where["log"], log_tail(where)))
        sleep(POLL_INTERVAL)


def _kill(pid, timeout, clock=time.monotonic, sleep=time.sleep):
    """SIGTERM, wait (poll 0.2 s) up to ``timeout``, then SIGKILL and wait again."""
    start_time = proc_start_time(pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if start_time is None:
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = clock() + timeout
        while clock() < deadline:
            _reap(pid)
            if proc_start_time(pid) != start_time:
                return
            sleep(POLL_INTERVAL)
    _reap(pid)
    if proc_start_time(pid) == start_time:
        raise GpuopError("containerd pid %d survived SIGKILL for %ss" % (pid, timeout))


def stop(params, clock=time.monotonic, sleep=time.sleep):
    """Stop this sandbox's daemon by its recorded pid. Returns (changed, record-or-None)."""
    where = paths(params["var_dir"], params["name"])
    record = running(where)
    if record:
        _kill(record["pid"], params["wait_timeout"], clock, sleep)
    if os.path.exists(where["record"]):
        os.unlink(where["record"])
    # containerd 1.6 leaves its ttrpc socket behind: a stopped sandbox keeps its log and state, no socket.
    for socket_path in (where["address"], where["address"] + ".ttrpc"):
        if os.path.lexists(socket_path) and stat.S_ISSOCK(os.lstat(socket_path).st_mode):
            os.unlink(socket_path)
    return bool(record), record


def stores(where):
    """The daemon's own stores (content, snapshots, metadata, state, the confinement's uppers) that exist."""
    return [where[key] for key in ("root", "state", "uppers") if os.path.lexists(where[key])]


def remove(params, clock=time.monotonic, sleep=time.sleep):
    """Stop the daemon (when running) and remove its stores: its next start is a fresh node's.

    The log stays (it is appended to, never rewritten). Returns (changed, None).
    """
    where = paths(params["var_dir"], params["name"])
    was_running, _record = stop(params, clock=clock, sleep=sleep)
    found = stores(where)
    for folder in found:
        try:
            if os.path.isdir(folder) and not os.path.islink(folder):
                shutil.rmtree(folder)
            else:
                os.unlink(folder)
        except OSError as exc:
            raise GpuopError("cannot remove %s of containerd sandbox %s: %s" % (folder, params["name"], exc))
    return was_running or bool(found), None


def restart(params, clock=time.monotonic, sleep=time.sleep):
    """Stop (when running) and start again: the daemon re-reads the files. Always changed."""
    stop(params, clock=clock, sleep=sleep)
    _changed, record = start(params, clock=clock, sleep=sleep)
    return True, record


def confined_writes(pid, confine, host_paths=HOST_PATHS):
    """Which of ``host_paths`` exist in the daemon's namespace (``/proc/<pid>/root``) but not on the host."""
    out = []
    for path in host_paths:
        if any(_under(path, f) for f in confine) and os.path.lexists("/proc/%d/root%s" % (pid, path)) \
                and not os.path.lexists(path):
            out.append(path)
    return out
