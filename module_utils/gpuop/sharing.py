# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The NVIDIA device plugin's GPU sharing config (time-slicing, MPS): parse it and do the arithmetic.

Pure: strings and numbers in, plain data out. The parser follows k8s-device-plugin's
``api/config/v1`` (``config.go``, ``sharing.go``, ``replicas.go``, ``resources.go``, ``consts.go``)
and the labeller of GPU Feature Discovery (``internal/lm/resource.go``), read at commit 1b826ac:

* ``version`` defaults to ``v1`` when absent (``parseConfigFrom``); any other value fails with
  ``unknown version: <v>``.
* ``sharing.timeSlicing`` and ``sharing.mps`` share one schema (``ReplicatedResources``):
  ``renameByDefault``, ``failRequestsGreaterThanOne``, ``resources[]`` of ``name``, ``rename``,
  ``devices`` (default ``all``), ``replicas`` (``>= 2``). Both blocks are decoded (and so
  validated) when present; MPS wins when it is set (``Sharing.ReplicatedResources``).
* A resource name without the ``nvidia.com/`` prefix gets it (``NewResourceName``); the part after
  the prefix must be a DNS-1123 subdomain and the whole at most 63 characters. So every shared
  resource lives in ``nvidia.com``: ``example.com/gpu`` or ``kubernetes.io/gpu`` become
  ``nvidia.com/example.com/gpu`` and fail (a ``/`` is not allowed in a subdomain).
* ``renameByDefault: true`` renames every resource without ``rename`` to ``<name>.shared``.
* The device plugin and GFD both call ``DisableResourceNamingInConfig``: a custom ``rename`` and a
  custom ``devices`` are ignored with a warning (only the default ``.shared`` rename and ``all``
  devices are honoured). We return the same warnings.
* MPS without ``failRequestsGreaterThanOne`` defaults it to true (``NewConfig``).

Memory, per GPU of ``V`` GiB shared ``R`` ways:

* time-slicing: nothing is divided. Each slot may allocate the whole ``V``; the ``R`` slots share
  all of it. Guaranteed per slot 0, shared per GPU ``V``, isolation ``none`` (no memory limit, no
  fault isolation).
* MPS: the control daemon sets ``set_default_device_pinned_mem_limit`` to
  ``total/replicas`` (``totalMemory/replicas/1024/1024`` MiB, rounded down: ``daemon.go``
  ``perDevicePinnedDeviceMemoryLimits``) and ``set_default_active_thread_percentage`` to
  ``100/replicas``. Each client gets its own memory partition, so the guaranteed share is
  ``V/R`` and no memory is left that slots compete for: shared per GPU 0. Isolation
  ``memory-and-compute-limits``: memory and SM share are capped per client, but the clients run
  under one MPS server per GPU, so a fatal fault in one still affects the others (no fault
  isolation).
