# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The roles' input rules that an argument spec cannot say, each in one place.

A role checks its inputs in one assert over the filter ``gpuop.gates.input_errors``, which calls
``errors()`` here with a list of ``[variable, value, rule]`` (or ``[variable, value, rule, option]``).
The answer is a list of messages, each naming its variable; empty when every value is good.

The rules reuse the modules' own definitions: Kubernetes names (names.py), extended resources
(names.validate_resource_name), quantities (quantity.py), containerd runtime names
(containerd_merge). A value a rule accepts is one the module that receives it accepts too.
"""

import json
import os
import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.kwok_cluster import MARKER_PREFIX
from ansible_collections.gpuop.gates.plugins.module_utils.names import DNS1123_LABEL_RE, DNS1123_SUBDOMAIN_RE, RUNTIME_NAME_RE, validate_resource_name
from ansible_collections.gpuop.gates.plugins.module_utils.quantity import parse_quantity

# A qualified name's part after the optional prefix (label keys, toleration keys, resource names).
_QUALIFIED_LOCAL_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?\Z")
_STANDARD_RESOURCE_RE = re.compile(r"^(cpu|ephemeral-storage|hugepages-.+)\Z")
# A path that goes into mount options: no ',' or ':' or space.
_MOUNT_PATH_RE = re.compile(r"^/[A-Za-z0-9._/@+-]*\Z")
CONTAINERD_CONFIG_VERSIONS = (2, 3, 4)
CGROUP_DRIVERS = ("systemd", "cgroupfs")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
# kwokctl's context of a cluster is kwok-<name>; kwok_cluster's marker (kwok_cluster.MARKER_PREFIX) is beside its kubeconfig.
CLUSTER_CONTEXT_PREFIX = "kwok-"


def _show(value):
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_list(value):
    return isinstance(value, (list, tuple))


# ------------------------------------------------------------------------------------ names


def dns_label(value):
    if not isinstance(value, str) or len(value) > 63 or not DNS1123_LABEL_RE.match(value):
        return "is not a DNS label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)"
    return None


def dns_subdomain(value):
    if not isinstance(value, str) or len(value) > 253 or not DNS1123_SUBDOMAIN_RE.match(value):
        return "is not a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253)"
    return None


def runtime_name(value):
    if not isinstance(value, str) or not RUNTIME_NAME_RE.match(value):
        return "is not a runtime name (letters, digits, '.', '_' and '-', starting with a letter or digit)"
    return None


def qualified_name(value):
    """A label or toleration key: an optional DNS-subdomain prefix and '/', then a name part."""
    if not isinstance(value, str) or value.count("/") > 1:
        return "is not a qualified name such as example.com/name"
    prefix, _slash, local = value.rpartition("/")
    if _slash and (len(prefix) > 253 or not DNS1123_SUBDOMAIN_RE.match(prefix)):
        return "has a prefix that is not a DNS subdomain"
    if not _QUALIFIED_LOCAL_RE.match(local):
        return "has a name part that is not 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def extended_resource(value):
    try:
        validate_resource_name(value)
    except GpuopError as err:
        return "is refused: %s" % err
    return None


# ------------------------------------------------------------------------------- quantities


def quantity(value):
    if parse_quantity(value) is None:
        return "is not a Kubernetes quantity (such as 64Gi, 500m, 1e3 or 4)"
    return None


def resource_requests(value):
    """A container's extra requests: {name: quantity}; memory has its own variable, an extended
    resource is asked in whole units."""
    if not isinstance(value, dict):
        return "must be a mapping of resource name to quantity"
    for name, amount in value.items():
        where = "%s: %s" % (_show(name), _show(amount))
        if not isinstance(name, str) or name == "memory":
            return "%s: memory has its own variable; other names are cpu, ephemeral-storage, hugepages-<size> " \
                   "or a qualified name such as example.com/dongle" % where
        if "/" in name:
            if qualified_name(name) is not None:
                return "%s: %s is not a qualified resource name such as example.com/dongle" % (where, _show(name))
        elif not _STANDARD_RESOURCE_RE.match(name) or (
                name.startswith("hugepages-") and parse_quantity(name[len("hugepages-"):]) is None):
            return "%s: the name must be cpu, ephemeral-storage, hugepages-<size> or a qualified name " \
                   "such as example.com/dongle" % where
        if isinstance(amount, bool) or not isinstance(amount, (str, int)):
            return "%s: the value must be a Kubernetes quantity such as \"64\", \"500m\" or \"2Gi\"" % where
        parsed = parse_quantity(amount)
        if parsed is None or parsed < 0:
            return "%s: the value must be a Kubernetes quantity such as \"64\", \"500m\" or \"2Gi\"" % where
        if "/" in name and "kubernetes.io/" not in name and parsed.denominator != 1:
            return "%s: an extended resource is asked in whole units" % where
    return None


# ------------------------------------------------------------------------------ tolerations


def toleration(item):
    if not isinstance(item, dict):
        return "is not a mapping"
    extra = sorted(set(item) - set(TOLERATION_KEYS))
    if extra:
        return "has keys %s; a toleration has key, operator, value, effect and tolerationSeconds" % ", ".join(map(str, extra))
    key = item.get("key", "") or ""
    operator = item.get("operator", "Equal") or "Equal"
    value = item.get("value", "") or ""
    effect = item.get("effect", "") or ""
    if not isinstance(key, str) or (key and qualified_name(key) is not None):
        return "key %s is not a label key" % _show(key)
    if operator not in ("Equal", "Exists"):
        return "operator %s must be Equal or Exists" % _show(operator)
    if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
        return "value %s is not a label value" % _show(value)
    if operator == "Exists" and value:
        return "operator Exists takes no value"
    if not key and operator != "Exists":
        return "an empty key needs operator Exists"
    if effect not in TAINT_EFFECTS:
        return "effect %s must be NoSchedule, PreferNoSchedule or NoExecute" % _show(effect)
    if "tolerationSeconds" in item and (not _is_int(item["tolerationSeconds"]) or effect != "NoExecute"):
        return "tolerationSeconds must be an integer, with effect NoExecute only"
    return None


def tolerations(value):
    if not _is_list(value):
        return "must be a list of tolerations"
    for index, item in enumerate(value):
        problem = toleration(item)
        if problem:
            return "[%d]=%s: %s" % (index, _show(item), problem)
    return None


def pod_ref(value):
    """{} (no pod) or {namespace, name} of a pod."""
    if value in ({}, None):
        return None
    if not isinstance(value, dict) or sorted(value) != ["name", "namespace"]:
        return "must be {} or have exactly name and namespace"
    if dns_label(value["namespace"]):
        return "has a namespace that %s" % dns_label(value["namespace"])
    if dns_subdomain(value["name"]):
        return "has a name that %s" % dns_subdomain(value["name"])
    return None


# ------------------------------------------------------------------------------------ paths


def abs_path(value):
    if not isinstance(value, str) or not value.startswith("/"):
        return "must be an absolute path"
    return None


def mount_path(value):
    if not isinstance(value, str) or not _MOUNT_PATH_RE.match(value):
        return "must be an absolute path of letters, digits and ._/@+- (it goes into mount options)"
    return None


def mount_dir(value):
    """A folder to confine: a mount path other than / itself."""
    problem = mount_path(value)
    if problem:
        return problem
    if not value.strip("/"):
        return "must be a folder other than /"
    return None


def not_under(value, folders):
    """``value`` (a path, or a list of paths) lies in none of ``folders``."""
    paths = value if _is_list(value) else [value]
    for path in paths:
        for folder in folders or []:
            top = str(folder).rstrip("/") or "/"
            norm = re.sub("/+", "/", str(path))
            if norm == top or norm.startswith(top.rstrip("/") + "/"):
                return "%s lies under %s" % (_show(path), _show(folder))
    return None


# The host's own containerd folder: a role writes there only when told (its <role>_allow_system_paths).
SYSTEM_CONTAINERD_DIRS = ("/etc/containerd",)


def not_system_path(value, allowed):
    if allowed:
        return None
    problem = not_under(value, SYSTEM_CONTAINERD_DIRS)
    if problem:
        return "lies under %s: writing there needs {role}_allow_system_paths: true" % SYSTEM_CONTAINERD_DIRS[0]
    return None


def lab_kubeconfig(value, allow_foreign):
    """An existing kubeconfig of a cluster gpuop's kwok_cluster created, unless ``allow_foreign``."""
    path = os.path.expanduser(str(value))
    if not os.path.isfile(path):
        return "does not exist"
    if allow_foreign or created_by_gpuop(path):
        return None
    return ("is of a cluster gpuop did not create (no kwok_cluster marker .gpuop-cluster-<name> beside it): "
            "this lab role writes there only with {allow}: true")


