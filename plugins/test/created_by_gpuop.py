# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Test plugin: whether a kubeconfig is the one of a kwok cluster gpuop's kwok_cluster role created."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: created_by_gpuop
short_description: Whether a kubeconfig belongs to a kwok cluster that gpuop created
version_added: 1.0.0
description:
  - The role gpuop.gates.kwok_cluster writes, when it creates a cluster, the marker
    C(.gpuop-cluster-<name>) in the kubeconfig's folder; kwokctl names the kubeconfig's current context
    C(kwok-<name>). The test is true when the kubeconfig's current context is C(kwok-<name>) and that
    marker exists beside it.
  - The lab's roles that write to a cluster refuse one for which this is false, unless told.
options:
  _input:
    description: Path of the kubeconfig.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Refuse a cluster gpuop did not create
  ansible.builtin.assert:
    that: kubeconfig is gpuop.gates.created_by_gpuop
"""

RETURN = r"""
_value:
  description: V(true) for a kubeconfig of a cluster gpuop created.
  type: bool
"""

from ansible_collections.gpuop.gates.plugins.module_utils.inputs import created_by_gpuop


class TestModule(object):
    """created_by_gpuop."""

    def tests(self):
        return {"created_by_gpuop": created_by_gpuop}
