# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A TOML key as written in a table header: bare when TOML allows it, else quoted."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: toml_key
short_description: A TOML key, bare when TOML allows it (letters, digits, '_', '-'), else quoted
version_added: 1.0.0
description:
  - V(runc) stays V(runc); V(nvidia.cdi) becomes V("nvidia.cdi"), one key and not two nested tables.
options:
  _input:
    description: The key.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: A runtime's table header
  ansible.builtin.debug:
    msg: "[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.{{ 'nvidia.cdi' | gpuop.gates.toml_key }}]"
"""

RETURN = r"""
_value:
  description: The key as TOML writes it.
  type: str
"""

import json
import re

_BARE = re.compile(r"^[A-Za-z0-9_-]+\Z")


def toml_key(key):
    key = str(key)
    return key if _BARE.match(key) else json.dumps(key)


class FilterModule(object):
    """toml_key."""

    def filters(self):
        return {"toml_key": toml_key}
