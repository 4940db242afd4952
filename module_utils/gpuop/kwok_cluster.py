# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A kwok cluster's lifecycle: create, start, repair or refuse, then its kubeconfig (module kwok_cluster).

The decisions are pure functions (``first_step``, ``after_start``, ``after_create``), tested with data
tables; ``ensure`` runs them against kwokctl through a ``run(argv)`` callable.

What kwokctl does not say by its exit code, learnt on this machine:
- ``kwokctl start`` on a half-running cluster (a run killed while kwokctl created it leaves etcd up and
  the API server gone) waits about 2 min, starts nothing and exits 0: what is left is stopped first,
  then started, then asked again (``kubectl get --raw /readyz``).
- ``kwokctl create`` exits 0 even when a component never came up (etcd's port taken between kwokctl's
  pick and etcd's bind): a new cluster that does not answer is deleted and created once more (kwokctl
  picks new ports); a second failure names the components' own error lines.
- A cluster gpuop did not create (no marker ``.gpuop-cluster-<name>`` beside the kubeconfig) is never
  stopped, deleted or recreated: the failure names the reset command.
- ``kwokctl create`` picks its components' ports by probing for free ones, and they bind them only when they
  start: two clusters created at the same moment on one machine can pick the same port. The one whose kwok
  controller lost never makes its nodes Ready (seen here: a molecule scenario created beside a test's
  cluster, its nodes not Ready after 180 s). So creating or starting a cluster holds an exclusive lock,
  ``<kwok home>/gpuop-create.lock`` (flock: released when the process ends, however it ends), waited for at
  most ``lock_timeout(wait_timeout)`` seconds.
