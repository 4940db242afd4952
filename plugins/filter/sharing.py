# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The device plugin's sharing arithmetic on the controller: plugins/module_utils/sharing.py, as gpu_sharing uses it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sharing
short_description: What the NVIDIA device plugin advertises under a sharing config, and what each slot gets
version_added: 1.0.0
description:
  - Parses a device plugin config (time-slicing or MPS) as the device plugin does and returns the same
    mapping as the module M(gpuop.gates.gpu_sharing) (C(resource_name), C(slots), C(replicas),
    C(vram_guaranteed_per_slot_gib), ...), without a module run.
options:
  _input:
    description: The config, YAML or JSON text (the ConfigMap's value).
    type: str
    required: true
  physical_gpus:
    description: GPUs per node.
    type: int
    required: true
  vram_per_gpu_gib:
    description: Memory of each GPU, in GiB.
    type: float
    required: true
  product:
    description: The GPU's product name, for the GPU feature discovery label.
    type: str
"""

EXAMPLES = r"""
- name: The slots four A100s advertise with five replicas
  ansible.builtin.debug:
    msg: "{{ (config_text | gpuop.gates.sharing(4, 40)).slots }}"
"""

RETURN = r"""
_value:
  description: The arithmetic, as M(gpuop.gates.gpu_sharing) returns it.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.sharing import compute


def sharing(config_text, physical_gpus, vram_per_gpu_gib, product=None):
    try:
        return compute(config_text, physical_gpus, vram_per_gpu_gib, product=product)
    except GpuopError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    """sharing."""

    def filters(self):
        return {"sharing": sharing}
