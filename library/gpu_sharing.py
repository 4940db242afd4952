#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Ansible module: the NVIDIA device plugin's sharing config, parsed as the plugin does, and its arithmetic."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_sharing
short_description: Parse an NVIDIA device plugin sharing config (time-slicing, MPS) and compute slots and memory per slot
description:
  - Parses O(config), the device plugin's config file as a string (a ConfigMap's data value), the way
    k8s-device-plugin's C(api/config/v1) does, and fails with the plugin's own reason and the field
    when the plugin would refuse it (C(number of replicas must be >= 2), C(unknown version) for C(version=v2),
    C(no resources specified), C(incorrect format for resource name ...)).
  - Returns, for O(physical_gpus) GPUs of O(vram_per_gpu_gib) GiB each, the slots advertised, the
    resource name advertised, memory guaranteed per slot and shared per GPU, the isolation, and the
    labels GPU Feature Discovery would set.
  - Time-slicing divides nothing (each slot may use the whole GPU memory, guaranteed 0, all of it
    shared, isolation V(none)); MPS gives each client C(total/replicas) of pinned memory and
    C(100/replicas) percent of the SMs (guaranteed C(total/replicas), nothing shared, isolation
    V(memory-and-compute-limits), with no fault isolation). MPS wins when both are set.
  - Like the plugin, a custom C(rename) or C(devices) is ignored with a warning; only
    C(renameByDefault) (C(<name>.shared)) renames. A missing C(version) means C(v1).
  - With O(dest), writes C(slots.txt) (seven C(KEY=value) lines); O(advertised) is then required,
    since that line is an observation from the node.
version_added: "1.0.0"
author: gpuop contributors (!UNKNOWN)
options:
  config:
    description:
      - The device plugin's config as YAML text, e.g. the C(data.any) value of the
        C(time-slicing-config) ConfigMap read back from the cluster.
    type: str
    required: true
  physical_gpus:
    description:
      - Physical GPUs on the node (at least 1).
    type: int
    required: true
  vram_per_gpu_gib:
    description:
      - Memory of one GPU in GiB (e.g. C(40) for an A100 40GB).
    type: float
    required: true
  product:
    description:
      - The GPU's product name as NVML reports it (e.g. C(NVIDIA A100-SXM4-40GB)), for the
        C(nvidia.com/gpu.product) label. The label is left out when omitted.
    type: str
  advertised:
    description:
      - The value the node advertises for the shared resource (its C(status.allocatable)), as
        observed. Returned as is and compared with the computed slots; required with O(dest).
    type: int
  dest:
    description:
      - Write C(slots.txt) here (mode 0644, atomically, only when the content differs).
    type: path
attributes:
  check_mode:
    support: full
    description: Everything is computed; O(dest) is not written.
  diff_mode:
    support: full
    description: Before and after of O(dest).
notes:
  - Pure computation; no cluster access. Source of the rules read for this module
    (k8s-device-plugin C(api/config/v1), C(internal/lm/resource.go),
    C(cmd/mps-control-daemon/mps/daemon.go)) is named in C(module_utils/gpuop/sharing.py).
"""

EXAMPLES = r"""
- name: Time-slicing arithmetic for 4 x A100 40GB, written to slots.txt
  gpuop.gates.gpu_sharing:
    config: "{{ __gpuop_cm.resources[0].data.any }}"
    physical_gpus: 4
    vram_per_gpu_gib: 40
    product: NVIDIA A100-SXM4-40GB
    advertised: "{{ __gpuop_node.status.allocatable['nvidia.com/gpu'] }}"
    dest: "{{ gpuop_root }}/out/slots.txt"
  register: __gpuop_slots

- name: What MPS with 4 replicas would give
  gpuop.gates.gpu_sharing:
    config: |
      version: v1
      sharing:
        mps:
          resources:
            - name: nvidia.com/gpu
              replicas: 4
    physical_gpus: 4
    vram_per_gpu_gib: 40
"""

RETURN = r"""
version:
  description: The config version (C(v1); a missing version means v1).
  returned: always
  type: str
  sample: v1