def created_by_gpuop(kubeconfig):
    """Whether ``kubeconfig``'s current context is kwok-<name> and the marker .gpuop-cluster-<name> is beside it."""
    import yaml
    path = os.path.expanduser(str(kubeconfig))
    try:
        with open(path) as handle:
            config = yaml.safe_load(handle)
    except (OSError, ValueError, yaml.YAMLError):
        return False
    context = config.get("current-context") if isinstance(config, dict) else None
    if not isinstance(context, str) or not context.startswith(CLUSTER_CONTEXT_PREFIX) \
            or len(context) == len(CLUSTER_CONTEXT_PREFIX):
        return False
    name = context[len(CLUSTER_CONTEXT_PREFIX):]
    if "/" in name:
        return False
    return os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(path)), MARKER_PREFIX + name))


# ---------------------------------------------------------------------------- containerd


def _runtime_entry(item, default_driver):
    if not isinstance(item, dict) or "name" not in item:
        return "%s needs a name" % _show(item)
    problem = runtime_name(item["name"])
    if problem:
        return "name %s %s" % (_show(item["name"]), problem)
    driver = item.get("cgroup_driver", default_driver)
    if driver not in CGROUP_DRIVERS:
        return "%s: cgroup_driver %s must be systemd or cgroupfs" % (item["name"], _show(driver))
    return None


