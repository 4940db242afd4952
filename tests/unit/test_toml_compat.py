"""toml_compat: the pure-Python TOML 1.0 reader for Pythons without tomllib, held to tomllib's answers.

Every document is read by both readers: where tomllib accepts it, the two results must be equal value for
value and type for type (1, 1.0 and True are told apart, NaN equals NaN); where tomllib refuses it,
toml_compat must refuse it with the same message, wording and "(at line L, column C)" alike (no
error class needed a looser comparison). Documents: the TOML files and the containerd configs embedded
in tests/fixtures, a table of valid documents (every TOML 1.0 feature), a table of invalid ones (one
refusal each), every short sequence of table and key statements, and seeded random edits of the fixtures.
Then the reader runs under this machine's Python 3.8, 3.9 and 3.10, which have no tomllib.
"""

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import toml_compat

import datetime
import decimal
import glob
import inspect
import itertools
import json
import math
import os
import random
import subprocess
import tomllib

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MODULE_PATH = os.path.join(ROOT, "module_utils", "gpuop", "toml_compat.py")
OLD_PYTHONS = ["/root/.pyenv/versions/3.8.18/bin/python3", "/root/.pyenv/versions/3.9.18/bin/python3",
               "/root/.pyenv/versions/3.10.13/bin/python3"]


def typed(value):
    """``value`` as a flat, JSON-able table: one row [parent row, key or index, type, ...] per table, array and
    scalar, breadth first, keys sorted. 1, 1.0 and True differ, NaN equals NaN (and keeps its sign), and a
    document thousands of tables deep compares without recursion (hostile/toml/deep-tables.toml is)."""
    rows = []
    queue = [(None, None, value)]
    for parent, key, item in iter(queue):  # the queue grows while it is walked
        here = len(rows)
        if isinstance(item, dict):
            rows.append([parent, key, "dict", len(item)])
            queue.extend((here, name, item[name]) for name in sorted(item))
        elif isinstance(item, list):
            rows.append([parent, key, "list", len(item)])
            queue.extend((here, index, element) for index, element in enumerate(item))
        elif isinstance(item, float):
            rows.append([parent, key, "float", repr(item), math.copysign(1.0, item)])
        else:
            rows.append([parent, key, type(item).__name__, repr(item)])
    return rows


def outcome(reader, text, **kwargs):
    """What ``reader`` (tomllib or toml_compat) makes of ``text``: ["ok", typed], ["error", message] or ["recursion"]."""
    try:
        data = reader.loads(text, **kwargs)
    except RecursionError:  # tomllib recurses into arrays and inline tables too; callers catch this
        return ["recursion"]
    except reader.TOMLDecodeError as exc:
        return ["error", str(exc)]
    return ["ok", typed(data)]


def assert_same(text, **kwargs):
    """toml_compat reads ``text`` as tomllib does; return tomllib's outcome."""
    expected = outcome(tomllib, text, **kwargs)
    assert outcome(toml_compat, text, **kwargs) == expected, "document: %r" % text
    return expected


def mismatches(docs):
    """The documents the two readers disagree on, with both outcomes (for a readable failure)."""
    found = []
    for text in docs:
        expected, got = outcome(tomllib, text), outcome(toml_compat, text)
        if expected != got:
            found.append({"document": text, "tomllib": expected, "toml_compat": got})
    return found


# --------------------------------------------------------------------------------------------
# The TOML documents of tests/fixtures
# --------------------------------------------------------------------------------------------

def _embedded(node, name, where):
    """(id, text) for every TOML file content under a ``files:`` mapping of a YAML fixture."""
    if isinstance(node, dict):
        name = node.get("name", name)
        for key, item in node.items():
            if key == "files" and isinstance(item, dict):
                for path, text in item.items():
                    if isinstance(text, str) and path.endswith(".toml"):
                        yield "%s:%s:%s" % (where, name, path), text
            else:
                for found in _embedded(item, name, where):
                    yield found
    elif isinstance(node, list):
        for item in node:
            for found in _embedded(item, name, where):
                yield found


