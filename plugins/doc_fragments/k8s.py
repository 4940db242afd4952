# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Options every gpuop module that talks to a cluster takes (module_utils/k8s.py K8S_ARG_SPEC)."""


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of the kubeconfig file of the cluster (the lab's own file; the user's default
        kubeconfig is never read implicitly).
    type: path
    required: true
  context:
    description:
      - Context of O(kubeconfig) to use; its current context when omitted.
    type: str
  request_timeout:
    description:
      - Seconds one API request may take.
    type: float
    default: 10.0
"""
