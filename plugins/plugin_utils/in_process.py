# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Run a gpuop module inside Ansible's worker process when its task runs on the controller.

A module run costs a new Python, the AnsiballZ payload and the module's imports (about 0.35 s here);
an action plugin that calls the same module's ``main()`` in the worker costs about 0.03 s. Every
module that talks to a cluster runs on the controller anyway, so its action plugin (same name, in
``plugins/action``) is one line: ``ActionModule = module_action(<the module>)``.

What stays the same as a module run, because it *is* the module's own code path:
- ``AnsibleModule`` reads its arguments from the same JSON document (``ANSIBLE_MODULE_ARGS`` with the
  ``_ansible_*`` keys that ``_update_module_args`` adds), encoded and decoded with the same
  serialization profile; so argument-spec validation, check mode, diff and no_log are the module's own;
- its result is printed by ``exit_json``/``fail_json`` into a buffer and parsed by the same
  ``_parse_returned_data`` as a module's stdout, so result keys and one-message errors are identical;
- the task's ``environment:`` is applied to ``os.environ`` (and ``tempfile``'s cached folder) for the
  run and restored after it.

The module runs the normal way (AnsiballZ, a new process) when the task is not on the controller or
cannot run in-process faithfully: another connection than ``local``, ``become``, ``async``, an
``ansible_python_interpreter`` that is not the controller's own Python, or ``gpuop_in_process: false``.

The module file is imported when this plugin is loaded. The linear strategy loads every action
plugin's class in the main process (it checks ``BYPASS_HOST_LOOP``), and workers are forked from it,
so a module's imports (the kubernetes client: 0.19 s) are paid once per playbook run, not per task.
Each worker is a fork, so global state a module leaves behind dies with its task; within one task's
loop the state the module machinery keeps (arguments, warnings) is reset before each item.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence

from ansible.module_utils import basic as _basic
from ansible.module_utils.common import warnings as _warnings
from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

display = Display()

# The serialization profile of every AnsibleModule-based module (module_common's default).
PROFILE = "legacy"
# The task variable that turns in-process execution off (the module then runs as a module).
SWITCH_VAR = "gpuop_in_process"


def same_python(interpreter, executable=None):
    """True when ``interpreter`` (a path, or None/auto) names the Python that runs the controller."""
    if interpreter in (None, "") or str(interpreter).startswith("auto"):
        return True
    executable = executable or sys.executable
    # A virtual environment's python is a link to its base Python; the two differ in what they import.
    # So the folders must be the same one, and the files the same file.
    try:
        interpreter = str(interpreter)
        return (os.path.realpath(os.path.dirname(interpreter)) == os.path.realpath(os.path.dirname(executable))
                and os.path.realpath(interpreter) == os.path.realpath(executable))
    except (OSError, ValueError):
        return False


class _Environment:
    """Apply a task's ``environment:`` to this process for one module run, then restore it."""

    def __init__(self, values):
        self.values = {str(k): to_text(v) for k, v in (values or {}).items()}
        self.saved = {}
        self.saved_tempdir = None

    def __enter__(self):
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value
        # tempfile caches its folder on first use; TMPDIR set here must count.
        self.saved_tempdir = tempfile.tempdir
        if self.values:
            tempfile.tempdir = None
        return self

    def __exit__(self, *exc):
        for key, old in self.saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        tempfile.tempdir = self.saved_tempdir
        return False


class InProcessModuleAction(NormalAction):
    """The normal action, except that a controller task runs ``MODULE.main()`` in this process."""

    MODULE = None  # the module's Python module object, set by module_action()

    def in_process_refusal(self, task_vars):
        """None when this task can run in-process, else the reason it runs as a module."""
        if getattr(self._connection, "transport", None) != "local":
            return "connection %s" % getattr(self._connection, "transport", "?")
        if self._task.async_val:
            return "async"
        if self._play_context.become:
            return "become"
        if not boolean(task_vars.get(SWITCH_VAR, True), strict=False):
            return "%s is false" % SWITCH_VAR
        interpreter = task_vars.get("ansible_python_interpreter")
        if interpreter is not None:
            interpreter = self._templar.template(interpreter)
        if not same_python(interpreter):
            return "ansible_python_interpreter %s is not the controller's Python" % interpreter
        return None

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        refusal = self.in_process_refusal(task_vars)
        if refusal:
            display.vvv("%s: runs as a module (%s)" % (self._task.action, refusal), host=self._play_context.remote_addr)
            return super(InProcessModuleAction, self).run(tmp, task_vars)

        result = ActionBase.run(self, tmp, task_vars)  # check-mode and async support, as the normal action
        del tmp
        display.vvv("%s: runs in-process on the controller" % self._task.action, host=self._play_context.remote_addr)
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        environment = {}
        self._compute_environment_string(raw_environment_out=environment)
        with _Environment(environment):
            data = self._run_in_process(module_args)
        return merge_hash(result, data)

    def _run_in_process(self, module_args):
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
        _basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}, cls=encoder).encode("utf-8")
        _basic._ANSIBLE_PROFILE = PROFILE
        _warnings._global_warnings.clear()
        _warnings._global_deprecations.clear()
        stdout, stderr = io.StringIO(), io.StringIO()
        saved = sys.stdout, sys.stderr
        rc = 0
        crash = crash_trace = None
        try:
            sys.stdout, sys.stderr = stdout, stderr
            self.MODULE.main()
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # a bug in the module: reported as a module failure, as a crashed module run is
            crash = exc
            rc = 1
            crash_trace = traceback.format_exc()
        finally:
            sys.stdout, sys.stderr = saved
            _basic._ANSIBLE_ARGS = None
            _basic._ANSIBLE_PROFILE = None
        if crash is not None:
            return dict(failed=True, rc=rc, msg="MODULE FAILURE: %s: %s" % (type(crash).__name__, crash),
                        exception=crash_trace, module_stdout=stdout.getvalue(), module_stderr=stderr.getvalue())

        data = self._parse_returned_data(dict(rc=rc, stdout=stdout.getvalue(), stderr=stderr.getvalue()), PROFILE)
        # What _execute_module does with a module's parsed result.
        data.pop("_ansible_suppress_tmpdir_delete", None)
        results = data.get("results")
        if results is not None and (not isinstance(results, Sequence) or isinstance(results, str)):
            data["ansible_module_results"] = data.pop("results")
        remove_internal_keys(data)
        for stream in ("stdout", "stderr"):
            if stream in data and stream + "_lines" not in data:
                data[stream + "_lines"] = (data.get(stream) or "").splitlines()
        return data


def module_action(module):
    """The action plugin class for one gpuop module (its Python module object)."""
    return type("ActionModule", (InProcessModuleAction,), {"MODULE": module})