def fixture_documents():
    """Every TOML document in tests/fixtures, once each: *.toml files, then configs embedded in YAML."""
    docs = {}
    for path in sorted(glob.glob(os.path.join(FIXTURES, "**", "*.toml"), recursive=True)):
        with open(path, "rb") as handle:
            raw = handle.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # hostile/toml/latin1.toml and utf16.toml are not UTF-8 (gpuop refuses them before parsing);
            # read as Latin-1 they are still a str both readers must agree on.
            text = raw.decode("latin-1")
        docs.setdefault(text, os.path.relpath(path, FIXTURES))
    for path in sorted(glob.glob(os.path.join(FIXTURES, "**", "*.y*ml"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        for doc_id, text in _embedded(data, None, os.path.relpath(path, FIXTURES)):
            docs.setdefault(text, doc_id)
    return sorted((doc_id, text) for text, doc_id in docs.items())


FIXTURE_DOCS = fixture_documents()


def test_fixtures_were_found():
    """The glob found the fixtures: the dumps, the live dumps, the hostile files and the merge cases' files."""
    ids = [doc_id for doc_id, _ in FIXTURE_DOCS]
    assert len([i for i in ids if i.startswith("containerd/dumps/")]) >= 8
    assert len([i for i in ids if i.startswith("containerd_live/")]) >= 2
    assert len([i for i in ids if i.startswith("hostile/toml/")]) >= 19
    assert len([i for i in ids if i.startswith("containerd/merge_cases.yml:")]) >= 20


@pytest.mark.parametrize("text", [text for _, text in FIXTURE_DOCS], ids=[doc_id for doc_id, _ in FIXTURE_DOCS])
def test_fixture_document(text):
    assert_same(text)


def test_fixtures_cover_all_three_outcomes():
    """The fixtures hold valid configs, malformed ones and one nested too deep for either reader (deep-arrays.toml)."""
    kinds = set(outcome(tomllib, text)[0] for _, text in FIXTURE_DOCS)
    assert kinds == {"ok", "error", "recursion"}


# --------------------------------------------------------------------------------------------
# Valid documents: every TOML 1.0 feature (https://toml.io/en/v1.0.0)
# --------------------------------------------------------------------------------------------

VALID = [
    ("empty", ""),
    ("blank-lines-and-whitespace", "\n \t\n\n"),
    ("comments-only", "# a comment\n  # indented \t\n#\n"),
    ("comment-after-value", "a = 1 # one\nb = [1] #two\n"),
    ("comment-unicode", "# caf\u00e9 \U0001F600 \x80\n"),
    ("no-final-newline", "a = 1"),
    ("crlf-line-endings", "a = 1\r\nb = \"\"\"x\r\ny\"\"\"\r\n[t]\r\n# c\r\nc = 'z'\r\n"),
    ("tab-indentation", "\t[t]\n\t\ta\t=\t1\t\n"),
    # keys
    ("bare-keys", "key = 1\nbare_key = 2\nbare-key = 3\n1234 = 4\n-_- = 5\n"),
    ("keys-that-look-like-values", "true = 1\nfalse = 2\ninf = 3\nnan = 4\n1979-05-27 = 5\n0x10 = 6\n"),
    ("quoted-keys", "\"127.0.0.1\" = 1\n\"character encoding\" = 2\n\"\u029e\u0287\u028e\" = 3\n'key2' = 4\n"
                    "'quoted \"value\"' = 5\n\"tab\\tkey\" = 6\n"),
    ("empty-quoted-keys", "\"\" = 1\n[t]\n'' = 2\n"),
    ("dotted-keys", "name = \"Orange\"\nphysical.color = \"orange\"\nphysical.shape = \"round\"\n"
                    "site.\"google.com\" = true\n"),
    ("dotted-keys-whitespace", "fruit.name = 1\nfruit. color = 2\nfruit . flavor = 3\n\"a\" . 'b' .c = 4\n"),
    ("dotted-number-keys", "3.14159 = \"pi\"\n"),
    ("dotted-keys-out-of-order", "apple.type = \"fruit\"\norange.type = \"fruit\"\napple.skin = \"thin\"\n"),
    # tables
    ("table", "[table-1]\nkey1 = \"some string\"\nkey2 = 123\n\n[table-2]\nkey1 = \"another string\"\n"),
    ("table-empty", "[a]\n[b]\n"),
    ("table-nested-headers", "[dog.\"tater.man\"]\ntype.name = \"pug\"\n"),
    ("table-header-whitespace", "[a.b.c]\n[ d.e.f ]\n[ g .  h  . i ]\n[ j . \"\u029e\" . 'l' ]\n"),
    ("table-super-table-after", "[x.y.z.w]\n[x]\n"),
    ("table-sub-table-after", "[x]\na = 1\n[x.y]\nb = 2\n"),
    ("table-sub-table-of-dotted-keys", "[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n"
                                       "[fruit.apple.texture]\nsmooth = true\n"),
    ("table-dotted-keys-into-implicit-table", "[a.b.c]\nz = 1\n[a]\nb.y = 2\n[a.b.d]\n"),
    ("table-header-indented-in-section", "[a]\n  b = 1\n  [a.c]\n    d = 2\n"),
    ("root-keys-before-tables", "x = 1\n[t]\ny = 2\n"),
    ("containerd-v2", "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n"
                      "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"nvidia\"\n\n"
                      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                      "  privileged_without_host_devices = false\n  runtime_engine = \"\"\n  runtime_root = \"\"\n"
                      "  runtime_type = \"io.containerd.runc.v2\"\n\n"
                      "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                      "    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n    SystemdCgroup = true\n"),
    ("containerd-v3-single-quoted", "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
                                    "  default_runtime_name = 'runc'\n"
                                    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia.old']\n"
                                    "  runtime_type = 'io.containerd.runc.v2'\n"),
    # arrays of tables
    ("array-of-tables", "[[products]]\nname = \"Hammer\"\nsku = 738594937\n\n[[products]]  # empty\n\n"
                        "[[products]]\nname = \"Nail\"\nsku = 284758393\ncolor = \"gray\"\n"),
    ("array-of-tables-nested", "[[fruits]]\nname = \"apple\"\n[fruits.physical]\ncolor = \"red\"\n"
                               "[[fruits.varieties]]\nname = \"red delicious\"\n[[fruits.varieties]]\nname = \"granny\"\n"
                               "[[fruits]]\nname = \"banana\"\n[[fruits.varieties]]\nname = \"plantain\"\n"),
    ("array-of-tables-subtable-per-element", "[[a]]\n[a.b]\nx = 1\n[[a]]\n[a.b]\nx = 2\n"),
    ("array-of-tables-in-array-of-tables", "[[a]]\n[[a.b]]\n[a.b.c]\n[[a.b]]\n"),
    ("array-of-tables-whitespace", "[[ a . b ]]\n[[\ta.b\t]]\n"),
    # strings
    ("basic-string-escapes", "s = \"\\b \\t \\n \\f \\r \\\" \\\\ \\u00E9 \\U0001F600 \\u0000\"\n"),
    ("basic-string-raw-unicode-and-tab", "s = \"caf\u00e9\t\U0001F600 \u2028\"\n"),
    ("basic-string-empty", "s = \"\"\n"),
    ("literal-strings", "winpath = 'C:\\Users\\nodejs\\templates'\nwinpath2 = '\\\\ServerX\\admin$\\system32\\'\n"
                        "quoted = 'Tom \"Dubs\" Preston-Werner'\nregex = '<\\i\\c*\\s*>'\nempty = ''\n"),
    ("multiline-basic", "s = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n"),
    ("multiline-basic-no-first-newline", "s = \"\"\"Roses\n\nare red\n\"\"\"\n"),
    ("multiline-basic-line-ending-backslash", "s = \"\"\"\\\n       The quick brown \\\n\n\n       fox jumps over \\  \t\n"
                                              "         the lazy dog.\\\n       \"\"\"\n"),
    ("multiline-basic-quotes", "a = \"\"\"Here are two quotation marks: \"\". Simple enough.\"\"\"\n"
                               "b = \"\"\"Here are three quotation marks: \"\"\\\".\"\"\"\n"
                               "c = \"\"\"Here are fifteen quotation marks: \"\"\\\"\"\"\\\"\"\"\\\"\"\"\\\"\"\"\\\".\"\"\"\n"
                               "d = \"\"\"\"This,\" she said, \"is just a pointless statement.\"\"\"\"\n"
                               "e = \"\"\"\"\"\"\nf = \"\"\"a\"\"\"\"\"\n"),
    ("multiline-basic-escapes-and-tabs", "s = \"\"\"\\u00e9\t\\\\\n\\\"\\n\"\"\"\n"),
    ("multiline-literal", "regex2 = '''I [dw]on't need \\d{2} apples'''\nlines = '''\nThe first newline is\n"
                          "trimmed in raw strings.\n   All other whitespace\n   is preserved.\n'''\n"),
    ("multiline-literal-quotes", "a = '''Here are fifteen quotation marks: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"'''\n"
                                 "b = ''''That,' she said, 'is still pointless.''''\nc = ''''''\nd = '''x'''''\n"),
    # integers
    ("integers", "a = +99\nb = 42\nc = 0\nd = -17\ne = +0\nf = -0\n"),
    ("integers-underscores", "a = 1_000\nb = 5_349_221\nc = 53_49_221\nd = 1_2_3_4_5\n"),
    ("integers-prefixed", "hex1 = 0xDEADBEEF\nhex2 = 0xdeadbeef\nhex3 = 0xdead_beef\nhex4 = 0x00_0f\n"
                          "oct1 = 0o01234567\noct2 = 0o755\nbin1 = 0b11010110\nbin2 = 0b0_1\n"),
    ("integers-big", "a = 9223372036854775807\nb = -9223372036854775808\nc = 123456789012345678901234567890\n"
                     "d = 0xFFFFFFFFFFFFFFFFFFFFFFFF\n"),
    # floats
    ("floats", "a = +1.0\nb = 3.1415\nc = -0.01\nd = 5e+22\ne = 1e06\nf = -2E-2\ng = 6.626e-34\n"
               "h = 224_617.445_991_228\ni = 0.0\nj = -0.0\nk = +0.0\nl = 0e0\nm = 1e1_0\nn = 1.5E+0_1\n"),
    ("floats-special", "a = inf\nb = +inf\nc = -inf\nd = nan\ne = +nan\nf = -nan\n"),
    ("floats-out-of-range", "a = 1e400\nb = -1e400\nc = 1e-400\n"),
    # booleans
    ("booleans", "a = true\nb = false\n"),
    # dates and times
    ("offset-date-times", "a = 1979-05-27T07:32:00Z\nb = 1979-05-27T00:32:00-07:00\n"
                          "c = 1979-05-27T00:32:00.999999-07:00\nd = 1979-05-27 07:32:00Z\ne = 1979-05-27t07:32:00z\n"
                          "f = 1979-05-27T07:32:00+00:00\ng = 1979-05-27T07:32:00-00:00\nh = 2000-02-29T23:59:59+23:59\n"),
    ("local-date-times", "a = 1979-05-27T07:32:00\nb = 1979-05-27T00:32:00.999999\nc = 1979-05-27 00:32:00.5\n"),
    ("fractions-cut-to-microseconds", "a = 1979-05-27T00:32:00.9999999999Z\nb = 00:32:00.1234567\n"
                                      "c = 1979-05-27T00:32:00.1\n"),
    ("local-dates", "a = 1979-05-27\nb = 0001-01-01\nc = 9999-12-31\nd = 2024-02-29\n"),
    ("local-times", "a = 07:32:00\nb = 00:32:00.999999\nc = 23:59:59\n"),
    ("date-then-comment", "a = 1979-05-27 # a date\nb = 1979-05-27T07:32:00Z#c\n"),
    # arrays
    ("arrays", "integers = [ 1, 2, 3 ]\ncolors = [ \"red\", \"yellow\", \"green\" ]\n"
               "nested_arrays_of_ints = [ [ 1, 2 ], [3, 4, 5] ]\nnested_mixed_array = [ [ 1, 2 ], [\"a\", \"b\", \"c\"] ]\n"
               "string_array = [ \"all\", 'strings', \"\"\"are the same\"\"\", '''type''' ]\n"),
    ("arrays-mixed-types", "numbers = [ 0.1, 0.2, 0.5, 1, 2, 5 ]\ncontributors = [\n  \"Foo Bar <foo@example.com>\",\n"
                           "  { name = \"Baz Qux\", email = \"bazqux@example.com\", url = \"https://example.com/bazqux\" }\n]\n"
                           "all = [true, 1979-05-27, 07:32:00, 1.5, 'x', [], {}]\n"),
    ("arrays-empty", "a = []\nb = [ ]\nc = [\n]\nd = [[], [[]]]\n"),
    ("arrays-multi-line-comments-trailing-comma", "a = [\n  1, # one\n  2,\n  # between\n\n  3\n  ,\n]\n"
                                                  "b = [ # c\n]\nc = [1,2,]\n"),
    ("arrays-of-inline-tables", "points = [ { x = 1, y = 2, z = 3 },\n           { x = 7, y = 8, z = 9 },\n"
                                "           { x = 2, y = 4, z = 8 } ]\n"),
    # inline tables
    ("inline-tables", "name = { first = \"Tom\", last = \"Preston-Werner\" }\npoint = { x = 1, y = 2 }\n"
                      "animal = { type.name = \"pug\" }\n"),
    ("inline-tables-empty-and-nested", "a = {}\nb = { }\nc = { d = { e = { f = 1 } }, g = [ { h = 2 } ] }\n"),
    ("inline-tables-dotted-keys", "a = { b.c = 1, b.d = 2, \"e\".'f' = 3, g . h . i = 4 }\n"),
    ("inline-table-with-multi-line-array", "a = { b = [\n  1,\n  2, # c\n], c = 3 }\n"),
    ("inline-table-in-table", "[t]\nu = { v = 1 }\n[t.w]\n"),
    ("inline-table-containerd-options", "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                                        "  options = { BinaryName = \"/usr/bin/nvidia-container-runtime\", "
                                        "SystemdCgroup = true }\n"),
]

# --------------------------------------------------------------------------------------------
# Invalid documents: one refusal each, with tomllib's message (the table is checked against tomllib too)
# --------------------------------------------------------------------------------------------

INVALID = [
    # Keys and statements
    ("duplicate-key", "version = 2\nversion = 3\n", 'Cannot overwrite a value (at line 2, column 12)'),
    ("duplicate-key-bare-and-quoted", 'a = 1\n"a" = 2\n', 'Cannot overwrite a value (at line 2, column 8)'),
    ("dotted-key-over-value", "a = 1\na.b = 2\n", 'Cannot overwrite a value (at line 2, column 8)'),
    ("key-with-space", "runtime type = 1\n", "Expected '=' after a key in a key/value pair (at line 1, column 9)"),
    ("key-without-value", "a\n", "Expected '=' after a key in a key/value pair (at line 1, column 2)"),
    ("key-missing", "= 1\n", 'Invalid statement (at line 1, column 1)'),
    ("key-leading-dot", ".a = 1\n", 'Invalid statement (at line 1, column 1)'),
    ("key-trailing-dot", "a. = 1\n", 'Invalid initial character for a key part (at line 1, column 4)'),
    ("key-double-dot", "a..b = 1\n", 'Invalid initial character for a key part (at line 1, column 3)'),
    ("key-non-ascii-bare", "\u00e9 = 1\n", 'Invalid statement (at line 1, column 1)'),
    ("key-multiline-string", '"""a""" = 1\n', "Expected '=' after a key in a key/value pair (at line 1, column 3)"),
    ("key-newline-in-quotes", '"a\nb" = 1\n', "Illegal character '\\n' (at line 1, column 3)"),
    ("byte-order-mark", "\ufeffa = 1\n", 'Invalid statement (at line 1, column 1)'),
    ("two-statements-one-line", "a = 1 b = 2\n",
     'Expected newline or end of document after a statement (at line 1, column 7)'),
    ("missing-value", "a =\nb = 1\n", 'Invalid value (at line 1, column 4)'),
    ("bare-value", "runtime_type = io.containerd.runc.v2\n", 'Invalid value (at line 1, column 16)'),
    ("capitalized-true", "a = True\n", 'Invalid value (at line 1, column 5)'),
    ("truncated-false", "a = fals\n", 'Invalid value (at line 1, column 5)'),
    # Tables
    ("table-twice", "[a]\n[a]\n", "Cannot declare ('a',) twice (at line 2, column 3)"),
    ("table-twice-quoted", '[a]\n["a"]\n', "Cannot declare ('a',) twice (at line 2, column 5)"),
    ("table-over-dotted-keys", "[fruit]\napple.color = 'red'\n[fruit.apple]\n",
     "Cannot declare ('fruit', 'apple') twice (at line 3, column 13)"),
    ("dotted-keys-into-header-table", "[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n",
     "Cannot redefine namespace ('a', 'b', 'c') (at line 4, column 10)"),
    ("table-over-value", "[a]\nb = 1\n[a.b]\n", 'Cannot overwrite a value (at line 3, column 5)'),
    ("table-through-value", "[a]\nb = 1\n[a.b.c]\n", 'Cannot overwrite a value (at line 3, column 7)'),
    ("table-over-inline-table", "a = {x = 1}\n[a]\n", "Cannot declare ('a',) twice (at line 2, column 3)"),
    ("subtable-of-inline-table", "a = {x = 1}\n[a.b]\n", "Cannot declare ('a', 'b') twice (at line 2, column 5)"),
    ("dotted-key-into-inline-table", "a = {x = 1}\na.y = 2\n",
     "Cannot mutate immutable namespace ('a',) (at line 2, column 8)"),
    ("table-after-array-of-tables", "[[a]]\n[a]\n", "Cannot declare ('a',) twice (at line 2, column 3)"),
    ("array-of-tables-after-table", "[a]\n[[a]]\n", 'Cannot overwrite a value (at line 2, column 4)'),
    ("array-of-tables-over-inline-table", "a = {}\n[[a]]\n",
     "Cannot mutate immutable namespace ('a',) (at line 2, column 4)"),
    ("array-of-tables-over-static-array", "a = [1]\n[[a]]\n",
     "Cannot mutate immutable namespace ('a',) (at line 2, column 4)"),
    ("subtable-of-static-array", "a = [{b = 1}]\n[a.c]\n", "Cannot declare ('a', 'c') twice (at line 2, column 5)"),
    ("dotted-key-into-static-array", "a = [1]\na.b = 2\n",
     "Cannot mutate immutable namespace ('a',) (at line 2, column 8)"),
    ("dotted-key-into-array-of-tables", "[[x.y]]\n[x]\ny.z = 1\n",
     "Cannot redefine namespace ('x', 'y') (at line 3, column 8)"),
    ("table-empty-name", "[]\n", 'Invalid initial character for a key part (at line 1, column 2)'),
    ("table-unclosed", "[a\nb = 1\n", "Expected ']' at the end of a table declaration (at line 1, column 3)"),
    ("table-unclosed-at-end", "[plugins.\"io.containerd.grpc.v1.cri\".containerd",
     "Expected ']' at the end of a table declaration (at end of document)"),
    ("table-trailing-text", "[a] b\n", 'Expected newline or end of document after a statement (at line 1, column 5)'),
    ("table-double-bracket", "[a]]\n", 'Expected newline or end of document after a statement (at line 1, column 4)'),
    ("array-of-tables-unclosed", "[[a]\n", "Expected ']]' at the end of an array declaration (at line 1, column 4)"),
    ("array-of-tables-spaced-brackets", "[ [a] ]\n", 'Invalid initial character for a key part (at line 1, column 3)'),
    # Inline tables and arrays
    ("inline-duplicate-key", "a = {b = 1, b = 2}\n", "Duplicate inline table key 'b' (at line 1, column 18)"),
    ("inline-dotted-key-into-inline-table", "a = {b = {c = 1}, b.d = 2}\n",
     "Cannot mutate immutable namespace ('b', 'd') (at line 1, column 26)"),
    ("inline-dotted-key-over-value", "a = {b = 1, b.c = 2}\n", 'Cannot overwrite a value (at line 1, column 20)'),
    ("inline-newline", "a = {b = 1,\n     c = 2}\n", 'Invalid initial character for a key part (at line 1, column 12)'),
    ("inline-trailing-comma", "a = {b = 1,}\n", 'Invalid initial character for a key part (at line 1, column 12)'),
    ("inline-missing-comma", "a = {b = 1 c = 2}\n", 'Unclosed inline table (at line 1, column 12)'),
    ("inline-unclosed", "a = {b = 1\n", 'Unclosed inline table (at line 1, column 11)'),
    ("inline-empty-element", "a = {,}\n", 'Invalid initial character for a key part (at line 1, column 6)'),
    ("array-missing-comma", "a = [1 2]\n", 'Unclosed array (at line 1, column 8)'),
    ("array-unclosed", "a = [1, 2\n", 'Unclosed array (at end of document)'),
    ("array-empty-element", "a = [1,,2]\n", 'Invalid value (at line 1, column 8)'),
    ("array-only-comma", "a = [,]\n", 'Invalid value (at line 1, column 6)'),
    ("array-control-in-comment", "a = [ # \x01\n]\n", "Found invalid character '\\x01' (at line 1, column 9)"),
    # Strings
    ("basic-unterminated-line", 'a = "abc\nb = 1\n', "Illegal character '\\n' (at line 1, column 9)"),
    ("basic-unterminated-end", 'a = "abc', 'Unterminated string (at end of document)'),
    ("literal-unterminated", "a = 'abc\nb = 1\n", 'Expected "\'" (at end of document)'),
    ("literal-newline", "a = 'abc\nb = 'x'\n", "Found invalid character '\\n' (at line 1, column 9)"),
    ("multiline-basic-unterminated", 'a = """abc\n', 'Unterminated string (at end of document)'),
    ("multiline-literal-unterminated", "a = '''abc\n", 'Expected "\'\'\'" (at end of document)'),
    ("multiline-basic-six-quotes-at-end", 'a = """abc""""""\n',
     'Expected newline or end of document after a statement (at line 1, column 16)'),
    ("multiline-literal-six-quotes-at-end", "a = '''abc''''''\n",
     'Expected newline or end of document after a statement (at line 1, column 16)'),
    ("escape-x", 'BinaryName = "C:\\nvidia\\x41"\n', "Unescaped '\\' in a string (at line 1, column 26)"),
    ("escape-e", 'a = "\\e"\n', "Unescaped '\\' in a string (at line 1, column 8)"),
    ("escape-backslash-newline-in-basic", 'a = "a\\\nb"\n', "Unescaped '\\' in a string (at line 2, column 1)"),
    ("escape-backslash-text-in-multiline", 'a = """a\\  b"""\n', "Unescaped '\\' in a string (at line 1, column 12)"),
    ("escape-backslash-at-end", 'a = """a\\', "Unescaped '\\' in a string (at end of document)"),
    ("escape-unicode-short", 'a = "\\u00e"\n', 'Invalid hex value (at line 1, column 8)'),
    ("escape-unicode-not-hex", 'a = "\\u00Zz"\n', 'Invalid hex value (at line 1, column 8)'),
    ("escape-unicode-sign", 'a = "\\u+0AB"\n', 'Invalid hex value (at line 1, column 8)'),
    ("escape-surrogate", 'a = "\\uD800"\n', 'Escaped character is not a Unicode scalar value (at line 1, column 12)'),
    ("escape-beyond-unicode", 'a = "\\U00110000"\n',
     'Escaped character is not a Unicode scalar value (at line 1, column 16)'),
    ("control-in-basic", 'a = "io.containerd\x01.runc.v2"\n', "Illegal character '\\x01' (at line 1, column 19)"),
    ("nul-in-basic", 'a = "a\x00b"\n', "Illegal character '\\x00' (at line 1, column 7)"),
    ("del-in-basic", 'a = "a\x7f"\n', "Illegal character '\\x7f' (at line 1, column 7)"),
    ("cr-in-basic", 'a = "a\rb"\n', "Illegal character '\\r' (at line 1, column 7)"),
    ("control-in-literal", "a = 'a\x01b'\n", "Found invalid character '\\x01' (at line 1, column 7)"),
    ("control-in-multiline-basic", 'a = """a\x01b"""\n', "Illegal character '\\x01' (at line 1, column 9)"),
    ("control-in-multiline-literal", "a = '''a\x1fb'''\n", "Found invalid character '\\x1f' (at line 1, column 9)"),
    ("control-in-comment", "# a\x01\n", "Found invalid character '\\x01' (at line 1, column 4)"),
    ("del-in-comment", "a = 1 # \x7f\n", "Found invalid character '\\x7f' (at line 1, column 9)"),
    ("cr-in-comment", "# a\rb\n", "Found invalid character '\\r' (at line 1, column 4)"),
    ("lone-cr", "a = 1\rb = 2\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    # Numbers
    ("leading-zero", "a = 01\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("leading-zero-negative", "a = -01\n",
     'Expected newline or end of document after a statement (at line 1, column 7)'),
    ("leading-zero-float", "a = 00.5\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("double-underscore", "a = 1__0\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("trailing-underscore", "a = 1_\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("leading-underscore", "a = _1\n", 'Invalid value (at line 1, column 5)'),
    ("underscore-before-dot", "a = 1_.5\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("hex-capital-prefix", "a = 0X1F\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("hex-with-sign", "a = +0x1F\n", 'Expected newline or end of document after a statement (at line 1, column 7)'),
    ("hex-underscore-first", "a = 0x_1F\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("octal-digit-8", "a = 0o8\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("binary-digit-2", "a = 0b2\n", 'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("float-without-integer-part", "a = .5\n", 'Invalid value (at line 1, column 5)'),
    ("float-without-fraction", "a = 1.\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("float-dot-then-exponent", "a = 1.e5\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("float-exponent-without-digits", "a = 1e\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("float-capital-inf", "a = Inf\n", 'Invalid value (at line 1, column 5)'),
    ("float-infinity", "a = infinity\n", 'Expected newline or end of document after a statement (at line 1, column 8)'),
    ("float-nan-suffix", "a = nan1\n", 'Expected newline or end of document after a statement (at line 1, column 8)'),
    # Dates and times
    ("date-february-30", "a = 1979-02-30\n", 'Invalid date or datetime (at line 1, column 5)'),
    ("date-month-13", "a = 1979-13-01\n",
     'Expected newline or end of document after a statement (at line 1, column 9)'),
    ("date-trailing-t", "a = 1979-05-27T\n",
     'Expected newline or end of document after a statement (at line 1, column 15)'),
    ("time-without-seconds", "a = 07:32\n",
     'Expected newline or end of document after a statement (at line 1, column 6)'),
    ("time-hour-24", "a = 24:00:00\n", 'Expected newline or end of document after a statement (at line 1, column 7)'),
    ("time-with-offset", "a = 07:32:00Z\n",
     'Expected newline or end of document after a statement (at line 1, column 13)'),
    ("datetime-without-seconds", "a = 1979-05-27T07:32\n",
     'Expected newline or end of document after a statement (at line 1, column 15)'),
    ("datetime-leap-second", "a = 1979-05-27T07:32:60Z\n",
     'Expected newline or end of document after a statement (at line 1, column 15)'),
    ("datetime-short-offset", "a = 1979-05-27T07:32:00+7:00\n",
     'Expected newline or end of document after a statement (at line 1, column 24)'),
]


@pytest.mark.parametrize("text", [text for _, text in VALID], ids=[doc_id for doc_id, _ in VALID])
def test_valid_document(text):
    assert assert_same(text)[0] == "ok"


@pytest.mark.parametrize("text,message", [(text, message) for _, text, message in INVALID],
                         ids=[doc_id for doc_id, _, _ in INVALID])
def test_invalid_document(text, message):
    assert assert_same(text) == ["error", message]
    with pytest.raises(toml_compat.TOMLDecodeError) as caught:
        toml_compat.loads(text)
    assert isinstance(caught.value, ValueError)


def test_tables_are_distinct():
    """Each row of the tables is its own case (no id or document twice)."""
    for rows in (VALID, INVALID):
        assert len(set(row[0] for row in rows)) == len(rows)
        assert len(set(row[1] for row in rows)) == len(rows)


def test_values_are_what_the_specification_says():
    """A few values spelled out, not only compared: the types a caller gets."""
    data = toml_compat.loads(
        "hex = 0xDEAD_beef\nfloat = 6.626e-34\nnan = -nan\nflag = true\nwhen = 1979-05-27T00:32:00.999999-07:00\n"
        "day = 1979-05-27\nclock = 07:32:00.5\ntext = \"\"\"\n a \\\n   b\"\"\"\nempty = {}\n[[aot]]\nx = 1\n")
    assert data["hex"] == 0xDEADBEEF and type(data["hex"]) is int
    assert data["float"] == 6.626e-34 and math.isnan(data["nan"])
    assert data["flag"] is True
    assert data["when"] == datetime.datetime(1979, 5, 27, 0, 32, 0, 999999,
                                             tzinfo=datetime.timezone(datetime.timedelta(hours=-7)))
    assert data["day"] == datetime.date(1979, 5, 27) and type(data["day"]) is datetime.date
    assert data["clock"] == datetime.time(7, 32, 0, 500000)
    assert data["text"] == " a b"
    assert data["empty"] == {} and data["aot"] == [{"x": 1}]


# --------------------------------------------------------------------------------------------
# Generated documents
# --------------------------------------------------------------------------------------------

# Statements that define, extend or collide with tables: every sequence of up to three of them.
STATEMENTS = ["[a]", "[a.b]", "[a.b.c]", "[[a]]", "[[a.b]]", "a = 1", "a = {}", "a = [{}]", "a.b = 1", "a.b.c = 1",
              "b.c = 1", "b = {c = {}}", "b = [1]", "[b.c]", "[[b]]", "x = {a.b = 1, a.c = {}}"]


def test_every_short_sequence_of_table_statements():
    docs = ["\n".join(combo) + "\n" for size in (1, 2, 3) for combo in itertools.product(STATEMENTS, repeat=size)]
    assert len(docs) == 16 + 16 ** 2 + 16 ** 3
    accepted = sum(1 for text in docs if outcome(tomllib, text)[0] == "ok")
    assert 500 < accepted < len(docs) - 500  # plenty of both
    found = mismatches(docs)
    assert not found, "%d of %d documents differ, first: %s" % (len(found), len(docs), found[:3])


FUZZ_PIECES = list("[]{}=.,\"'#\\\n \t_-+:0129aeEfintxobTZ") + [
    '"""', "'''", "\r", "\x01", "\x7f", "\u00e9", "\\u", "\\U0001", "[[", "]]", "1979-05-27", "07:32:00", "a.b", "= 1\n"]


def test_random_edits_of_the_fixtures():
    """Seeded random deletions, insertions and replacements (and doubled lines) in the fixtures."""
    rnd = random.Random(20260101)
    seeds = [text for _, text in FIXTURE_DOCS if len(text) < 5000] + [text for _, text in VALID]
    docs = []
    for _ in range(3000):
        text = rnd.choice(seeds)
        for _ in range(rnd.randint(1, 3)):
            where = rnd.randint(0, len(text))
            edit = rnd.random()
            if edit < 0.35:
                text = text[:where] + text[where + 1:]
            elif edit < 0.75:
                text = text[:where] + rnd.choice(FUZZ_PIECES) + text[where:]
            elif edit < 0.9:
                text = text[:where] + rnd.choice(FUZZ_PIECES) + text[where + 1:]
            else:
                lines = text.split("\n")
                lines.insert(rnd.randint(0, len(lines)), rnd.choice(lines))
                text = "\n".join(lines)
        docs.append(text)
    found = mismatches(docs)
    assert not found, "%d of %d documents differ, first: %s" % (len(found), len(docs), found[:3])


# --------------------------------------------------------------------------------------------
# The rest of tomllib's interface
# --------------------------------------------------------------------------------------------

def test_load_module_is_tomllib_where_python_has_it():
    assert toml_compat.load_module() is tomllib


def test_error_carries_the_position():
    with pytest.raises(toml_compat.TOMLDecodeError) as caught:
        toml_compat.loads("a = 1\nb = [1 2]\n")
    error = caught.value
    assert str(error) == "Unclosed array (at line 2, column 8)"
    assert (error.msg, error.pos, error.lineno, error.colno) == ("Unclosed array", 13, 2, 8)
    assert isinstance(error, ValueError)


def test_nesting_deeper_than_recursion_allows():
    """Both readers recurse: a document nested thousands deep raises RecursionError (callers catch it)."""
    for text in ("a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 5000 + "1" + "}" * 5000):
        assert assert_same(text) == ["recursion"]
    assert assert_same("a = " + "[" * 100 + "]" * 100)[0] == "ok"


def test_load_reads_a_binary_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes("version = 2\nname = \"caf\u00e9\"\r\n".encode("utf-8"))
    with open(str(path), "rb") as handle:
        assert toml_compat.load(handle) == {"version": 2, "name": "caf\u00e9"}
    with open(str(path), "r", encoding="utf-8") as handle:
        with pytest.raises(TypeError):
            toml_compat.load(handle)


def test_parse_float():
    text = "a = 1_0.5e1_0\nb = -inf\nc = [0.1, {d = nan}]\ne = 1\n"
    assert assert_same(text, parse_float=decimal.Decimal)[0] == "ok"
    assert toml_compat.loads(text, parse_float=decimal.Decimal)["a"] == decimal.Decimal("10.5e10")
    for reader in (tomllib, toml_compat):
        with pytest.raises(ValueError, match="parse_float must not return dicts or lists"):
            reader.loads("a = 1.5", parse_float=lambda text: [text])


def test_str_only():
    for reader in (tomllib, toml_compat):
        with pytest.raises(TypeError):
            reader.loads(b"a = 1")


# --------------------------------------------------------------------------------------------
# Under this machine's Pythons without tomllib
# --------------------------------------------------------------------------------------------

CONTAINERD_CONFIG = """version = 2
imports = ["/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  privileged_without_host_devices = false

  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
"""

# Run by the other interpreter: import toml_compat.py by its file path, read the documents sent on stdin.
CHILD = r'''
import importlib.util
import json
import math
import sys

def module_at(path, register):
    spec = importlib.util.spec_from_file_location("toml_compat", path)
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules["toml_compat"] = module
    spec.loader.exec_module(module)
    return module

request = json.load(sys.stdin)
exec(request["typed"])
toml_compat = module_at(request["path"], True)
unregistered = module_at(request["path"], False)
reader = unregistered.load_module()
outcomes = []
for text in request["documents"]:
    try:
        data = toml_compat.loads(text)
    except RecursionError:
        outcomes.append(["recursion"])
    except toml_compat.TOMLDecodeError as exc:
        outcomes.append(["error", str(exc)])
    else:
        outcomes.append(["ok", typed(data)])
print(json.dumps({
    "version": list(sys.version_info[:3]),
    "has_tomllib": importlib.util.find_spec("tomllib") is not None,
    "load_module_is_itself": toml_compat.load_module() is toml_compat,
    "unregistered_load_module": [reader.loads is unregistered.loads,
                                 reader.TOMLDecodeError is unregistered.TOMLDecodeError],
    "containerd": toml_compat.loads(request["containerd"]),
    "outcomes": outcomes,
}))
'''


@pytest.mark.parametrize("python", OLD_PYTHONS, ids=[path.split("/")[4] for path in OLD_PYTHONS])
def test_under_python_without_tomllib(python):
    if not os.path.exists(python):
        pytest.fail("%s is missing: this test needs the machine's Python %s" % (python, python.split("/")[4]))
    documents = [text for _, text in FIXTURE_DOCS] + [text for _, text in VALID] + [row[1] for row in INVALID]
    request = {"path": MODULE_PATH, "typed": inspect.getsource(typed), "containerd": CONTAINERD_CONFIG,
               "documents": documents}
    proc = subprocess.run([python, "-I", "-B", "-c", CHILD], input=json.dumps(request), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert ".".join(str(part) for part in answer["version"]) == python.split("/")[4]
    assert answer["has_tomllib"] is False
    assert answer["load_module_is_itself"] is True
    assert answer["unregistered_load_module"] == [True, True]
    containerd = tomllib.loads(CONTAINERD_CONFIG)
    assert answer["containerd"] == containerd
    assert answer["containerd"]["imports"] == ["/etc/containerd/conf.d/*.toml"]
    assert "nvidia" in answer["containerd"]["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    expected = [outcome(tomllib, text) for text in documents]
    differ = [(text, want, got) for text, want, got in zip(documents, expected, answer["outcomes"]) if want != got]
    assert not differ, "%d of %d documents differ, first: %s" % (len(differ), len(documents), differ[:3])
