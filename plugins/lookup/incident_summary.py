# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Lookup plugin: what the incident showed, one line per step, read from a run's output folder."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: incident_summary
short_description: What the incident showed, one line per step with its view, from the outputs themselves
version_added: 1.1.0
description:
  - Reads the lab's outputs in a folder (C(merge.txt), C(slots.txt), C(rollout.txt), C(runtime-views.json),
    C(unscheduled.txt), C(node-gpu.txt)) on the controller and returns the summary as one text of seven
    lines, each naming the view it shows (written, computed, loaded, scheduled).
  - A missing output gives V(?) or V(not recorded) in its line (a run limited by tags), never an error.
  - The lines are built by C(summary.py) in the collection's module_utils.
options:
  _terms:
    description: The output folder (one).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: What the incident showed
  ansible.builtin.debug:
    msg: "{{ lookup('gpuop.gates.incident_summary', gpuop_root ~ '/out') }}"
"""

RETURN = r"""
_raw:
  description: The summary, seven lines joined by newlines.
  type: list
  elements: str
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpuop.gates.plugins.module_utils.files import read_text
from ansible_collections.gpuop.gates.plugins.module_utils.summary import OUTPUTS, summary_lines


def read_outputs(folder):
    """The text of each output (None for one that is missing); one that cannot be read fails, named."""
    texts = {}
    for name in OUTPUTS:
        try:
            texts[name] = read_text(os.path.join(folder, name))
        except (OSError, UnicodeDecodeError) as err:
            raise AnsibleLookupError("incident_summary: cannot read %s: %s" % (os.path.join(folder, name), err))
    return texts


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if len(terms) != 1 or not isinstance(terms[0], str) or not terms[0]:
            raise AnsibleLookupError("incident_summary takes one output folder, got %r" % (terms,))
        return ["\n".join(summary_lines(read_outputs(terms[0])))]