def _unique(names, what):
    seen = set()
    for name in names:
        if name in seen:
            return "names %s twice" % _show(name) if what == "name" else "names the file %s twice" % _show(name)
        seen.add(name)
    return None


def containerd_runtimes(value, default_driver="systemd"):
    """The main file's runtimes: [{name, cgroup_driver?}], each name once."""
    if not _is_list(value):
        return "must be a list of runtimes"
    for item in value:
        problem = _runtime_entry(item, default_driver)
        if problem:
            return "entry " + problem
    return _unique([item["name"] for item in value], "name")


def containerd_dropins(value, default_driver="systemd"):
    """The drop-ins: [{file, version?, content | runtimes | default_runtime_name}], each file once."""
    if not _is_list(value):
        return "must be a list of drop-ins"
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("file"), str) or "/" in item["file"] \
                or item["file"] in ("", ".", ".."):
            return "entry %s needs file, a name without '/'" % _show(item)
        where = "entry %s" % _show(item["file"])
        if "version" in item and not (_is_int(item["version"]) or str(item["version"]).isdigit()) \
                or "version" in item and int(item["version"]) not in CONTAINERD_CONFIG_VERSIONS:
            return "%s: version %s must be one of %s" % (where, _show(item.get("version")), list(CONTAINERD_CONFIG_VERSIONS))
        runtimes = item.get("runtimes") or []
        if "content" not in item and not runtimes and "default_runtime_name" not in item:
            return "%s needs content, default_runtime_name or runtimes" % where
        if not _is_list(runtimes):
            return "%s: runtimes must be a list" % where
        for runtime in runtimes:
            problem = _runtime_entry(runtime, default_driver)
            if problem:
                return "%s: runtime %s" % (where, problem)
    return _unique([item["file"] for item in value], "file")


def containerd_version(value):
    if not (_is_int(value) or (isinstance(value, str) and value.isdigit())) or int(value) not in CONTAINERD_CONFIG_VERSIONS:
        return "must be one of %s" % list(CONTAINERD_CONFIG_VERSIONS)
    return None


