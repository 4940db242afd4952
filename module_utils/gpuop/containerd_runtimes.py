# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Which runtime handlers containerd has: loaded (asked of the running daemon) and after a restart.

Pure logic over real binaries (no AnsibleModule); failures raise :class:`GpuopError`.

Two views, never mixed (docs/facts.md):

* **loaded**: what a running daemon has loaded, asked of the daemon itself through its socket.
  ``ctr --address SOCK plugins ls`` says whether the CRI plugin loaded (containerd 1.x: plugin
  ``io.containerd.grpc.v1 cri``; 2.x: ``io.containerd.cri.v1 runtime``, and the gRPC service
  ``io.containerd.grpc.v1 cri`` fails with it). When it loaded, ``crictl --runtime-endpoint
  unix://SOCK info`` (CRI Status) gives the handlers: the keys of ``.config.containerd.runtimes``.
  When it failed, ``ctr plugins ls -d id==<id>`` gives the plugin's load error, and crictl's own
  answer is kept too. The version is the daemon's (``ctr version``, Server).
* **after-restart**: ``containerd --config F config dump`` re-reads the files on disk now (main +
  imports) and prints what a restart would load; it does not ask the daemon. The runtimes are read
  at ``plugins.<CRI id>.containerd.runtimes`` (``io.containerd.cri.v1.runtime`` from config
  version 3 on, ``io.containerd.grpc.v1.cri`` before), keyed on the plugin path, not on one version
  number. The version is the binary's (``containerd --version``).
"""

import json
import os
import re
import subprocess
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.toml_compat import load_module as _toml_module
from ansible_collections.gpuop.gates.plugins.module_utils.names import RUNTIME_NAME_RE

# The standard library's tomllib from Python 3.11 on, else gpuop's own TOML 1.0 reader (toml_compat), which
# gives the same answers and errors: nodes with Python 3.8 to 3.10 parse containerd's files too.
tomllib = _toml_module()

POLL_INTERVAL = 0.2
VIEW_LOADED = "loaded"
VIEW_AFTER_RESTART = "after-restart"
# (type, id) of the plugin whose failure means "no CRI", in the order they are consulted.
CRI_PLUGINS = (("io.containerd.cri.v1", "runtime"), ("io.containerd.grpc.v1", "cri"))
DUMP_CRI_IDS = ("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri")
_VERSION = re.compile(r"^containerd\s+\S+\s+v?(\S+)")


def argument_spec():
    """Options of the containerd_runtimes module."""
    return dict(
        address=dict(type="path"),
        config=dict(type="path"),
        containerd=dict(type="path", default="/usr/bin/containerd"),
        ctr=dict(type="path", default="/usr/bin/ctr"),
        crictl=dict(type="path", default="crictl"),
        cwd=dict(type="path", default="/"),
        wait_timeout=dict(type="float", default=30.0),
        probe_handlers=dict(type="list", elements="str", default=[]),
        require=dict(type="str"),
        subject=dict(type="str"),
    )


def _run(argv, what, timeout=30, cwd=None):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout, cwd=cwd)
    except FileNotFoundError:
        raise GpuopError("%s: %s not found" % (what, argv[0]))
    except OSError as exc:
        raise GpuopError("%s: cannot run %s: %s" % (what, argv[0], exc))
    except subprocess.TimeoutExpired:
        raise GpuopError("%s: %s did not answer within %ss" % (what, " ".join(argv), timeout))


def _last_line(text):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# --------------------------------------------------------------------------------------------
# Parsers (pure: strings in, data out)
# --------------------------------------------------------------------------------------------

def parse_binary_version(text):
    """``containerd github.com/containerd/containerd 1.6.20~ds1 ...`` -> ``1.6.20~ds1``."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    parts = line.split()
    if len(parts) >= 3 and parts[0] == "containerd":
        return parts[2].lstrip("v")
    raise GpuopError("cannot read a containerd version from %r" % line)


