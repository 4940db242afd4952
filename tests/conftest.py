"""Shared pytest set-up: gpuop's module_utils on sys.path, real modules run through Ansible, and no process left.

At the end of the session, any process whose command line names this session's temporary folder (a twin's sshd,
a containerd sandbox) is a leak: a fixture that did not stop what it started. It is killed, with every process
of its mount namespace when that is not ours (a twin's containerd) and of its process group when that is not
ours, and the session fails naming it.
"""

import os
import signal

import pytest

from gpuop_testlib import ROOT, ansible_env, run_module  # noqa: F401  (ROOT also puts module_utils on sys.path)


@pytest.fixture
def module_runner():
    return run_module


def _processes():
    """(pid, command line, mount namespace) of every process that can still be read."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            found.append((int(entry), cmdline, os.readlink("/proc/%s/ns/mnt" % entry)))
        except OSError:
            pass
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind(tmp_path_factory):
    yield
    base = str(tmp_path_factory.getbasetemp())
    ours = os.readlink("/proc/self/ns/mnt")
    everything = _processes()
    left = [(pid, cmd, ns) for pid, cmd, ns in everything if base in cmd and pid != os.getpid()]
    if not left:
        return
    namespaces = {ns for _pid, _cmd, ns in left if ns != ours}
    victims = {pid for pid, _cmd, _ns in left} | {pid for pid, _cmd, ns in everything if ns in namespaces}
    groups = set()
    for pid in sorted(victims):
        try:
            groups.add(os.getpgid(pid))
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for group in groups - {os.getpgrp()}:  # their children too (never our own group)
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    pytest.fail("processes left running by the tests (killed now, %d with their namespaces):\n%s"
                % (len(victims), "\n".join("%d %s" % (pid, cmd[:200]) for pid, cmd, _ns in left)), pytrace=False)
