"""The roles' input rules (module_utils inputs.py, filter gpuop.gates.input_errors): one table per rule.

The drifted copies the issue names are rows here: a dotted runtime name is accepted (containerd_merge
accepts it), kubernetes.io/gpu is refused (the API refuses it as an extended resource), and the exponent
form of a quantity is accepted (the modules parse it).
"""

import pytest

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import inputs
from ansible_collections.gpuop.gates.plugins.module_utils.containerd_merge import normalize_names
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.node_resources import validate_resource_name
from ansible_collections.gpuop.gates.plugins.module_utils.quantity import parse_quantity

GOOD = [
    ("dns_label", "gpu-lab"), ("dns_label", "a"), ("dns_subdomain", "lab-node-0.example"),
    ("runtime_name", "nvidia"), ("runtime_name", "nvidia.cdi"), ("runtime_name", "nvidia_legacy-2"),
    ("extended_resource", "nvidia.com/gpu"), ("extended_resource", "example.com/dongle"),
    ("quantity", "64Gi"), ("quantity", "500m"), ("quantity", "1e3"), ("quantity", 4),
    ("resource_requests", {}), ("resource_requests", {"cpu": "16", "example.com/dongle": "1", "hugepages-2Mi": "1Gi"}),
    ("resource_requests", {"cpu": "1e3"}),
    ("tolerations", []), ("tolerations", [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
    ("tolerations", [{"operator": "Exists"}]),
    ("tolerations", [{"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}]),
    ("abs_path", "/tmp/x"), ("mount_path", "/tmp/lab@1/var"), ("pod_ref", {}), ("pod_ref", {"namespace": "gpu-lab", "name": "p"}),
    ("containerd_version", 2), ("containerd_version", "3"),
    ("containerd_runtimes", [{"name": "runc"}, {"name": "nvidia.cdi", "cgroup_driver": "cgroupfs"}]),
    ("containerd_dropins", [{"file": "99-nvidia.toml", "runtimes": [{"name": "nvidia"}]}, {"file": "a.toml", "content": ""}]),
    ("non_empty", [1]), ("unique", [1, 2, 3]),
]

BAD = [
    ("dns_label", "Gpu_Lab", "is not a DNS label"), ("dns_label", "a" * 64, "is not a DNS label"),
    ("dns_label", "x\n", "is not a DNS label"), ("dns_subdomain", "node/0", "is not a DNS subdomain"),
    ("runtime_name", "nvidia runtime", "is not a runtime name"), ("runtime_name", ".hidden", "is not a runtime name"),
    ("extended_resource", "kubernetes.io/gpu", "kubernetes.io domain is reserved"),
    ("extended_resource", "gpu", "needs a domain prefix"),
    ("quantity", "64 GiB", "is not a Kubernetes quantity"), ("quantity", True, "is not a Kubernetes quantity"),
    ("resource_requests", {"memory": "1Gi"}, "memory has its own variable"),
    ("resource_requests", {"gpus": "1"}, "the name must be cpu"),
    ("resource_requests", {"example.com/dongle": "0.5"}, "whole units"),
    ("resource_requests", {"cpu": True}, "the value must be a Kubernetes quantity"),
    ("resource_requests", ["cpu"], "must be a mapping"),
    ("tolerations", [{"key": "k", "operator": "In"}], "operator \"In\" must be Equal or Exists"),
    ("tolerations", [{"key": "k", "operator": "Exists", "value": "v"}], "Exists takes no value"),
    ("tolerations", [{"value": "v"}], "an empty key needs operator Exists"),
    ("tolerations", [{"key": "k", "tolerationSeconds": 30}], "with effect NoExecute only"),
    ("tolerations", [{"key": "k", "colour": "blue"}], "has keys colour"),
    ("tolerations", {"key": "k"}, "must be a list"),
    ("abs_path", "relative", "must be an absolute path"), ("mount_dir", "/", "other than /"), ("mount_path", "/tmp/a,b", "mount options"),
    ("pod_ref", {"name": "p"}, "exactly name and namespace"),
    ("containerd_version", 5, "must be one of [2, 3, 4]"),
    ("containerd_runtimes", [{"name": "runc"}, {"name": "runc"}], "names \"runc\" twice"),
    ("containerd_runtimes", [{"name": "a b"}], "is not a runtime name"),
    ("containerd_runtimes", [{"name": "runc", "cgroup_driver": "none"}], "must be systemd or cgroupfs"),
    ("containerd_dropins", [{"file": "../x.toml", "content": ""}], "a name without '/'"),
    ("containerd_dropins", [{"file": "x.toml"}], "needs content, default_runtime_name or runtimes"),
    ("containerd_dropins", [{"file": "x.toml", "version": 9, "content": ""}], "version 9 must be one of"),
    ("non_empty", [], "must not be empty"),
    ("unique", [2201, 2202, 2201], "names 2201 twice"),
]


@pytest.mark.parametrize("rule,value", GOOD, ids=["%s:%r" % g for g in GOOD])
def test_a_good_value_passes(rule, value):
    assert inputs.errors([["some_var", value, rule]]) == []


@pytest.mark.parametrize("rule,value,message", BAD, ids=["%s:%r" % b[:2] for b in BAD])
def test_a_bad_value_gets_one_message_naming_the_variable(rule, value, message):
    found = inputs.errors([["some_var", value, rule]])
    assert len(found) == 1 and found[0].startswith("some_var"), found
    assert message in found[0], found


@pytest.mark.parametrize("check,message", [
    (["n", 0, "at_least", 1], "n=0 must be at least 1"),
    (["n", "0", "at_least", 1], 'n="0" must be at least 1'),
    (["n", True, "at_least", 0], "n=true must be at least 0"),
    (["n", 0.0, "greater_than", 0], "n=0.0 must be greater than 0"),
    (["lvl", "loud", "one_of", ["debug", "info"]], 'lvl="loud" must be one of debug, info'),
    (["paths", ["/etc/x", "/srv/y"], "not_under", ["/etc"]], '"/etc/x" lies under "/etc"'),
    (["nodes", ["ok", "Not_OK"], "dns_subdomain[]"], 'nodes[1]="Not_OK" is not a DNS subdomain'),
    (["nodes", "ok", "dns_subdomain[]"], "must be a list"),
])
def test_rules_with_an_option_and_lists(check, message):
    found = inputs.errors([check])
    assert len(found) == 1 and message in found[0], found


def test_numbers_given_as_strings_pass_as_the_argument_spec_converts_them():
    # -e kwok_cluster_wait_timeout=30 gives the string "30"; the argument spec accepts it as an int.
    assert inputs.errors([["n", "30", "at_least", 1], ["t", "0.5", "greater_than", 0]]) == []


def test_every_failure_is_reported_not_just_the_first():
    found = inputs.errors([["a", "X", "dns_label"], ["b", "ok", "dns_label"], ["c", "Y", "dns_label"]])
    assert [f.split("=")[0] for f in found] == ["a", "c"]


def test_an_unknown_rule_or_a_malformed_check_is_a_programming_error():
    with pytest.raises(GpuopError, match="unknown rule 'dns_lable' for v"):
        inputs.errors([["v", "x", "dns_lable"]])
    with pytest.raises(GpuopError, match="is not \\[variable, value, rule\\]"):
        inputs.errors([["v", "x"]])


@pytest.mark.parametrize("name", ["nvidia", "nvidia.cdi", "a-b_c", "x y", "-x", ""])
def test_runtime_names_agree_with_containerd_merge(name):
    try:
        normalize_names([name])
        merge_accepts = name.strip() != ""
    except GpuopError:
        merge_accepts = False
    assert (inputs.runtime_name(name) is None) == merge_accepts, name


@pytest.mark.parametrize("name", ["nvidia.com/gpu", "kubernetes.io/gpu", "gpu", "requests.x/y", "Example.com/x"])
def test_extended_resources_agree_with_the_module(name):
    try:
        validate_resource_name(name)
        module_accepts = True
    except GpuopError:
        module_accepts = False
    assert (inputs.extended_resource(name) is None) == module_accepts


@pytest.mark.parametrize("value", ["64Gi", "1e3", "1E-3", ".5", "5.", "64 Gi", "Gi", "0x10"])
def test_quantities_agree_with_the_parser(value):
    assert (inputs.quantity(value) is None) == (parse_quantity(value) is not None)


def test_lab_kubeconfig(tmp_path):
    assert inputs.errors([["x_kubeconfig", str(tmp_path / "none"), "lab_kubeconfig", False]]) == \
        ["x_kubeconfig=%s does not exist" % (tmp_path / "none")]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("current-context: kwok-lab\n")
    [message] = inputs.errors([["x_kubeconfig", str(kubeconfig), "lab_kubeconfig", False]])
    assert "gpuop did not create" in message and "x_allow_foreign_cluster: true" in message
    assert inputs.errors([["x_kubeconfig", str(kubeconfig), "lab_kubeconfig", True]]) == []
    (tmp_path / ".gpuop-cluster-lab").write_text("lab\n")
    assert inputs.errors([["x_kubeconfig", str(kubeconfig), "lab_kubeconfig", False]]) == []


def test_the_system_containerd_folder_needs_the_role_flag():
    [message] = inputs.errors([["containerd_config_dir", "//etc//containerd/", "not_system_path", False]])
    assert message == 'containerd_config_dir="//etc//containerd/" lies under /etc/containerd: writing there needs ' \
                      'containerd_config_allow_system_paths: true'
    assert inputs.errors([["containerd_config_dir", "/etc/containerd", "not_system_path", True]]) == []
    assert inputs.errors([["containerd_config_dir", "/etc/containerd-lab", "not_system_path", False]]) == []