"""

import contextlib
import glob
import json
import os
import re
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils import files
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file, read_text
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_LABEL_RE

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl")
# The marker of a cluster gpuop created, beside its kubeconfig; inputs.created_by_gpuop looks for it.
MARKER_PREFIX = ".gpuop-cluster-"
_LOG_ERROR = re.compile(r'"level":"(error|fatal)"|^[EF][0-9]{4} ')
_JSON_MSG = re.compile(r'.*"msg":"([^"]*)".*"error":"([^"]*)".*')

ARG_SPEC = {
    "name": {"type": "str", "required": True},
    "kubeconfig": {"type": "path", "required": True},
    "bin_dir": {"type": "path", "required": True},
    "create_args": {"type": "list", "elements": "str", "default": []},
    "wait_timeout": {"type": "int", "default": 60},
    "kwok_home": {"type": "path"},
}


# ------------------------------------------------------------------------------ decisions


def first_step(listed, answers):
    """What to do first: ``keep`` (it answers), ``start`` (listed, silent) or ``create`` (not listed)."""
    if not listed:
        return "create"
    return "keep" if answers else "start"


def after_start(started, answers, owned):
    """After stop + start of a silent cluster: ``ok``, ``recreate`` (ours, broken) or ``refuse`` (not ours)."""
    if started and answers:
        return "ok"
    return "recreate" if owned else "refuse"


def after_create(answers, attempt):
    """After a create: ``ok``, ``retry`` (first attempt silent: new ports) or ``fail``."""
    if answers:
        return "ok"
    return "retry" if attempt == 1 else "fail"


# ------------------------------------------------------------------------------------ the lock

LOCK_NAME = "gpuop-create.lock"
LOCK_POLL = files.LOCK_POLL


def lock_timeout(wait_timeout):
    """How long to wait for another run's creation: two attempts of kwokctl's own wait each, and a minute."""
    return 2 * wait_timeout + 60


@contextlib.contextmanager
def creation_lock(home, timeout, clock=time.monotonic, sleep=time.sleep):
    """Hold ``<home>/gpuop-create.lock`` exclusively while kwokctl creates or starts a cluster."""
    if not os.path.isdir(home):
        os.makedirs(home, 0o755)
    path = os.path.join(home, LOCK_NAME)
    busy = ("another run has been creating or starting a kwok cluster for %ds (it holds %s); "
            "try again when it is done" % (timeout, path))
    with files.exclusive_lock(path, timeout, busy, clock=clock, sleep=sleep):
        yield path


# ------------------------------------------------------------------------------------ paths


def paths(params):
    home = params.get("kwok_home") or os.environ.get("KWOK_WORKDIR") or os.path.join(os.path.expanduser("~"), ".kwok")
    state = os.path.join(home, "clusters", params["name"])
    folder = os.path.dirname(os.path.abspath(params["kubeconfig"]))
    return {
        "home": home,
        "state": state,
        "state_kubeconfig": os.path.join(state, "kubeconfig.yaml"),
        "logs": os.path.join(state, "logs"),
        "marker": os.path.join(folder, MARKER_PREFIX + params["name"]),
        "kwokctl": os.path.join(params["bin_dir"], "kwokctl"),
        "kubectl": os.path.join(params["bin_dir"], "kubectl"),
    }


def validate(params):
    name = params.get("name")
    if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL_RE.match(name):
        raise GpuopError("name=%s must be a DNS label (lower-case letters, digits, '-')" % json.dumps(params.get("name")))
    missing = [b for b in BINARIES if not os.path.isfile(os.path.join(params["bin_dir"], b))]
    if missing:
        raise GpuopError("bin_dir=%s lacks %s (run the toolchain role first)" % (params["bin_dir"], ", ".join(missing)))
    if not isinstance(params.get("wait_timeout"), int) or params["wait_timeout"] < 1:
        raise GpuopError("wait_timeout must be at least 1 second, got %s" % json.dumps(params.get("wait_timeout")))


def create_argv(params, where):
    b = params["bin_dir"]
    # --kubeconfig '': kwokctl writes no kubeconfig of its own (its default is the user's ~/.kube/config,
    # and a path of ours it would write in place, not atomically); ours is copied from its state, mode 0600.
    return [where["kwokctl"], "create", "cluster", "--name", params["name"], "--runtime", "binary",
            "--kubeconfig", "",
            "--etcd-binary", os.path.join(b, "etcd"),
            "--kube-apiserver-binary", os.path.join(b, "kube-apiserver"),
            "--kube-controller-manager-binary", os.path.join(b, "kube-controller-manager"),
            "--kube-scheduler-binary", os.path.join(b, "kube-scheduler"),
            "--kwok-controller-binary", os.path.join(b, "kwok"),
            "--wait", "%ds" % params["wait_timeout"]] + list(params.get("create_args") or [])


def readyz_argv(where):
    return [where["kubectl"], "--kubeconfig", where["state_kubeconfig"], "get", "--raw", "/readyz", "--request-timeout", "3s"]


def log_errors(logs_dir):
    """The last error line of each component's log (etcd's JSON error/fatal, klog's E/F lines)."""
    found = []
    for path in sorted(glob.glob(os.path.join(logs_dir, "*.log"))):
        try:
            with open(path, "r", encoding="utf-8", errors="replace") as handle:
                lines = [line.rstrip("\n") for line in handle if _LOG_ERROR.search(line)]
        except OSError:
            continue
        if lines:
            line = _JSON_MSG.sub(r"\1: \2", lines[-1])
            found.append("%s: %s" % (os.path.basename(path), line[:240]))
    return found


def _last_line(*texts):
    for text in texts:
        lines = [line for line in (text or "").splitlines() if line.strip()]
        if lines:
            return lines[-1][:300]
    return "?"


# ------------------------------------------------------------------------------------- run