# ---------------------------------------------------------------------------------- generic


def _number(value):
    """A number, or a string the argument spec converts to one (``-e x=30`` gives the string "30")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def at_least(value, minimum):
    number = _number(value)
    if number is None or number < minimum:
        return "must be at least %s" % minimum
    return None


def greater_than(value, minimum):
    number = _number(value)
    if number is None or number <= minimum:
        return "must be greater than %s" % minimum
    return None


def non_empty(value):
    if not value:
        return "must not be empty"
    return None


def unique(value):
    """A list whose elements are all different."""
    if not _is_list(value):
        return "must be a list"
    seen = []
    for item in value:
        if item in seen:
            return "names %s twice" % _show(item)
        seen.append(item)
    return None


def one_of(value, choices):
    if value not in choices:
        return "must be one of %s" % ", ".join(map(str, choices))
    return None


RULES = {
    "dns_label": dns_label,
    "dns_subdomain": dns_subdomain,
    "runtime_name": runtime_name,
    "qualified_name": qualified_name,
    "extended_resource": extended_resource,
    "quantity": quantity,
    "resource_requests": resource_requests,
    "tolerations": tolerations,
    "pod_ref": pod_ref,
    "abs_path": abs_path,
    "mount_path": mount_path,
    "mount_dir": mount_dir,
    "not_under": not_under,
    "lab_kubeconfig": lab_kubeconfig,
    "not_system_path": not_system_path,
    "containerd_runtimes": containerd_runtimes,
    "containerd_dropins": containerd_dropins,
    "containerd_version": containerd_version,
    "at_least": at_least,
    "greater_than": greater_than,
    "non_empty": non_empty,
    "one_of": one_of,
    "unique": unique,
}
# Rules that take an option (the fourth element of a check).
_WITH_OPTION = {"not_under", "not_system_path", "lab_kubeconfig", "containerd_runtimes", "containerd_dropins", "at_least",
                "greater_than", "one_of"}


def check(variable, value, rule, *option):
    """One message naming ``variable``, or None. A rule name ending in ``[]`` applies to each element."""
    each = rule.endswith("[]")
    name = rule[:-2] if each else rule
    if name not in RULES:
        raise GpuopError("input_errors: unknown rule %r for %s (known: %s)" % (rule, variable, ", ".join(sorted(RULES))))
    func = RULES[name]
    args = option[:1] if name in _WITH_OPTION else ()
    if each:
        if not _is_list(value):
            return "%s=%s must be a list" % (variable, _show(value))
        for index, item in enumerate(value):
            problem = func(item, *args)
            if problem:
                return "%s[%d]=%s %s" % (variable, index, _show(item), problem)
        return None
    problem = func(value, *args)
    if not problem:
        return None
    if name == "lab_kubeconfig":
        problem = problem.replace("{allow}", variable.rsplit("_kubeconfig", 1)[0] + "_allow_foreign_cluster")
        return "%s=%s %s" % (variable, value, problem)
    if name == "not_system_path":
        problem = problem.replace("{role}", "_".join(variable.split("_")[:2]))
    if name in ("tolerations",) and problem.startswith("["):
        return "%s%s" % (variable, problem)
    return "%s=%s %s" % (variable, _show(value), problem)


def errors(checks):
    """Messages for every failed check of ``checks`` (a list of [variable, value, rule(, option)])."""
    if not _is_list(checks):
        raise GpuopError("input_errors expects a list of [variable, value, rule] checks, got %s" % _show(checks))
    out = []
    for entry in checks:
        if not _is_list(entry) or len(entry) not in (3, 4) or not isinstance(entry[0], str) or not isinstance(entry[2], str):
            raise GpuopError("input_errors: %s is not [variable, value, rule] or [variable, value, rule, option]" % _show(entry))
        problem = check(*entry)
        if problem:
            out.append(problem)
    return out


__all__ = ["RULES", "RUNTIME_NAME_RE", "check", "errors", "created_by_gpuop"]