"""

import math
import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_RE

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

CONFIG_VERSION = "v1"
RESOURCE_NAME_PREFIX = "nvidia.com"
DEFAULT_SHARED_SUFFIX = ".shared"
MAX_RESOURCE_NAME_LENGTH = 63
FULL_GPU_RESOURCE = "nvidia.com/gpu"
SOURCE = "k8s-device-plugin api/config/v1"

STRATEGY_NONE = "none"
STRATEGY_TIME_SLICING = "time-slicing"
STRATEGY_MPS = "mps"

ISOLATION = {
    STRATEGY_NONE: "exclusive",
    STRATEGY_TIME_SLICING: "none",
    STRATEGY_MPS: "memory-and-compute-limits",
}

_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character "
                          "(e.g. 'example.com', regex used for validation is '%s')" % DNS1123_SUBDOMAIN)
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_SANITISE_RE = re.compile(r"[^A-Za-z0-9\-_. ]")

SLOTS_KEYS = (
    "PHYSICAL_GPUS", "REPLICAS", "ADVERTISED", "VRAM_PER_GPU_GIB",
    "VRAM_GUARANTEED_PER_SLOT_GIB", "VRAM_SHARED_PER_GPU_GIB", "ISOLATION",
)


class _Invalid(Exception):
    """A decode error of the device plugin, raised with its own wording and the field it hit."""

    def __init__(self, field, reason):
        super().__init__(reason)
        self.field = field
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Go's encoding/json, as far as the config needs it: what a YAML value looks like to it.

def _json_kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"  # dates and the like: sigs.k8s.io/yaml turns them into strings


def _type_error(field, value, go_type, struct_field=None):
    kind = _json_kind(value)
    if kind == "number" and go_type == "int":
        kind = "number %s" % _go_number(value)
    if struct_field:
        reason = "json: cannot unmarshal %s into Go struct field %s of type %s" % (kind, struct_field, go_type)
    else:
        reason = "json: cannot unmarshal %s into Go value of type %s" % (kind, go_type)
    return _Invalid(field, reason)


def _go_number(value):
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _as_bool(field, value):
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _type_error(field, value, "bool")
    return value


def _as_int(field, value):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(field, value, "int")
    if isinstance(value, float):
        if not value.is_integer():
            raise _type_error(field, value, "int")
        value = int(value)
    return value


def _as_str(field, value, go_type="string", struct_field=None):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _type_error(field, value, go_type, struct_field)
    return value


def _as_map(field, value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(field, value, "map[string]json.RawMessage")
    return value


# ---------------------------------------------------------------------------------------------
# api/config/v1

def new_resource_name(field, raw):
    """``NewResourceName``: prefix ``nvidia.com/`` when missing, then check length and format."""
    name = raw
    if not name.startswith(RESOURCE_NAME_PREFIX + "/"):
        name = RESOURCE_NAME_PREFIX + "/" + name
    if len(name) > MAX_RESOURCE_NAME_LENGTH:
        raise _Invalid(field, "fully-qualified resource name must be %d characters or less: %s"
                       % (MAX_RESOURCE_NAME_LENGTH, name))
    short = name.split("/", 1)[1]
    problems = []
    if len(short) > 253:
        problems.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN_RE.match(short):
        problems.append(_DNS1123_SUBDOMAIN_MSG)
    if problems:
        raise _Invalid(field, "incorrect format for resource name '%s': [%s]" % (name, " ".join(problems)))
    return name


def _is_device_ref(item):
    """``ReplicatedDeviceRef``: a GPU index, a MIG index (``0:1``) or a GPU/MIG UUID."""
    if re.match(r"^[0-9]+$", item) or re.match(r"^[0-9]+:[0-9]+$", item):
        return True
    if item.startswith("GPU-"):
        return bool(_UUID_RE.match(item[4:]))
    if item.startswith("MIG-"):
        suffix = item[4:]
        if _UUID_RE.match(suffix):
            return True
        parts = suffix.split("/", 2)
        return (len(parts) == 3 and parts[0].startswith("GPU-") and bool(_UUID_RE.match(parts[0][4:]))
                and all(re.match(r"^[0-9]+$", p) for p in parts[1:]))
    return False


def _decode_devices(field, value):
    """``ReplicatedDevices.UnmarshalJSON``: ``all``, a positive count, or a list of device refs."""
    if isinstance(value, str):
        if value != "all":
            raise _Invalid(field, "devices set as '%s' but the only valid string input is 'all'" % value)
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise _Invalid(field, "devices set as '%d' but a count of devices must be > 0" % value)
        return value
    if isinstance(value, list):
        refs = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
                refs.append(str(item))
                continue
            if isinstance(item, str) and _is_device_ref(item):
                refs.append(item)
                continue
            shown = item if isinstance(item, str) else ""
            raise _Invalid(field, "unsupported type for device in devices list: %s, string" % shown)
        return refs
    raise _Invalid(field, "unrecognized type for devices spec: %s" % value)


def _decode_resource(field, value):
    """``ReplicatedResource.UnmarshalJSON``: name, devices (default all), replicas >= 2, rename."""
    if not isinstance(value, dict):
        raise _type_error(field, value, "map[string]json.RawMessage")
    if "name" not in value:
        raise _Invalid(field, "no resource name specified")
    name = new_resource_name(field + ".name", _as_str(field + ".name", value["name"]))
    devices = _decode_devices(field + ".devices", value.get("devices", "all"))
    if "replicas" not in value:
        raise _Invalid(field, "no replicas specified")
    replicas = _as_int(field + ".replicas", value["replicas"])
    if replicas < 2:
        raise _Invalid(field + ".replicas", "number of replicas must be >= 2")
    rename = ""
    if "rename" in value:
        raw = _as_str(field + ".rename", value["rename"])
        rename = new_resource_name(field + ".rename", raw)
    return {"name": name, "rename": rename, "devices": devices, "replicas": replicas}


def _decode_replicated(field, value):
    """``ReplicatedResources.UnmarshalJSON`` (the block under ``timeSlicing`` or ``mps``)."""
    block = _as_map(field, value)
    rename_by_default = _as_bool(field + ".renameByDefault", block.get("renameByDefault"))
    fail_gt_one = None
    if "failRequestsGreaterThanOne" in block and block["failRequestsGreaterThanOne"] is not None:
        fail_gt_one = _as_bool(field + ".failRequestsGreaterThanOne", block["failRequestsGreaterThanOne"])
    if "resources" not in block:
        raise _Invalid(field + ".resources", "no resources specified")
    raw_resources = block["resources"]
    if raw_resources is None:
        raw_resources = []
    if not isinstance(raw_resources, list):
        raise _type_error(field + ".resources", raw_resources, "[]v1.ReplicatedResource")
    if not raw_resources:
        raise _Invalid(field + ".resources", "no resources specified")
    resources = [_decode_resource("%s.resources[%d]" % (field, i), item) for i, item in enumerate(raw_resources)]
    for resource in resources:
        if rename_by_default and not resource["rename"]:
            resource["rename"] = resource["name"] + DEFAULT_SHARED_SUFFIX
    return {"renameByDefault": rename_by_default, "failRequestsGreaterThanOne": fail_gt_one, "resources": resources}


def _disable_resource_naming(block, block_id, warnings):
    """``DisableResourceNamingInConfig``: what the device plugin and GFD actually honour."""
    if block is None:
        return
    renamed, devices = False, False
    for resource in block["resources"]:
        default_rename = resource["name"] + DEFAULT_SHARED_SUFFIX
        if not block["renameByDefault"] and resource["rename"]:
            renamed = True
            resource["rename"] = ""
        if block["renameByDefault"] and resource["rename"] != default_rename:
            renamed = True
            resource["rename"] = default_rename
        if resource["devices"] != "all":
            devices = True
            resource["devices"] = "all"
    if renamed:
        warnings.append("Setting the 'rename' field in sharing.%s.resources is not yet supported in the config. Ignoring..." % block_id)
    if devices:
        warnings.append("Customizing the 'devices' field in sharing.%s.resources is not yet supported in the config. Ignoring..." % block_id)


def parse_config(text):
    """Parse the device plugin's config string; return its sharing part as plain data.

    Raises GpuopError with the device plugin's reason and the field when the plugin would refuse
    the config, and one plain message when the text is not YAML at all.
    """
    if not HAS_YAML:  # pragma: no cover
        raise GpuopError("the python 'yaml' package is missing")
    if not isinstance(text, str):
        raise GpuopError("the sharing config must be a string (the ConfigMap's data value), got %s" % type(text).__name__)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = " at line %d, column %d" % (mark.line + 1, mark.column + 1)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GpuopError("the sharing config is not valid YAML%s: %s" % (where, problem))
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise GpuopError("the sharing config is not a YAML mapping but a %s; the device plugin fails with: "
                         "unmarshal error: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal %s "
                         "into Go value of type v1.Config" % ({"array": "list"}.get(_json_kind(doc), _json_kind(doc)), _json_kind(doc)))
    try:
        return _decode_config(doc)
    except _Invalid as exc:
        raise GpuopError("invalid sharing config: %s: %s (%s)" % (exc.field, exc.reason, SOURCE),
                         field=exc.field, reason=exc.reason)


def _decode_config(doc):
    # sigs.k8s.io/yaml goes through JSON with sorted keys: "sharing" is decoded before "version",
    # and inside it "mps" before "timeSlicing". The version is checked after decoding.
    sharing_raw = doc.get("sharing")
    if sharing_raw is not None and not isinstance(sharing_raw, dict):
        raise _type_error("sharing", sharing_raw, "v1.Sharing", struct_field="Config.sharing")
    sharing_raw = sharing_raw or {}
    mps = None
    if sharing_raw.get("mps") is not None:
        mps = _decode_replicated("sharing.mps", sharing_raw["mps"])
    time_slicing = None
    if "timeSlicing" in sharing_raw:
        time_slicing = _decode_replicated("sharing.timeSlicing", sharing_raw["timeSlicing"])
    version = _as_str("version", doc.get("version"), struct_field="Config.version")
    if version == "":
        version = CONFIG_VERSION
    if version != CONFIG_VERSION:
        raise _Invalid("version", "unknown version: %s" % version)
    warnings = []
    _disable_resource_naming(time_slicing, "timeSlicing", warnings)
    _disable_resource_naming(mps, "mps", warnings)
    if mps is not None and mps["failRequestsGreaterThanOne"] is None:
        mps["failRequestsGreaterThanOne"] = True
    return {"version": version, "timeSlicing": time_slicing, "mps": mps, "warnings": warnings}


def _is_replicated(block):
    return block is not None and any(r["replicas"] > 1 for r in block["resources"])


def sharing_strategy(config):
    """``Sharing.SharingStrategy``: mps if MPS replicates anything, else time-slicing, else none."""
    if _is_replicated(config["mps"]):
        return STRATEGY_MPS
    if _is_replicated(config["timeSlicing"]):
        return STRATEGY_TIME_SLICING
    return STRATEGY_NONE


def active_block(config):
    """``Sharing.ReplicatedResources``: MPS when set (even if it replicates nothing), else timeSlicing."""
    if config["mps"] is not None:
        return config["mps"]
    return config["timeSlicing"]


def sanitise(text):
    """GFD's ``sanitise``: drop characters outside ``[A-Za-z0-9-_. ]``, join words with ``-``."""
    return "-".join(_SANITISE_RE.sub("", text).split())