def parse_server_version(text):
    """The Server section of ``ctr version``: its Version line."""
    in_server = False
    for line in (text or "").splitlines():
        if line.strip() == "Server:":
            in_server = True
        elif in_server and line.strip().startswith("Version:"):
            return line.split(":", 1)[1].strip().lstrip("v")
    raise GpuopError("ctr version printed no Server version: %r" % (text or "")[:300])


def parse_plugins(text):
    """Rows of ``ctr plugins ls``: [{type, id, status}] (header skipped)."""
    rows = []
    for line in (text or "").splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 4:
            rows.append({"type": parts[0], "id": parts[1], "status": parts[-1]})
    return rows


def parse_plugin_error(text):
    """The ``Message:`` of the ``Error:`` block of ``ctr plugins ls -d`` (one plugin)."""
    in_error = False
    for line in (text or "").splitlines():
        if line.startswith("Error:"):
            in_error = True
        elif in_error and line.strip().startswith("Message:"):
            return line.split(":", 1)[1].strip()
    return None


def cri_state(rows):
    """('ok' | 'error' | 'absent', failing plugin (type, id) or None) from plugins ls rows."""
    by_key = {(r["type"], r["id"]): r["status"] for r in rows}
    present = [key for key in CRI_PLUGINS if key in by_key]
    if not present:
        return "absent", None
    for key in present:
        if by_key[key] == "error":
            return "error", key
    if all(by_key[key] == "ok" for key in present):
        return "ok", None
    return "pending", None


def runtimes_from_info(info):
    """(sorted handler names, default_runtime_name) from ``crictl info`` JSON."""
    containerd = (info.get("config") or {}).get("containerd") or {}
    runtimes = containerd.get("runtimes")
    if not isinstance(runtimes, dict):
        raise GpuopError("crictl info has no .config.containerd.runtimes table: keys %s" % sorted(info))
    return sorted(runtimes), containerd.get("defaultRuntimeName", containerd.get("default_runtime_name"))


def runtimes_from_dump(text):
    """After-restart view from a ``config dump``: CRI plugin path, runtimes, default, CRI would load."""
    try:
        dump = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuopError("containerd config dump printed malformed TOML: %s" % exc)
    plugins = dump.get("plugins") or {}
    for plugin_id in DUMP_CRI_IDS:
        containerd = (plugins.get(plugin_id) or {}).get("containerd")
        if isinstance(containerd, dict) and ("runtimes" in containerd or "default_runtime_name" in containerd):
            runtimes = containerd.get("runtimes") or {}
            default = containerd.get("default_runtime_name", "")
            loads = default in runtimes
            return {
                "cri_plugin": plugin_id,
                "config_version": dump.get("version"),
                "runtimes": sorted(runtimes),
                "default_runtime_name": default,
                "cri_loads": loads,
                "error": None if loads else ('invalid plugin config: no corresponding runtime configured in '
                                             'containerd.runtimes for containerd default_runtime_name = "%s"'
                                             % default),
            }
    raise GpuopError("containerd config dump has no runtimes under plugins.%s.containerd"
                     % " or plugins.".join(DUMP_CRI_IDS))


# --------------------------------------------------------------------------------------------
# Asking the binaries
# --------------------------------------------------------------------------------------------

def binary_version(containerd):
    proc = _run([containerd, "--version"], "containerd --version")
    if proc.returncode != 0:
        raise GpuopError("%s --version failed: %s" % (containerd, _last_line(proc.stderr)))
    return parse_binary_version(proc.stdout)


