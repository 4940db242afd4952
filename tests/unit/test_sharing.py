"""gpuop.sharing: the device plugin's sharing config and its arithmetic, as data tables.

Valid and invalid configs are in tests/fixtures/sharing/*.yaml (the reasons quoted from
k8s-device-plugin's api/config/v1). The last tests run the real gpu_sharing module.
"""

import os

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import sharing
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "sharing")


def load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


VALID = load("valid.yaml")
INVALID = load("invalid.yaml")
LAB_CONFIG = VALID[0]["config"]


@pytest.mark.parametrize("case", VALID, ids=[c["id"] for c in VALID])
def test_valid_configs(case):
    gpus, gib = case["hardware"]
    result = sharing.compute(case["config"], gpus, gib, product=case.get("product"), advertised=case.get("advertised"))
    got = {key: result[key] for key in case["expect"]}
    assert got == case["expect"]
    assert result["slots"] == gpus * result["replicas"]


@pytest.mark.parametrize("case", INVALID, ids=[c["id"] for c in INVALID])
def test_invalid_configs_fail_with_the_device_plugins_reason(case):
    with pytest.raises(GpuopError) as info:
        sharing.compute(case["config"], 4, 40)
    assert info.value.details["field"] == case["field"]
    assert info.value.details["reason"].startswith(case["reason"])
    assert info.value.msg.startswith("invalid sharing config: %s: %s" % (case["field"], case["reason"]))


@pytest.mark.parametrize("text, message", [
    ("{{{", "the sharing config is not valid YAML at line 1"),
    ("sharing: [unclosed\n", "the sharing config is not valid YAML"),
    ("version: v1\n\tsharing: {}\n", "the sharing config is not valid YAML"),
    ("just some words", "the sharing config is not a YAML mapping but a string"),
    ("- version: v1\n", "the sharing config is not a YAML mapping but a list"),
    ("42", "the sharing config is not a YAML mapping but a number"),
])
def test_not_yaml_or_not_a_mapping_is_one_clear_error(text, message):
    with pytest.raises(GpuopError) as info:
        sharing.parse_config(text)
    assert info.value.msg.startswith(message)
    assert "\n" not in info.value.msg


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n"])
def test_empty_config_is_v1_without_sharing_as_in_the_plugin(text):
    config = sharing.parse_config(text)
    assert config["version"] == "v1" and sharing.sharing_strategy(config) == "none"


@pytest.mark.parametrize("gpus, gib, advertised, message", [
    (0, 40, None, "physical_gpus must be at least 1"),
    (-1, 40, None, "physical_gpus must be a whole number >= 0"),
    (4, 0, None, "vram_per_gpu_gib must be greater than 0"),
    (4, "lots", None, "vram_per_gpu_gib must be a number"),
    (4, 40, -3, "advertised must be a whole number >= 0"),
    (4, 40, "twenty", "advertised must be a whole number >= 0"),
])
def test_hardware_inputs_are_checked(gpus, gib, advertised, message):
    with pytest.raises(GpuopError, match=message.replace("(", r"\(")):
        sharing.compute(LAB_CONFIG, gpus, gib, advertised=advertised)


@pytest.mark.parametrize("config, gpus, gib, advertised, text", [
    (LAB_CONFIG, 4, 40, "20",
     "PHYSICAL_GPUS=4\nREPLICAS=5\nADVERTISED=20\nVRAM_PER_GPU_GIB=40\nVRAM_GUARANTEED_PER_SLOT_GIB=0\n"
     "VRAM_SHARED_PER_GPU_GIB=40\nISOLATION=none\n"),
    ("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}", 4, 40.0, 16,
     "PHYSICAL_GPUS=4\nREPLICAS=4\nADVERTISED=16\nVRAM_PER_GPU_GIB=40\nVRAM_GUARANTEED_PER_SLOT_GIB=10\n"
     "VRAM_SHARED_PER_GPU_GIB=0\nISOLATION=memory-and-compute-limits\n"),
    ("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 3}]}}", 2, 40, 6,
     "PHYSICAL_GPUS=2\nREPLICAS=3\nADVERTISED=6\nVRAM_PER_GPU_GIB=40\nVRAM_GUARANTEED_PER_SLOT_GIB=13.333\n"
     "VRAM_SHARED_PER_GPU_GIB=0\nISOLATION=memory-and-compute-limits\n"),
])
def test_slots_text(config, gpus, gib, advertised, text):
    assert sharing.slots_text(sharing.compute(config, gpus, gib, advertised=advertised)) == text


def test_slots_text_needs_the_observed_advertisement():
    with pytest.raises(GpuopError, match="ADVERTISED is an observation"):
        sharing.slots_text(sharing.compute(LAB_CONFIG, 4, 40))


@pytest.mark.parametrize("raw, expected", [
    ("NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"),
    ("Tesla  T4 ", "Tesla-T4"),
    ("NVIDIA GeForce RTX 4090 (rev a1)", "NVIDIA-GeForce-RTX-4090-rev-a1"),
])
def test_product_name_sanitised_like_gfd(raw, expected):
    assert sharing.sanitise(raw) == expected


# ---------------------------------------------------------------------------------------------
# The real module, through `ansible localhost -m gpu_sharing`.

CALLBACK_ENV = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json"}  # see tests/integration/test_daemonset_rollout_live.py


def test_module_writes_slots_txt_idempotently_with_check_and_diff(module_runner, tmp_path):
    dest = tmp_path / "out" / "slots.txt"
    args = {"config": LAB_CONFIG, "physical_gpus": 4, "vram_per_gpu_gib": 40, "advertised": "20",
            "product": "NVIDIA A100-SXM4-40GB", "dest": str(dest)}
    checked = module_runner("gpu_sharing", args, check=True, diff=True, env=CALLBACK_ENV)
    assert checked["changed"] is True and not dest.exists()
    assert checked["diff"]["before"] == "" and checked["diff"]["after"].startswith("PHYSICAL_GPUS=4\n")
    first = module_runner("gpu_sharing", args, env=CALLBACK_ENV)
    assert first["changed"] is True and first["slots"] == 20 and first["advertised_matches"] is True
    assert first["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-SHARED"
    assert dest.read_text() == first["slots_text"]
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    again = module_runner("gpu_sharing", args, env=CALLBACK_ENV)
    assert again["changed"] is False


def test_module_fails_with_the_device_plugins_reason(module_runner):
    bad = LAB_CONFIG.replace("replicas: 5", "replicas: 1")
    result = module_runner("gpu_sharing", {"config": bad, "physical_gpus": 4, "vram_per_gpu_gib": 40}, env=CALLBACK_ENV)
    assert result["failed"] is True
    assert result["msg"] == ("invalid sharing config: sharing.timeSlicing.resources[0].replicas: "
                             "number of replicas must be >= 2 (k8s-device-plugin api/config/v1)")
