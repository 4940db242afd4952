# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The one error type gpuop's logic raises for bad input or a failed observation.

Modules turn it into a single ``fail_json`` message; anything else escaping is a bug.
"""


class GpuopError(Exception):
    """Bad input or an observation that failed; ``str()`` is the whole user-facing message."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


def call_or_fail(module, function, *args, **kwargs):
    """``function(*args, **kwargs)``'s result, or the module fails with the GpuopError's message alone.

    ``fail_json`` is called outside the ``except`` block: Ansible then attaches no traceback to the failure.
    """
    try:
        result = function(*args, **kwargs)
    except GpuopError as exc:
        error = exc.msg
    else:
        return result
    module.fail_json(msg=error)
    raise AssertionError("fail_json returned")  # pragma: no cover - fail_json exits
