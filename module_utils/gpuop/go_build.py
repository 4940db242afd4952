# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Build Go commands of a pinned module into a cached folder, once, whoever else builds it at the same time.

The cached build is ``<dest>/bin`` with one file per binary. It is made in a temporary folder next to
it (``<dest>.tmp-XXXXXXXX``) renamed into place at the end, so a build that is killed leaves no half
folder under the final name. Two runs that build the same pin at once (``make test``'s two streams on a
fresh machine, two playbooks) take turns on ``<dest>.lock`` (flock: released when the process ends,
however it ends): the second finds the first one's build complete and builds nothing. Under the lock,
and only there, temporary folders left by killed builds are removed, and a cached folder that lacks a
binary (a build from before the lock, whose temporary folder another run removed mid-build) is
replaced.

``plan`` and ``build_argv`` are pure; ``ensure`` does the I/O.
"""

import os
import shutil
import subprocess
import tempfile
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import exclusive_lock

LOCK_SUFFIX = ".lock"
TEMP_INFIX = ".tmp-"
TAIL_LINES = 25


def bin_dir(dest):
    return os.path.join(dest, "bin")


def missing_binaries(dest, names):
    """The binaries of ``names`` that ``<dest>/bin`` does not hold as files."""
    return [name for name in names if not os.path.isfile(os.path.join(bin_dir(dest), name))]


def plan(dest_exists, missing):
    """What to do with the cached folder: ``keep`` (complete), ``build`` (none), ``replace`` (incomplete)."""
    if not dest_exists:
        return "build"
    return "replace" if missing else "keep"


def stale_temps(entries, dest_name):
    """Among a folder's entry names, the temporary folders of builds of ``dest_name`` (left by killed runs)."""
    prefix = dest_name + TEMP_INFIX
    return sorted(e for e in entries if e.startswith(prefix))


def build_argv(go, package, out, ldflags="", tags=()):
    """``go build`` of one command into ``out``."""
    argv = [go, "build", "-trimpath"]
    if tags:
        argv += ["-tags", ",".join(tags)]
    argv += ["-ldflags", ldflags, "-o", out, package]
    return argv


def tail(text, lines=TAIL_LINES):
    return "\n".join((text or "").rstrip("\n").splitlines()[-lines:])


def _run(argv, cwd, env, what):
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise GpuopError("%s: cannot run %s: %s" % (what, argv[0], exc.strerror or exc))
    if proc.returncode != 0:
        raise GpuopError("%s failed (exit %d):\n%s" % (what, proc.returncode, tail(proc.stderr + proc.stdout)))
    return proc


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def ensure(params, check_mode=False, clock=time.monotonic, environ=None):
    """Make ``<dest>/bin`` hold every binary of ``params["binaries"]``; returns the module's result."""
    dest = os.path.abspath(params["dest"])
    names = [b["name"] for b in params["binaries"]]
    if len(set(names)) != len(names) or not names:
        raise GpuopError("binaries must list at least one binary, each name once (got %s)" % names)
    for name in names:
        if "/" in name or name in (".", ".."):
            raise GpuopError("binaries: %r is not a file name" % name)
    check = params.get("version_check")
    if check and check["binary"] not in names:
        raise GpuopError("version_check.binary %r is not one of binaries %s" % (check["binary"], names))
    module_dir = params["module_dir"]
    for required in ("go.mod", "go.sum"):
        if not os.path.isfile(os.path.join(module_dir, required)):
            raise GpuopError("module_dir %s has no %s" % (module_dir, required))
    result = {"changed": False, "dest": dest, "bin_dir": bin_dir(dest), "built": [], "seconds": {},
              "lock_waited": 0.0, "replaced_incomplete": [], "removed_temps": []}

    if plan(os.path.isdir(dest), missing_binaries(dest, names)) == "keep":
        return result
    if check_mode:
        result.update(changed=True, built=names)
        return result

    parent = os.path.dirname(dest)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise GpuopError("cannot make the cache folder %s: %s" % (parent, exc.strerror or exc))
    lock = dest + LOCK_SUFFIX
    busy = ("another run has been building %s for more than %ss (it holds %s); let it finish, or raise the lock "
            "timeout" % (dest, params["lock_timeout"], lock))
    with exclusive_lock(lock, params["lock_timeout"], busy, clock=clock) as waited:
        result["lock_waited"] = round(waited, 3)
        missing = missing_binaries(dest, names)
        action = plan(os.path.isdir(dest), missing)
        if action == "keep":
            return result  # another run built it while this one waited
        for name in stale_temps(os.listdir(parent), os.path.basename(dest)):
            _remove(os.path.join(parent, name))
            result["removed_temps"].append(os.path.join(parent, name))
        if action == "replace":
            result["replaced_incomplete"] = missing
        temp, result["seconds"] = _build(params, dest, clock, environ)
        if action == "replace":
            _remove(dest)
        os.rename(temp, dest)
    result.update(changed=True, built=names)
    return result


def _build(params, dest, clock, environ):
    """Build every binary into a new temporary folder beside ``dest``; returns it and the seconds per part."""
    env = dict(os.environ if environ is None else environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    temp = tempfile.mkdtemp(prefix=os.path.basename(dest) + TEMP_INFIX, dir=os.path.dirname(dest))
    try:
        os.chmod(temp, 0o755)
        os.mkdir(os.path.join(temp, "bin"))
        module_dir = params["module_dir"]
        started = clock()
        _run([params["go"], "mod", "download"], module_dir, env, "go mod download in %s" % module_dir)
        seconds = {"go mod download": round(clock() - started, 1)}
        for binary in params["binaries"]:
            started = clock()
            out = os.path.join(temp, "bin", binary["name"])
            _run(build_argv(params["go"], binary["package"], out, params["ldflags"], params["tags"]),
                 module_dir, env, "go build of %s (%s)" % (binary["name"], binary["package"]))
            seconds[binary["name"]] = round(clock() - started, 1)
        check = params.get("version_check")
        if check:
            path = os.path.join(temp, "bin", check["binary"])
            proc = _run([path, "--version"], module_dir, env, "%s --version" % check["binary"])
            if check["expect"] not in proc.stdout:
                raise GpuopError("%s --version says %r, expected it to contain %r: the pin and the version stamp "
                                 "disagree" % (check["binary"], proc.stdout.strip(), check["expect"]))
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return temp, seconds


def argument_spec():
    return {
        "dest": {"type": "path", "required": True},
        "module_dir": {"type": "path", "required": True},
        "go": {"type": "str", "default": "go"},
        "binaries": {"type": "list", "elements": "dict", "required": True, "options": {
            "name": {"type": "str", "required": True},
            "package": {"type": "str", "required": True},
        }},
        "ldflags": {"type": "str", "default": ""},
        "tags": {"type": "list", "elements": "str", "default": []},
        "version_check": {"type": "dict", "options": {
            "binary": {"type": "str", "required": True},
            "expect": {"type": "str", "required": True},
        }},
        "lock_timeout": {"type": "int", "default": 3600},
    }


__all__ = ["argument_spec", "bin_dir", "build_argv", "ensure", "missing_binaries", "plan", "stale_temps"]
