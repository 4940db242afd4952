# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A TOML 1.0 reader for nodes whose Python has no ``tomllib`` (Python 3.6 to 3.10).

gpuop reads containerd's config files and ``containerd config dump`` output as TOML. The standard
library reads TOML from Python 3.11 on (``tomllib``); older nodes get this module instead, written
from the TOML 1.0 specification (https://toml.io/en/v1.0.0) with tomllib's interface:

* ``loads(text, parse_float=float)`` and ``load(binary_file)`` return plain dicts, lists, str, int,
  float and bool, and ``datetime.datetime`` / ``date`` / ``time`` for TOML's date-times (offset
  date-times carry a ``datetime.timezone``; fractions of a second are cut to microseconds);
* a malformed document raises :class:`TOMLDecodeError` (a ``ValueError``) worded as tomllib words it,
  ending ``(at line L, column C)``, or ``(at end of document)`` when the document ends too early.

Callers take whichever reader the node has::

    tomllib = toml_compat.load_module()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        ...

Like tomllib, the reader recurses into arrays and inline tables: a document nested deeper than
Python's recursion limit raises ``RecursionError``. Windows line endings (CRLF) are read as LF.
No dependency beyond the standard library.
"""

import datetime
import re
import sys
import types

__all__ = ["TOMLDecodeError", "load", "load_module", "loads"]

# How a table came to exist, which decides what may still be written into it (TOML 1.0, "Table").
_IMPLICIT = "implicit"  # only as a parent in a [header]: one [header] of its own may still define it
_EXPLICIT = "explicit"  # defined by a [header] or [[header]] (or the root table)
_DOTTED = "dotted"      # defined by dotted keys: [header]s may add sub-tables, never redefine it

_WS = re.compile(r"[ \t]*")
_BLANK = re.compile(r"[ \t\n]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# Runs of characters a string holds as they are: not a quote, backslash, or control character (tab
# allowed; a multi-line string allows the newline too). DEL (U+007F) is a control character here.
_BASIC_RUN = re.compile(r'[^"\\\x00-\x08\x0a-\x1f\x7f]*')
_MULTILINE_BASIC_RUN = re.compile(r'[^"\\\x00-\x08\x0b-\x1f\x7f]*')
_BAD_IN_LINE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_BAD_IN_MULTILINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_HEX_DIGITS = re.compile(r"[0-9A-Fa-f]*\Z")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
# RFC 3339 date, with an optional time (T, t or a space between) and an optional offset (Z, z, +hh:mm).
_DATE_TIME = re.compile(
    r"([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"(?:[Tt ]([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))?)?")
_LOCAL_TIME = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?")
# Integers (prefixed ones unsigned) and floats; an underscore only between two digits, no leading zero.
_NUMBER = re.compile(
    r"0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*"
    r"|0o[0-7](?:_?[0-7])*"
    r"|0b[01](?:_?[01])*"
    r"|[+-]?(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?")
_SPECIAL_FLOAT = re.compile(r"[+-]?(?:inf|nan)")
_BASES = {"0x": 16, "0o": 8, "0b": 2}
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-\"'")
_UTC = datetime.timezone.utc


class TOMLDecodeError(ValueError):
    """A document that is not TOML 1.0. ``msg``, ``doc``, ``pos``, ``lineno`` and ``colno`` say where."""

    def __init__(self, msg, doc=None, pos=None):
        self.msg = msg
        self.doc = doc
        self.pos = pos
        self.lineno = self.colno = None
        if doc is not None and pos is not None:
            self.lineno = doc.count("\n", 0, pos) + 1
            self.colno = pos - doc.rfind("\n", 0, pos)
            if pos >= len(doc):
                msg = "%s (at end of document)" % msg
            else:
                msg = "%s (at line %d, column %d)" % (msg, self.lineno, self.colno)
        ValueError.__init__(self, msg)


def loads(s, parse_float=float):
    """Parse the TOML document ``s`` (a str) into a dict; raise :class:`TOMLDecodeError` if it is not TOML."""
    text = s.replace("\r\n", "\n")
    return _Reader(text, parse_float).document()


def load(fp, parse_float=float):
    """Parse a TOML document read from ``fp``, a file opened in binary mode (UTF-8, like tomllib)."""
    data = fp.read()
    if not isinstance(data, bytes):
        raise TypeError("File must be opened in binary mode, e.g. use `open('foo.toml', 'rb')`")
    return loads(data.decode(), parse_float=parse_float)


def load_module():
    """The standard library's ``tomllib`` where this Python has it (3.11+), else this module."""
    try:
        import tomllib  # pylint: disable=import-outside-toplevel
    except ImportError:
        return _this_module()
    return tomllib