def after_restart(containerd, config, cwd="/"):
    """The after-restart view of the files on disk now."""
    if not os.path.isfile(config):
        raise GpuopError("config %s: no such file" % config)
    version = binary_version(containerd)
    argv = [containerd, "--config", config, "config", "dump"]
    proc = _run(argv, "containerd config dump", cwd=cwd)
    view = {"view": VIEW_AFTER_RESTART, "containerd_version": version, "source": " ".join(argv), "cwd": cwd}
    if proc.returncode != 0:
        # containerd refuses the files themselves (a missing import, a drop-in version too high):
        # it would not start at all.
        view.update(cri_plugin=None, config_version=None, runtimes=[], default_runtime_name=None,
                    cri_loads=False, daemon_starts=False, error=_last_line(proc.stderr) or "exit %d" % proc.returncode)
        return view
    view.update(runtimes_from_dump(proc.stdout), daemon_starts=True)
    return view


def _crictl(crictl, address, timeout):
    return [crictl, "--config", "/dev/null", "--runtime-endpoint", "unix://" + address,
            "--image-endpoint", "unix://" + address, "--timeout", "%ds" % max(1, int(timeout))]


def loaded(address, ctr, crictl, wait_timeout=30.0, clock=time.monotonic, sleep=time.sleep):
    """The loaded view of the daemon listening on ``address``.

    Waits (poll 0.2 s, bounded by ``wait_timeout``) until the socket answers and the CRI plugin
    has either loaded or failed, then asks CRI Status (crictl info) or the plugin's error.
    """
    deadline = clock() + wait_timeout
    last = "socket %s absent" % address
    while True:
        if os.path.exists(address):
            version = _run([ctr, "--address", address, "--timeout", "2s", "version"], "ctr version", timeout=10)
            if version.returncode == 0:
                plugins = _run([ctr, "--address", address, "--timeout", "2s", "plugins", "ls"], "ctr plugins ls",
                               timeout=10)
                if plugins.returncode == 0:
                    state, failing = cri_state(parse_plugins(plugins.stdout))
                    if state in ("ok", "error", "absent"):
                        break
                    last = "CRI plugin still %s" % state
                else:
                    last = _last_line(plugins.stderr)
            else:
                last = _last_line(version.stderr)
        if clock() >= deadline:
            raise GpuopError("containerd on %s did not report its CRI plugin within %ss: %s" % (address, wait_timeout, last))
        sleep(POLL_INTERVAL)
    view = {"view": VIEW_LOADED, "containerd_version": parse_server_version(version.stdout), "address": address,
            "cri_loaded": state == "ok", "runtimes": [], "default_runtime_name": None, "error": None,
            "plugin": None, "crictl_error": None, "cri_runtime_handlers": None}
    info_argv = _crictl(crictl, address, 5) + ["info"]
    if state == "ok":
        while True:
            info = _run(info_argv, "crictl info", timeout=15)
            if info.returncode == 0:
                break
            if clock() >= deadline:
                raise GpuopError("crictl info on %s failed until the %ss deadline: %s"
                                 % (address, wait_timeout, _last_line(info.stderr)))
            sleep(POLL_INTERVAL)
        try:
            data = json.loads(info.stdout)
        except ValueError as exc:
            raise GpuopError("crictl info printed no JSON (%s): %r" % (exc, info.stdout[:200]))
        view["runtimes"], view["default_runtime_name"] = runtimes_from_info(data)
        # CRI Status runtime_handlers (containerd >= 2.0; what a kubelet >= 1.30 publishes). None when absent.
        view["cri_runtime_handlers"] = data.get("runtimeHandlers")
        view["source"] = " ".join(info_argv)
        return view
    if state == "absent":
        view["error"] = "no CRI plugin is registered (ctr plugins ls lists neither %s)" % \
            " nor ".join("%s %s" % key for key in CRI_PLUGINS)
        view["source"] = "ctr --address %s plugins ls" % address
        return view
    detail_argv = [ctr, "--address", address, "plugins", "ls", "-d", "id==%s" % failing[1]]
    detail = _run(detail_argv, "ctr plugins ls -d", timeout=10)
    view["plugin"] = "%s %s" % failing
    view["error"] = parse_plugin_error(detail.stdout) or "plugin %s %s: status error" % failing
    view["source"] = " ".join(detail_argv)
    # CRI Status itself, for the record: the daemon has no CRI service to answer it.
    answer = _run(_crictl(crictl, address, 1) + ["info"], "crictl info", timeout=15)
    view["crictl_error"] = _last_line(answer.stderr) if answer.returncode != 0 else None
    return view


