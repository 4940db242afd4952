# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A small TOML writer for parsed containerd configs (what tomllib or toml_compat returned).

Pure logic, standard library only, so it runs on a node's Python 3.8 and later. Tables are written
as ``[a."b.c"]`` headers, indented two spaces per level as containerd's own samples are; values as
TOML 1.0 literals. :func:`dumps` reads its own output back and refuses a document it cannot
reproduce exactly, so a copy written with it means what the original meant.
"""

import datetime
import math
import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.toml_compat import load_module as _toml_module

tomllib = _toml_module()

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def key(name):
    """One key: bare when it can be, else a basic string."""
    return name if _BARE_KEY.fullmatch(name) else string(name)


def string(text):
    """A TOML basic string."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append("\\u%04X" % ord(char))
        else:
            out.append(char)
    return '"%s"' % "".join(out)


def value(item):
    """One TOML value (inline: arrays and tables inside arrays are written inline)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        if math.isnan(item):
            return "nan"
        if math.isinf(item):
            return "inf" if item > 0 else "-inf"
        return repr(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, (datetime.datetime, datetime.date, datetime.time)):
        return item.isoformat()
    if isinstance(item, list):
        return "[%s]" % ", ".join(value(one) for one in item)
    if isinstance(item, dict):
        return "{%s}" % ", ".join("%s = %s" % (key(k), value(v)) for k, v in item.items())
    raise GpuopError("cannot write a %s as TOML: %r" % (type(item).__name__, item))


def _is_table_array(item):
    return isinstance(item, list) and bool(item) and all(isinstance(one, dict) for one in item)


def _emit(lines, path, table, depth):
    indent = "  " * depth
    for name, item in table.items():
        if not isinstance(item, dict) and not _is_table_array(item):
            lines.append("%s%s = %s" % (indent, key(name), value(item)))
    for name, item in table.items():
        if isinstance(item, dict):
            sub = path + [key(name)]
            lines.append("%s[%s]" % ("  " * depth, ".".join(sub)))
            _emit(lines, sub, item, depth + 1)
        elif _is_table_array(item):
            sub = path + [key(name)]
            for one in item:
                lines.append("%s[[%s]]" % ("  " * depth, ".".join(sub)))
                _emit(lines, sub, one, depth + 1)


def dumps(document, header=""):
    """``document`` (a dict as tomllib returns it) as TOML text; ``header`` lines come first as comments.

    Top-level keys come first, then each table with its own keys before its sub-tables. Raises
    GpuopError when the text would not read back as ``document``.
    """
    lines = ["# " + line if line else "#" for line in header.splitlines()]
    _emit(lines, [], document, 0)
    text = "\n".join(lines) + "\n"
    try:
        back = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuopError("gpuop's TOML writer produced text it cannot read back (%s): not written" % exc)
    if _normalized(back) != _normalized(document):
        raise GpuopError("gpuop's TOML writer cannot reproduce this table exactly: not written")
    return text


def _normalized(item):
    # NaN never equals itself: compare its text instead.
    if isinstance(item, float) and math.isnan(item):
        return "nan"
    if isinstance(item, dict):
        return {k: _normalized(v) for k, v in item.items()}
    if isinstance(item, list):
        return [_normalized(v) for v in item]
    return item
