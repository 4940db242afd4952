# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""gpuop.gates.nodes_report on the controller runs in the worker process; elsewhere as a module (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuop.gates.plugins.modules import nodes_report as _module
from ansible_collections.gpuop.gates.plugins.plugin_utils.in_process import module_action

ActionModule = module_action(_module)