# --------------------------------------------------------------------------------------------
# RunPodSandbox probe: containerd's own answer for a handler it has not loaded
# --------------------------------------------------------------------------------------------

PROBE_POD = {"metadata": {"name": "gpuop-handler-probe", "namespace": "gpuop-probe", "uid": "gpuop-handler-probe",
                          "attempt": 0},
             "log_directory": "/nonexistent/gpuop-probe", "linux": {}}
_HANDLER = RUNTIME_NAME_RE
_RPC = re.compile(r"(rpc error: code = \w+ desc = .*)$")
_IMAGE_MISSING = "failed to get sandbox image"


def placeholder_image_archive(ref):
    """An OCI archive (bytes) of an empty image named ``ref``: lets containerd 1.x's RunPodSandbox get
    past its sandbox-image lookup (it pulls the pause image before choosing the runtime; there is no
    registry here). The image is never run: a probe only asks for a handler that is not loaded."""
    import gzip
    import hashlib
    import io
    import tarfile

    blobs = {}

    def add(data, media_type):
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w"):
        pass
    layer_tar = raw.getvalue()
    layer = add(gzip.compress(layer_tar, mtime=0), "application/vnd.oci.image.layer.v1.tar+gzip")
    config = add(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                             "rootfs": {"type": "layers",
                                        "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]}},
                            sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = add(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": config, "layers": [layer]}, sort_keys=True).encode(),
                   "application/vnd.oci.image.manifest.v1+json")
    manifest["annotations"] = {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        files = [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                 ("index.json", json.dumps({"schemaVersion": 2, "manifests": [manifest]}, sort_keys=True).encode())]
        files += [("blobs/sha256/" + d, data) for d, data in sorted(blobs.items())]
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def sandbox_image_of(error):
    match = re.search(r'failed to get sandbox image "([^"]+)"', error or "")
    return match.group(1) if match else None


def _runp(crictl, address, handler, pod_file):
    proc = _run(_crictl(crictl, address, 5) + ["runp", "--runtime", handler, pod_file], "crictl runp", timeout=20)
    lines = [ln for ln in proc.stderr.splitlines() if "run pod sandbox" in ln or "RunPodSandbox" in ln]
    message = None
    for line in lines + proc.stderr.splitlines():
        found = _RPC.search(line.replace('\\"', '"'))
        if found:
            message = found.group(1).rstrip('"').rstrip()
            break
    return proc.returncode, message or _last_line(proc.stderr)


def probe(address, ctr, crictl, handler, loaded_view, workdir, wait_timeout=30.0, clock=time.monotonic,
          sleep=time.sleep):
    """Ask the daemon to start a pod sandbox with ``handler`` and return its refusal.

    Only for a handler the loaded view says is absent while CRI serves: the runtime lookup then
    fails before anything is created. containerd 1.x first looks up its sandbox image; when it is
    missing (no registry), an empty placeholder image of that name is imported into the daemon's
    own store (under its private --root) and the request is asked once more.
    """
    if not _HANDLER.match(handler or ""):
        raise GpuopError("probe_handlers: %r is not a runtime handler name" % (handler,))
    base = {"handler": handler, "rpc": "RunPodSandbox", "message": None, "placeholder_image": None, "skipped": None}
    if not loaded_view["cri_loaded"]:
        base["skipped"] = "the CRI plugin did not load: there is no RunPodSandbox to ask"
        return base
    if handler in loaded_view["runtimes"]:
        base["skipped"] = "the handler is loaded: a probe would create a real sandbox"
        return base
    pod_file = os.path.join(workdir, "gpuop-probe-pod.json")
    with open(pod_file, "w", encoding="utf-8") as handle:
        json.dump(PROBE_POD, handle)
    try:
        rc, message = _runp(crictl, address, handler, pod_file)
        image = sandbox_image_of(message)
        if rc != 0 and image:
            archive = os.path.join(workdir, "gpuop-placeholder-image.tar")
            with open(archive, "wb") as handle:
                handle.write(placeholder_image_archive(image))
            imported = _run([ctr, "--address", address, "-n", "k8s.io", "images", "import", "--no-unpack",
                             "--index-name", image, archive], "ctr images import", timeout=60)
            os.unlink(archive)
            if imported.returncode != 0:
                raise GpuopError("importing the placeholder sandbox image %s failed: %s"
                                 % (image, _last_line(imported.stderr)))
            base["placeholder_image"] = image
            # The CRI plugin learns of the import through an event: ask until it no longer misses the image.
            deadline = clock() + wait_timeout
            while True:
                rc, message = _runp(crictl, address, handler, pod_file)
                if rc == 0 or sandbox_image_of(message) is None or clock() >= deadline:
                    break
                sleep(POLL_INTERVAL)
    finally:
        os.unlink(pod_file)
    if rc == 0:
        raise GpuopError("RunPodSandbox with handler %r succeeded on %s although the loaded view lacks it"
                         % (handler, address))
    base["message"] = message
    return base


def observe(params, clock=time.monotonic, sleep=time.sleep):
    """Both views the parameters allow; at least one of address and config is required."""
    if not params.get("address") and not params.get("config"):
        raise GpuopError("give address (the loaded view of a running daemon), config (the after-restart view), or both")
    if not os.path.isabs(params.get("cwd") or ""):
        raise GpuopError("cwd must be an absolute path, got %r" % (params.get("cwd"),))
    if params.get("require") is not None:
        if not _HANDLER.match(params["require"]):
            raise GpuopError("require: %r is not a runtime name" % (params["require"],))
        if not params.get("address"):
            raise GpuopError("require needs address (a running daemon to ask)")
    out = {"loaded": None, "after_restart": None, "probes": []}
    if params.get("address"):
        out["loaded"] = loaded(params["address"], params["ctr"], params["crictl"], params["wait_timeout"], clock, sleep)
        out["probes"] = [probe(params["address"], params["ctr"], params["crictl"], handler, out["loaded"],
                               os.path.dirname(params["address"]), params["wait_timeout"], clock, sleep)
                         for handler in params.get("probe_handlers") or []]
    elif params.get("probe_handlers"):
        raise GpuopError("probe_handlers needs address (a running daemon to ask)")
    if params.get("config"):
        out["after_restart"] = after_restart(params["containerd"], params["config"], params["cwd"])
    return out


def missing_runtime(view, name, subject=None):
    """The verdict of O(require): None when the loaded ``view`` has runtime ``name`` with its CRI plugin
    loaded, else the one-line failure, ``[<subject> ]containerd <version> has loaded <runtimes>, not <name>``
    and the CRI plugin's error when there is one. Without ``name`` (nothing required), None."""
    if not name or (view["cri_loaded"] and name in view["runtimes"]):
        return None
    text = "containerd %s has loaded %s, not %s" % (view.get("containerd_version") or "",
                                                    ",".join(view["runtimes"]) or "no runtime", name)
    if view.get("error"):
        text += " (CRI plugin: %s)" % view["error"]
    text = "%s %s" % (subject, text) if subject else text
    return text.replace("\r\n", " ").replace("\n", " ")


def handler_summary(view):
    """One line: ``loaded (containerd 1.6.20~ds1): runc`` or the CRI error."""
    if view is None:
        return ""
    names = ",".join(view["runtimes"]) or "none"
    ok = view.get("cri_loaded", view.get("cri_loads"))
    text = "%s (containerd %s): %s" % (view["view"], view["containerd_version"], names)
    if not ok:
        text += "; CRI plugin %s: %s" % ("failed" if view["view"] == VIEW_LOADED else "would fail", view["error"])
    return text