def _this_module():
    """This module's object, also when it was loaded from a file path without a sys.modules entry."""
    mine = globals()
    module = sys.modules.get(__name__)
    if getattr(module, "__dict__", None) is mine:
        return module
    for module in list(sys.modules.values()):
        if getattr(module, "__dict__", None) is mine:
            return module
    module = types.ModuleType(__name__, __doc__)
    module.__dict__.update((name, mine[name]) for name in __all__)
    return module


class _Reader(object):
    """One pass over one document; ``pos`` is the index of the next character to read."""

    def __init__(self, src, parse_float):
        self.src = src
        self.end = len(src)
        self.pos = 0
        self.parse_float = parse_float
        self.root = {}
        self.kinds = {id(self.root): _EXPLICIT}  # tables of the document's own structure, by id
        self.table_arrays = set()  # ids of the lists made by [[header]]s; every other list is a static array

    # ---- helpers ---------------------------------------------------------------------------

    def fail(self, msg, pos=None):
        """Raise TOMLDecodeError at ``pos`` (default: where reading stands)."""
        raise TOMLDecodeError(msg, self.src, self.pos if pos is None else pos)

    def char(self):
        """The next character, or "" at the end of the document."""
        return self.src[self.pos:self.pos + 1]

    def skip_ws(self):
        """Skip spaces and tabs."""
        self.pos = _WS.match(self.src, self.pos).end()

    def skip_comment(self):
        """Skip a comment (up to, not including, its newline); it may hold no control character but tab."""
        if self.char() != "#":
            return
        stop = self.src.find("\n", self.pos)
        if stop < 0:
            stop = self.end
        bad = _BAD_IN_LINE.search(self.src, self.pos + 1, stop)
        if bad:
            self.fail("Found invalid character %r" % bad.group(), bad.start())
        self.pos = stop

    def skip_blank(self):
        """Whitespace, newlines and comments, as between the values of an array."""
        while True:
            self.pos = _BLANK.match(self.src, self.pos).end()
            if self.char() != "#":
                return
            self.skip_comment()

    # ---- statements ------------------------------------------------------------------------

    def document(self):
        """Read the statements one a line: key/value pairs, [table] and [[array of tables]] headers."""
        table, path = self.root, ()
        while True:
            self.skip_ws()
            char = self.char()
            if not char:
                return self.root
            if char == "\n":
                self.pos += 1
                continue
            if char == "[":
                table, path = self.header()
            elif char in _KEY_START:
                self.key_value(table, path)
            elif char != "#":
                self.fail("Invalid statement")
            self.skip_ws()
            self.skip_comment()
            if self.char() not in ("", "\n"):
                self.fail("Expected newline or end of document after a statement")

    def key(self):
        """A bare, quoted or dotted key (with the whitespace after it), as a tuple of its parts."""
        parts = [self.key_part()]
        self.skip_ws()
        while self.char() == ".":
            self.pos += 1
            self.skip_ws()
            parts.append(self.key_part())
            self.skip_ws()
        return tuple(parts)

    def key_part(self):
        """One part of a key: bare (A-Z a-z 0-9 _ -), basic-quoted or literal-quoted."""
        char = self.char()
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        match = _BARE_KEY.match(self.src, self.pos)
        if not match:
            self.fail("Invalid initial character for a key part")
        self.pos = match.end()
        return match.group()

    def key_value(self, table, path):
        """A key/value pair of the section ``table`` (whose key is ``path``)."""
        key = self.key()
        if self.char() != "=":
            self.fail("Expected '=' after a key in a key/value pair")
        self.pos += 1
        self.skip_ws()
        value = self.value()
        self.put(table, path, key, value)

    def put(self, table, path, key, value):
        """Set ``key`` (relative to the section ``table`` at ``path``) to ``value``, making dotted-key tables."""
        for depth, part in enumerate(key[:-1]):
            child = table.get(part)
            if child is None:
                child = table[part] = {}
                self.kinds[id(child)] = _DOTTED
            elif isinstance(child, dict):
                kind = self.kinds.get(id(child))
                if kind is None:  # an inline table
                    self.fail("Cannot mutate immutable namespace %r" % (path + key[:-1],))
                if kind == _EXPLICIT:
                    self.fail("Cannot redefine namespace %r" % (path + key[:depth + 1],))
                self.kinds[id(child)] = _DOTTED
            elif isinstance(child, list):
                if id(child) in self.table_arrays:
                    self.fail("Cannot redefine namespace %r" % (path + key[:depth + 1],))
                self.fail("Cannot mutate immutable namespace %r" % (path + key[:-1],))
            else:
                self.fail("Cannot overwrite a value")
            table = child
        if key[-1] in table:
            self.fail("Cannot overwrite a value")
        table[key[-1]] = value

    def header(self):
        """A [table] or [[array of tables]] header: return the table it opens and its key."""
        array = self.src.startswith("[[", self.pos)
        self.pos += 2 if array else 1
        self.skip_ws()
        key = self.key()
        table = self.root
        # An inline table or a static array on the way (or as the key) refuses the header with `frozen`, a
        # plain value with "Cannot overwrite a value" (tomllib's wording for each).
        frozen = "Cannot mutate immutable namespace %r" % (key,) if array else "Cannot declare %r twice" % (key,)
        for part in key[:-1]:
            child = table.get(part)
            if child is None:
                child = table[part] = {}
                self.kinds[id(child)] = _IMPLICIT
            elif isinstance(child, list):
                if id(child) not in self.table_arrays:
                    self.fail(frozen)
                child = child[-1]
            elif not isinstance(child, dict):
                self.fail("Cannot overwrite a value")
            elif id(child) not in self.kinds:
                self.fail(frozen)
            table = child
        last = key[-1]
        child = table.get(last)
        if array:
            if child is None:
                child = table[last] = []
                self.table_arrays.add(id(child))
            elif isinstance(child, (list, dict)) and id(child) not in self.kinds and id(child) not in self.table_arrays:
                self.fail(frozen)
            elif not isinstance(child, list):
                self.fail("Cannot overwrite a value")
            new = {}
            child.append(new)
            self.kinds[id(new)] = _EXPLICIT
            if not self.src.startswith("]]", self.pos):
                self.fail("Expected ']]' at the end of an array declaration")
            self.pos += 2
            return new, key
        if child is None:
            child = table[last] = {}
        elif not isinstance(child, (dict, list)):
            self.fail("Cannot overwrite a value")
        elif self.kinds.get(id(child)) != _IMPLICIT:
            self.fail(frozen)
        self.kinds[id(child)] = _EXPLICIT
        if self.char() != "]":
            self.fail("Expected ']' at the end of a table declaration")
        self.pos += 1
        return child, key

    # ---- values ----------------------------------------------------------------------------

    def value(self):
        """Any value; which kind is decided by how it starts, dates before numbers."""
        src, pos = self.src, self.pos
        char = self.char()
        if char == '"':
            return self.multiline_basic_string() if src.startswith('"""', pos) else self.basic_string()
        if char == "'":
            return self.multiline_literal_string() if src.startswith("'''", pos) else self.literal_string()
        if char == "t" and src.startswith("true", pos):
            self.pos += 4
            return True
        if char == "f" and src.startswith("false", pos):
            self.pos += 5
            return False
        if char == "[":
            return self.array()
        if char == "{":
            return self.inline_table()
        match = _DATE_TIME.match(src, pos)
        if match:
            return self.date_time(match)
        match = _LOCAL_TIME.match(src, pos)
        if match:
            self.pos = match.end()
            hour, minute, second, fraction = match.groups()
            return datetime.time(int(hour), int(minute), int(second), _micro(fraction))
        match = _NUMBER.match(src, pos)
        if match:
            self.pos = match.end()
            text = match.group()
            base = _BASES.get(text[:2])
            if base:
                return int(text[2:].replace("_", ""), base)
            if "." in text or "e" in text or "E" in text:
                return self.float(text)
            return int(text.replace("_", ""))
        match = _SPECIAL_FLOAT.match(src, pos)
        if match:
            self.pos = match.end()
            return self.float(match.group())
        return self.fail("Invalid value")

    def float(self, text):
        """A float (``text`` as written, underscores and all) through ``parse_float``."""
        number = self.parse_float(text)
        if isinstance(number, (dict, list)):
            raise ValueError("parse_float must not return dicts or lists")
        return number

    def date_time(self, match):
        """An offset or local date-time, or a local date, from a match of _DATE_TIME."""
        year, month, day, hour, minute, second, fraction, zulu, sign, off_hour, off_minute = match.groups()
        try:
            if hour is None:
                value = datetime.date(int(year), int(month), int(day))
            else:
                zone = None
                if zulu:
                    zone = _UTC
                elif sign:
                    offset = datetime.timedelta(hours=int(off_hour), minutes=int(off_minute))
                    zone = datetime.timezone(-offset if sign == "-" else offset)
                value = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                                          _micro(fraction), tzinfo=zone)
        except ValueError:
            return self.fail("Invalid date or datetime")
        self.pos = match.end()
        return value

    def array(self):
        """An array: values between brackets, commas between, newlines and comments anywhere, a trailing comma."""
        self.pos += 1
        items = []
        while True:
            self.skip_blank()
            if self.char() == "]":
                self.pos += 1
                return items
            items.append(self.value())
            self.skip_blank()
            char = self.char()
            if char == "]":
                self.pos += 1
                return items
            if char != ",":
                self.fail("Unclosed array")
            self.pos += 1

    def inline_table(self):
        """An inline table: on one line, commas between pairs, none trailing; closed to later additions."""
        self.pos += 1
        table = {}
        dotted = set()  # ids of the tables this inline table's own dotted keys made
        self.skip_ws()
        if self.char() == "}":
            self.pos += 1
            return table
        while True:
            key = self.key()
            if self.char() != "=":
                self.fail("Expected '=' after a key in a key/value pair")
            self.pos += 1
            self.skip_ws()
            value = self.value()
            self.put_inline(table, dotted, key, value)
            self.skip_ws()
            char = self.char()
            if char == "}":
                self.pos += 1
                return table
            if char != ",":
                self.fail("Unclosed inline table")
            self.pos += 1
            self.skip_ws()

    def put_inline(self, table, dotted, key, value):
        """Set ``key`` to ``value`` in an inline table; only its own dotted-key tables may grow."""
        for part in key[:-1]:
            child = table.get(part)
            if child is None:
                child = table[part] = {}
                dotted.add(id(child))
            elif isinstance(child, (dict, list)):
                if id(child) not in dotted:
                    self.fail("Cannot mutate immutable namespace %r" % (key,))
            else:
                self.fail("Cannot overwrite a value")
            table = child
        if key[-1] in table:
            self.fail("Duplicate inline table key %r" % key[-1])
        table[key[-1]] = value

    # ---- strings ---------------------------------------------------------------------------

    def escape(self, pos):
        """The escape sequence at ``pos`` (a backslash): return its character and the index after it."""
        src = self.src
        char = src[pos + 1:pos + 2]
        if char in _ESCAPES:
            return _ESCAPES[char], pos + 2
        if char in ("u", "U"):
            size = 4 if char == "u" else 8
            digits = src[pos + 2:pos + 2 + size]
            if len(digits) != size or not _HEX_DIGITS.match(digits):
                self.fail("Invalid hex value", pos + 2)
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                self.fail("Escaped character is not a Unicode scalar value", pos + 2 + size)
            return chr(code), pos + 2 + size
        return self.fail("Unescaped '\\' in a string", pos + 2)

    def basic_string(self):
        """A basic string ("..."): escapes, no control character but tab."""
        src = self.src
        pos = self.pos + 1
        out = []
        while True:
            run = _BASIC_RUN.match(src, pos)
            out.append(run.group())
            pos = run.end()
            char = src[pos:pos + 1]
            if char == '"':
                self.pos = pos + 1
                return "".join(out)
            if char == "\\":
                text, pos = self.escape(pos)
                out.append(text)
            elif not char:
                self.fail("Unterminated string", pos)
            else:
                self.fail("Illegal character %r" % char, pos)

    def multiline_basic_string(self):
        """A multi-line basic string: a newline right after the opening quotes is dropped."""
        src = self.src
        pos = self.pos + 3
        if src.startswith("\n", pos):
            pos += 1
        out = []
        while True:
            run = _MULTILINE_BASIC_RUN.match(src, pos)
            out.append(run.group())
            pos = run.end()
            char = src[pos:pos + 1]
            if char == '"':
                if src.startswith('"""', pos):
                    extra = _closing_quotes(src, pos + 3, '"')
                    out.append('"' * extra)
                    self.pos = pos + 3 + extra
                    return "".join(out)
                out.append('"')
                pos += 1
            elif char == "\\":
                if src[pos + 1:pos + 2] in (" ", "\t", "\n"):
                    # A line-ending backslash: drop it with all whitespace and newlines after it.
                    pos = _WS.match(src, pos + 1).end()
                    if not src.startswith("\n", pos):
                        self.fail("Unescaped '\\' in a string", pos)
                    pos = _BLANK.match(src, pos).end()
                else:
                    text, pos = self.escape(pos)
                    out.append(text)
            elif not char:
                self.fail("Unterminated string", pos)
            else:
                self.fail("Illegal character %r" % char, pos)

    def literal_string(self):
        """A literal string ('...'): taken as written, no control character but tab."""
        start = self.pos + 1
        stop = self.src.find("'", start)
        if stop < 0:
            self.fail("Expected \"'\"", self.end)
        bad = _BAD_IN_LINE.search(self.src, start, stop)
        if bad:
            self.fail("Found invalid character %r" % bad.group(), bad.start())
        self.pos = stop + 1
        return self.src[start:stop]

    def multiline_literal_string(self):
        """A multi-line literal string: taken as written but a newline right after the opening quotes."""
        src = self.src
        start = self.pos + 3
        if src.startswith("\n", start):
            start += 1
        stop = src.find("'''", start)
        if stop < 0:
            self.fail("Expected \"'''\"", self.end)
        bad = _BAD_IN_MULTILINE.search(src, start, stop)
        if bad:
            self.fail("Found invalid character %r" % bad.group(), bad.start())
        extra = _closing_quotes(src, stop + 3, "'")
        self.pos = stop + 3 + extra
        return src[start:stop] + "'" * extra


def _closing_quotes(src, pos, quote):
    """How many of the (at most two) quotes right after a closing delimiter belong to the string."""
    if src.startswith(quote, pos):
        return 2 if src.startswith(quote, pos + 1) else 1
    return 0


def _micro(fraction):
    """Microseconds from the digits after a seconds' decimal point (cut, not rounded, to six)."""
    if not fraction:
        return 0
    return int(fraction[:6].ljust(6, "0"))