strategy:
  description: Sharing strategy of C(nvidia.com/gpu), as the C(nvidia.com/gpu.sharing-strategy) label
    has it (V(none) unless that resource is replicated).
  returned: always
  type: str
  sample: time-slicing
resource_name:
  description: The resource name the plugin advertises for full GPUs.
  returned: always
  type: str
  sample: nvidia.com/gpu
renamed:
  description: Whether the resource is advertised under another name (C(renameByDefault)).
  returned: always
  type: bool
  sample: false
replicas:
  description: Replicas per physical GPU (1 when not shared).
  returned: always
  type: int
  sample: 5
physical_gpus:
  description: O(physical_gpus).
  returned: always
  type: int
  sample: 4
slots:
  description: Slots advertised, physical GPUs times replicas.
  returned: always
  type: int
  sample: 20
advertised:
  description: O(advertised) as observed; null when not given.
  returned: always
  type: int
  sample: 20
advertised_matches:
  description: Whether O(advertised) equals RV(slots); null when O(advertised) is not given.
  returned: always
  type: bool
  sample: true
fail_requests_greater_than_one:
  description: Whether a request for more than one shared slot fails at admission (MPS defaults to true).
  returned: always
  type: bool
  sample: true
vram_per_gpu_gib:
  description: O(vram_per_gpu_gib).
  returned: always
  type: float
  sample: 40
vram_guaranteed_per_slot_gib:
  description: Memory a slot is guaranteed, in GiB (time-slicing 0; MPS total/replicas; unshared the whole GPU).
  returned: always
  type: float
  sample: 0
vram_shared_per_gpu_gib:
  description: Memory of one GPU that its slots compete for, in GiB (time-slicing all of it; MPS 0).
  returned: always
  type: float
  sample: 40
mps_pinned_memory_limit_mib:
  description: Under MPS, the pinned device memory limit per client in MiB (rounded down, as the MPS daemon sets it); null otherwise.
  returned: always
  type: int
  sample: null
mps_active_thread_percentage:
  description: Under MPS, the active thread percentage per client (100/replicas); null otherwise.
  returned: always
  type: int
  sample: null
isolation:
  description: V(none) (time-slicing), V(memory-and-compute-limits) (MPS), V(exclusive) (not shared).
  returned: always
  type: str
  sample: none
labels:
  description: The labels GPU Feature Discovery would set for full GPUs (C(nvidia.com/gpu.product) only with O(product)).
  returned: always
  type: dict
  sample:
    nvidia.com/gpu.count: "4"
    nvidia.com/gpu.replicas: "5"
    nvidia.com/gpu.sharing-strategy: time-slicing
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-SHARED
device_plugin_warnings:
  description: The warnings the device plugin would log for this config (ignored C(rename)/C(devices)); each is also a task warning.
  returned: always
  type: list
  elements: str
  sample: []
slots_text:
  description: The slots.txt content; null when O(advertised) is not given.
  returned: always
  type: str
  sample: "PHYSICAL_GPUS=4\nREPLICAS=5\nADVERTISED=20\nVRAM_PER_GPU_GIB=40\nVRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=40\nISOLATION=none\n"
dest:
  description: O(dest); null when not given.
  returned: always
  type: str
  sample: /srv/gpuop/out/slots.txt
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file
from ansible_collections.gpuop.gates.plugins.module_utils.sharing import argument_spec, compute, slots_text


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    changed, diff = False, None
    try:
        result = compute(params["config"], params["physical_gpus"], params["vram_per_gpu_gib"],
                         product=params["product"], advertised=params["advertised"])
        text = slots_text(result) if (params["dest"] or result["advertised"] is not None) else None
        if params["dest"]:
            changed, diff = ensure_file(params["dest"], text, 0o644, module.check_mode)
    except GpuopError as exc:
        module.fail_json(msg=exc.msg)
    for warning in result["device_plugin_warnings"]:
        module.warn("device plugin: " + warning)
    extra = {"diff": diff} if (module._diff and diff is not None) else {}
    module.exit_json(changed=changed, slots_text=text, dest=params["dest"], **dict(result, **extra))


if __name__ == "__main__":
    main()