def ensure(params, run, check_mode=False):
    """Bring the cluster up; ``run(argv)`` returns ``(rc, stdout, stderr)``. Returns the module's result."""
    validate(params)
    where = paths(params)
    steps = []

    def kwokctl(*args):
        steps.append(" ".join(args[:2]))
        return run([where["kwokctl"]] + list(args))

    def answers():
        rc, _out, err = run(readyz_argv(where))
        return rc == 0, err

    rc, out, err = run([where["kwokctl"], "get", "clusters"])
    if rc != 0:
        raise GpuopError("kwokctl get clusters failed (rc %d): %s" % (rc, _last_line(err, out)))
    listed = params["name"] in out.split()
    ok, why = answers() if listed else (False, "")
    step = first_step(listed, ok)
    owned = os.path.isfile(where["marker"])
    action = "kept"
    if check_mode:
        action = {"keep": "kept", "start": "would start", "create": "would create"}[step]
        changed = step != "keep"
        if step == "keep":
            changed = _kubeconfig(params, where, True)[0]
        return {"changed": changed, "action": action, "steps": steps, "kubeconfig": params["kubeconfig"]}
    if step == "keep":
        return _result(params, where, steps, action)
    with creation_lock(where["home"], lock_timeout(params["wait_timeout"])):
        action = _start_or_create(params, where, steps, step, owned, kwokctl, answers)
    return _result(params, where, steps, action)


def _start_or_create(params, where, steps, step, owned, kwokctl, answers):
    """kwokctl start (or stop, start, and recreate our own) or create; the action taken."""
    action = "kept"
    if step == "start":
        kwokctl("stop", "cluster", "--name", params["name"])  # what runs of a half-started cluster
        rc, s_out, s_err = kwokctl("start", "cluster", "--name", params["name"], "--wait", "%ds" % params["wait_timeout"])
        again, why = answers() if rc == 0 else (False, s_err)
        verdict = after_start(rc == 0, again, owned)
        if verdict == "refuse":
            raise GpuopError(
                "kwok cluster '%s' exists but neither answers nor starts (%s), and gpuop did not create it (no %s). "
                "Reset it yourself: `kwokctl delete cluster --name %s`, or pick another name with -e gpuop_cluster_name=NAME."
                % (params["name"], _last_line(why, s_err, s_out), where["marker"], params["name"]))
        if verdict == "recreate":
            kwokctl("delete", "cluster", "--name", params["name"])
            step = "create"
        else:
            action = "started"
    if step == "create":
        folder = os.path.dirname(os.path.abspath(params["kubeconfig"]))
        if not os.path.isdir(folder):
            os.makedirs(folder, 0o755)
        # Marked before kwokctl creates it: a cluster of this name left half-created is ours to recreate.
        ensure_file(where["marker"], params["name"] + "\n", 0o600)
        first_errors = []
        for attempt in (1, 2):
            rc, c_out, c_err = kwokctl(*create_argv(params, where)[1:])
            up, why = answers()
            verdict = after_create(up and rc == 0, attempt)
            if verdict == "ok":
                break
            if verdict == "retry":
                first_errors = log_errors(where["logs"])
                kwokctl("delete", "cluster", "--name", params["name"])
                continue
            raise GpuopError(
                "kwok cluster '%s' was created twice and its API server answered neither time (%s). "
                "First attempt: %s. Second attempt: %s. Logs: %s/. The cluster is left as it is for inspection; "
                "the next run deletes and creates it again."
                % (params["name"], _last_line(why, c_err, "no answer"),
                   " | ".join(first_errors) or "no error line in the logs",
                   " | ".join(log_errors(where["logs"])) or "no error line in the logs", where["state"]))
        action = "recreated" if "delete" in " ".join(steps) else "created"
    return action


def _result(params, where, steps, action):
    changed_kubeconfig, _diff = _kubeconfig(params, where, False)
    return {"changed": action != "kept" or changed_kubeconfig, "action": action, "steps": steps,
            "kubeconfig": params["kubeconfig"]}


def _kubeconfig(params, where, check_mode):
    content = read_text(where["state_kubeconfig"])
    if content is None:
        if check_mode:
            return True, {}
        raise GpuopError("kwokctl left no kubeconfig at %s" % where["state_kubeconfig"])
    return ensure_file(params["kubeconfig"], content, 0o600, check_mode)


__all__ = ["ARG_SPEC", "BINARIES", "LOCK_NAME", "after_create", "after_start", "create_argv", "creation_lock", "ensure",
           "first_step", "lock_timeout", "log_errors",
           "paths", "readyz_argv", "validate"]
