# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The roles' one input check: rules an argument spec cannot say, in plugins/module_utils/inputs.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: input_errors
short_description: Messages for the role variables that break a rule an argument spec cannot say
version_added: 1.0.0
description:
  - Takes a list of checks, each V([variable, value, rule]) or V([variable, value, rule, option]), and
    returns one message per failed check, each naming its variable. An empty list means every value is good.
  - "The rules are the modules' own (module_utils C(inputs.py)): V(dns_label), V(dns_subdomain),
    V(runtime_name), V(qualified_name), V(extended_resource), V(quantity), V(resource_requests),
    V(tolerations), V(abs_path), V(mount_path), V(not_under) (option: folders), V(lab_kubeconfig)
    (option: allow a foreign cluster), V(containerd_runtimes) and V(containerd_dropins) (option: the
    default cgroup driver), V(containerd_version), V(at_least) and V(greater_than) (option: the bound),
    V(non_empty), V(one_of) (option: the choices)."
  - A rule name ending in V([]) checks each element of a list.
options:
  _input:
    description: The checks.
    type: list
    elements: list
    required: true
"""

EXAMPLES = r"""
- name: Check the role's inputs
  ansible.builtin.assert:
    that: _errors | length == 0
    fail_msg: "{{ _errors | join('; ') }}"
    quiet: true
  vars:
    _errors: >-
      {{ [['my_namespace', my_namespace, 'dns_label'],
          ['my_resource', my_resource, 'extended_resource'],
          ['my_nodes', my_nodes, 'dns_subdomain[]']] | gpuop.gates.input_errors }}
"""

RETURN = r"""
_value:
  description: One message per failed check, such as C(my_namespace="Gpu_Lab" is not a DNS label (...)).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.inputs import errors


def input_errors(checks):
    try:
        return errors(checks)
    except GpuopError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    """input_errors."""

    def filters(self):
        return {"input_errors": input_errors}
