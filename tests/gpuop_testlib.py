"""Helpers shared by gpuop's tests (imported as a module, so no conftest name clash)."""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The checkout is the collection gpuop.gates (ansible.cfg: collections_path = .collections, a link made by
# `make setup`). Tests import gpuop's Python by the name the collection gives it,
# ansible_collections.gpuop.gates.plugins.module_utils.*, as Ansible does inside a module.
COLLECTIONS = os.path.join(ROOT, ".collections")
COLLECTION_LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpuop", "gates")
if not os.path.isdir(COLLECTION_LINK):
    raise RuntimeError("%s is missing: run `make setup` (it links the checkout as the collection gpuop.gates)"
                       % COLLECTION_LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def ansible_env(extra=None):
    """Environment for running ansible commands of this checkout from any folder."""
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    env["PATH"] = os.path.join(ROOT, ".venv", "bin") + os.pathsep + env.get("PATH", "")
    if extra:
        env.update(extra)
    return env


def run_module(name, args, check=False, diff=False, env=None):
    """Run module ``name`` of gpuop.gates (library/) through ``ansible localhost -m``; return its result dict."""
    fqcn = name if "." in name else "gpuop.gates." + name
    cmd = [os.path.join(ROOT, ".venv", "bin", "ansible"), "localhost", "-m", fqcn, "-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        env=ansible_env(dict({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "json",
                              "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json"}, **(env or {}))),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible printed no JSON (rc=%s):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]



def wait_until(predicate, timeout, what, interval=0.2):
    """Poll ``predicate()`` every 0.2 s until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
