# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Filters over gpuop's one quantity parser (plugins/module_utils/quantity.py).

The API stores a quantity in its canonical form (``0.5`` comes back as ``500m``, ``2000`` as ``2k``,
``1024Mi`` as ``1Gi``): toolkit_rollout's "already updated?" decision compares values, not strings, so
that a re-run with the same inputs is recognised and a changed one is applied.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: same_requests
short_description: Whether a container's resource requests equal the wanted ones, by value
version_added: 1.0.0
description:
  - Compares two mappings of resource name to Kubernetes quantity by value (V(500m) equals V(0.5),
    V(1Gi) equals V(1024Mi)), and as a whole, so a request missing on either side is a difference.
options:
  _input:
    description: The requests as the API stored them.
    type: dict
    required: true
  wanted:
    description: The requests wanted.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Tell whether the DaemonSet already asks for the update's requests
  ansible.builtin.set_fact:
    updated: "{{ current_requests | gpuop.gates.same_requests({'memory': '64Gi'}) }}"
"""

RETURN = r"""
_value:
  description: V(true) when both mappings name the same resources with equal quantities.
  type: bool
"""

from ansible_collections.gpuop.gates.plugins.module_utils.quantity import same_requests


class FilterModule(object):
    """same_requests."""

    def filters(self):
        return {"same_requests": same_requests}