# ---------------------------------------------------------------------------------------------
# Arithmetic for given hardware

def _gib(value):
    """A GiB figure as a plain number: whole numbers as int, otherwise rounded to 3 decimals."""
    if float(value).is_integer():
        return int(value)
    return round(float(value), 3)


def format_number(value):
    if value is None:
        return ""
    value = _gib(value) if isinstance(value, float) else value
    return str(value)


def compute(config_text, physical_gpus, vram_per_gpu_gib, product=None, advertised=None):
    """What the device plugin advertises and what each slot gets, for ``physical_gpus`` GPUs of
    ``vram_per_gpu_gib`` GiB each under the config ``config_text``.

    ``advertised`` is the value observed on the node (its allocatable), returned alongside;
    ``product`` is the GPU's product name (e.g. ``NVIDIA A100-SXM4-40GB``) for the GFD label.
    """
    physical_gpus = _positive_int("physical_gpus", physical_gpus)
    vram = _positive_number("vram_per_gpu_gib", vram_per_gpu_gib)
    config = parse_config(config_text)
    strategy_all = sharing_strategy(config)
    block = active_block(config)
    entry = None
    if block is not None:
        entry = next((r for r in block["resources"] if r["name"] == FULL_GPU_RESOURCE), None)
    replicas = entry["replicas"] if entry else 1
    renamed = bool(entry and entry["rename"])
    resource_name = entry["rename"] if renamed else FULL_GPU_RESOURCE
    # GFD: the strategy label is "none" unless this resource itself is replicated.
    strategy = strategy_all if replicas > 1 else STRATEGY_NONE
    fail_gt_one = bool(block and block["failRequestsGreaterThanOne"]) if strategy != STRATEGY_NONE else False

    vram_mib = int(round(vram * 1024))
    if strategy == STRATEGY_MPS:
        per_slot_mib = vram_mib // replicas  # totalMemory/replicas/1024/1024, rounded down
        guaranteed = _gib(per_slot_mib / 1024.0)
        shared = 0
        thread_pct = 100 // replicas
    elif strategy == STRATEGY_TIME_SLICING:
        per_slot_mib = None
        guaranteed = 0
        shared = _gib(vram)
        thread_pct = None
    else:
        per_slot_mib = vram_mib
        guaranteed = _gib(vram)
        shared = 0
        thread_pct = None

    labels = {
        "nvidia.com/gpu.count": str(physical_gpus),
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": strategy,
    }
    if product:
        parts = [sanitise(product)]
        if replicas > 1 and not renamed:
            parts.append("SHARED")
        labels["nvidia.com/gpu.product"] = "-".join(p for p in parts if p)

    observed = None
    if advertised is not None:
        observed = _non_negative_int("advertised", advertised)
    slots = physical_gpus * replicas
    return {
        "version": config["version"],
        "strategy": strategy,
        "resource_name": resource_name,
        "renamed": renamed,
        "replicas": replicas,
        "physical_gpus": physical_gpus,
        "slots": slots,
        "advertised": observed,
        "advertised_matches": None if observed is None else observed == slots,
        "fail_requests_greater_than_one": fail_gt_one,
        "vram_per_gpu_gib": _gib(vram),
        "vram_guaranteed_per_slot_gib": guaranteed,
        "vram_shared_per_gpu_gib": shared,
        "mps_pinned_memory_limit_mib": per_slot_mib if strategy == STRATEGY_MPS else None,
        "mps_active_thread_percentage": thread_pct,
        "isolation": ISOLATION[strategy],
        "labels": labels,
        "device_plugin_warnings": list(config["warnings"]),
    }


