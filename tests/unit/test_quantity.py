"""gpuop.quantity: the one quantity parser (modules and the toolkit_rollout role's filter), as data tables."""

import json
import os
import subprocess
from fractions import Fraction

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.quantity import parse_quantity, same_requests
from gpuop_testlib import ROOT, ansible_env


@pytest.mark.parametrize("value, expected", [
    ("4", Fraction(4)), (4, Fraction(4)), ("1k", Fraction(1000)), ("2k", Fraction(2000)),
    ("32Gi", Fraction(32 * 2 ** 30)), ("1Gi", Fraction(1024 * 2 ** 20)), ("500m", Fraction(1, 2)),
    ("0.5", Fraction(1, 2)), (".5", Fraction(1, 2)), ("1e3", Fraction(1000)), ("100n", Fraction(1, 10 ** 7)),
    ("-2", Fraction(-2)), (" 8 ", Fraction(8)),
    ("abc", None), ("", None), ("64GB", None), ("1.2.3", None), ("Gi", None), ("1\n", Fraction(1)),
    ("1Gi\nx", None), (None, None), (True, None), (0.5, None), ({"a": 1}, None),
])
def test_parse_quantity(value, expected):
    assert parse_quantity(value) == expected


@pytest.mark.parametrize("current, wanted, same", [
    ({"memory": "64Gi"}, {"memory": "64Gi"}, True),
    ({"memory": "64Gi", "cpu": "500m"}, {"memory": "64Gi", "cpu": "0.5"}, True),      # the API's canonical form
    ({"memory": "1Gi"}, {"memory": "1024Mi"}, True),
    ({"memory": "64Gi", "example.com/dongle": "2k"}, {"memory": "64Gi", "example.com/dongle": 2000}, True),
    ({"memory": "64Gi"}, {"memory": "32Gi"}, False),
    ({"memory": "64Gi", "cpu": "1"}, {"memory": "64Gi"}, False),                       # a request dropped
    ({"memory": "64Gi"}, {"memory": "64Gi", "cpu": "1"}, False),                       # a request added
    ({"memory": "lots"}, {"memory": "lots"}, True),                                    # not quantities: as text
    ({"memory": "lots"}, {"memory": "64Gi"}, False),
    (None, {}, True),
])
def test_same_requests(current, wanted, same):
    assert same_requests(current, wanted) is same


def test_the_role_filter_is_the_same_function_on_the_controller(tmp_path):
    """The filter gpuop.gates.same_requests (toolkit_rollout uses it), run by ansible-playbook, answers from this parser."""
    playbook = tmp_path / "filter.yml"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.debug": {"msg": "{{ {'cpu': '500m', 'memory': '1Gi'} | gpuop.gates.same_requests("
                                          "{'cpu': '0.5', 'memory': '1024Mi'}) }} "
                                          "{{ {'cpu': '500m'} | gpuop.gates.same_requests({'cpu': '1'}) }}"}}]}]))
    env = ansible_env({"ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json",
                       "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"})
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), str(playbook)], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["msg"] == "True False"