def slots_text(result):
    """slots.txt: seven ``KEY=value`` lines. ADVERTISED must have been observed."""
    if result.get("advertised") is None:
        raise GpuopError("ADVERTISED is an observation from the node: pass 'advertised' to write slots.txt")
    values = (
        result["physical_gpus"], result["replicas"], result["advertised"], result["vram_per_gpu_gib"],
        result["vram_guaranteed_per_slot_gib"], result["vram_shared_per_gpu_gib"], result["isolation"],
    )
    return "".join("%s=%s\n" % (key, format_number(value)) for key, value in zip(SLOTS_KEYS, values))


def _positive_int(name, value):
    number = _non_negative_int(name, value)
    if number < 1:
        raise GpuopError("%s must be at least 1, got %r" % (name, value))
    return number


def _non_negative_int(name, value):
    if isinstance(value, bool):
        raise GpuopError("%s must be a whole number, got %r" % (name, value))
    if isinstance(value, str) and re.match(r"^\s*[0-9]+\s*$", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise GpuopError("%s must be a whole number >= 0, got %r" % (name, value))
    return value


def _positive_number(name, value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GpuopError("%s must be a number, got %r" % (name, value))
    if number == float("inf"):
        raise GpuopError("%s must be a finite number, got %r" % (name, value))
    # NaN compares false with everything: it is refused here too, as "not > 0" did.
    if isinstance(value, bool) or number <= 0 or math.isnan(number):
        raise GpuopError("%s must be greater than 0, got %r" % (name, value))
    return number


def argument_spec():
    return {
        "config": {"type": "str", "required": True},
        "physical_gpus": {"type": "int", "required": True},
        "vram_per_gpu_gib": {"type": "float", "required": True},
        "product": {"type": "str"},
        "advertised": {"type": "int"},
        "dest": {"type": "path"},
    }
