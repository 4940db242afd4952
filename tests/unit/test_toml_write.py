"""toml_write: data tables over key/string/value, and dumps round trips (parsed back by tomllib)."""

import datetime
import math
import tomllib

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import toml_write
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def same(a, b):
    """Equal and of the same types all the way down (True is not 1, 1.0 is not 1; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, (datetime.datetime, datetime.time)):
        return a == b and a.utcoffset() == b.utcoffset()
    return a == b


def same_ignoring_key_order(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(a) == sorted(b) and all(same_ignoring_key_order(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_ignoring_key_order(x, y) for x, y in zip(a, b))
    return same(a, b)


# --------------------------------------------------------------------------------------------
# key / string / value
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    pytest.param("runc", "runc", id="bare-word"),
    pytest.param("SystemdCgroup", "SystemdCgroup", id="bare-camel-case"),
    pytest.param("a-b_c9", "a-b_c9", id="bare-dash-underscore-digit"),
    pytest.param("1234", "1234", id="bare-digits"),
    pytest.param("io.containerd.grpc.v1.cri", '"io.containerd.grpc.v1.cri"', id="dotted-plugin-id-quoted"),
    pytest.param("docker.io", '"docker.io"', id="registry-host-quoted"),
    pytest.param("my registry:5000", '"my registry:5000"', id="space-and-colon-quoted"),
    pytest.param("", '""', id="empty-key-quoted"),
    pytest.param("ключ", '"ключ"', id="unicode-quoted"),
    pytest.param('a"b', '"a\\"b"', id="quote-escaped"),
    pytest.param("a\n", '"a\\n"', id="trailing-newline-quoted"),
    pytest.param("a\nb", '"a\\nb"', id="inner-newline-quoted"),
])
def test_key(name, expected):
    assert toml_write.key(name) == expected
    # Whatever the writer gives reads back as that one key.
    assert tomllib.loads("%s = 1\n" % toml_write.key(name)) == {name: 1}


@pytest.mark.parametrize("text, expected", [
    pytest.param("plain", '"plain"', id="plain"),
    pytest.param("", '""', id="empty"),
    pytest.param('say "hi"', '"say \\"hi\\""', id="double-quotes"),
    pytest.param("C:\\Users\\x", '"C:\\\\Users\\\\x"', id="backslashes"),
    pytest.param("a\nb\r\nc", '"a\\nb\\r\\nc"', id="newlines"),
    pytest.param("\t\b\f", '"\\t\\b\\f"', id="short-escapes"),
    pytest.param("\x00\x01\x1b\x1f", '"\\u0000\\u0001\\u001B\\u001F"', id="control-chars-as-u-escapes"),
    pytest.param("\x7f", '"\\u007F"', id="delete-char"),
    pytest.param("é✓😀 ünï", '"é✓😀 ünï"', id="unicode-kept-raw"),
    pytest.param("it's", '"it\'s"', id="single-quote-raw"),
    pytest.param("\u2028\u0085", '"\u2028\u0085"', id="unicode-line-separators-raw"),
])
def test_string(text, expected):
    assert toml_write.string(text) == expected
    assert tomllib.loads("v = %s\n" % toml_write.string(text)) == {"v": text}


@pytest.mark.parametrize("item, expected", [
    pytest.param(True, "true", id="true"),
    pytest.param(False, "false", id="false"),
    pytest.param(0, "0", id="zero"),
    pytest.param(-999, "-999", id="negative-int"),
    pytest.param(2 ** 63 - 1, "9223372036854775807", id="int64-max"),
    pytest.param(-2 ** 63, "-9223372036854775808", id="int64-min"),
    pytest.param(1.5, "1.5", id="float"),
    pytest.param(1e3, "1000.0", id="float-1e3"),
    pytest.param(1e300, "1e+300", id="float-big-exponent"),
    pytest.param(1e-7, "1e-07", id="float-small-exponent"),
    pytest.param(-0.0, "-0.0", id="negative-zero"),
    pytest.param(float("inf"), "inf", id="inf"),
    pytest.param(float("-inf"), "-inf", id="minus-inf"),
    pytest.param(float("nan"), "nan", id="nan"),
    pytest.param("x", '"x"', id="string"),
    pytest.param(datetime.date(1979, 5, 27), "1979-05-27", id="local-date"),
    pytest.param(datetime.time(7, 32, 0, 999999), "07:32:00.999999", id="local-time"),
    pytest.param(datetime.datetime(1979, 5, 27, 7, 32), "1979-05-27T07:32:00", id="local-datetime"),
    pytest.param(datetime.datetime(1979, 5, 27, 0, 32, 0, 500000,
                                   tzinfo=datetime.timezone(datetime.timedelta(hours=-7))),
                 "1979-05-27T00:32:00.500000-07:00", id="offset-datetime"),
    pytest.param(datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone.utc),
                 "1979-05-27T07:32:00+00:00", id="utc-datetime"),
    pytest.param([], "[]", id="empty-array"),
    pytest.param(["a", "b"], '["a", "b"]', id="array-of-strings"),
    pytest.param([1, "two", [3, [4]]], '[1, "two", [3, [4]]]', id="mixed-nested-array"),
    pytest.param({"name": "walking", "docker.io": [1]}, '{name = "walking", "docker.io" = [1]}', id="inline-table"),
    pytest.param([{"a": 1}, {}], "[{a = 1}, {}]", id="inline-tables-in-array"),
])
def test_value(item, expected):
    assert toml_write.value(item) == expected
    back = tomllib.loads("v = %s\n" % expected)["v"]
    assert same(back, item)


class Opaque:
    def __repr__(self):
        return "<Opaque>"


@pytest.mark.parametrize("document, expected", [
    pytest.param({"v": {1, 2}}, "cannot write a set as TOML", id="set"),
    pytest.param({"v": frozenset()}, "cannot write a frozenset as TOML", id="frozenset"),
    pytest.param({"v": Opaque()}, "cannot write a Opaque as TOML: <Opaque>", id="object"),
    pytest.param({"v": None}, "cannot write a NoneType as TOML", id="none"),
    pytest.param({"v": b"bytes"}, "cannot write a bytes as TOML", id="bytes"),
    pytest.param({"v": (1, 2)}, "cannot write a tuple as TOML", id="tuple"),
    pytest.param({"v": 1j}, "cannot write a complex as TOML", id="complex"),
    pytest.param({"t": {"deep": {"v": [1, {2}]}}}, "cannot write a set as TOML", id="set-in-array-in-table"),
    pytest.param({"v": [{"a": {"x": object()}}]}, "cannot write a object as TOML", id="object-in-table-array"),
    pytest.param({"v": [1, {"x": {3}}]}, "cannot write a set as TOML", id="set-in-inline-table"),
])
def test_dumps_refuses_types_it_cannot_write(document, expected):
    with pytest.raises(GpuopError) as caught:
        toml_write.dumps(document)
    assert expected in str(caught.value)


@pytest.mark.parametrize("item", [
    pytest.param({1, 2}, id="set"),
    pytest.param(object(), id="object"),
    pytest.param(None, id="none"),
])
def test_value_refuses_types_it_cannot_write(item):
    with pytest.raises(GpuopError, match="cannot write a"):
        toml_write.value(item)


# --------------------------------------------------------------------------------------------
# dumps: exact layout, headers, round trips
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("document, header, expected", [
    pytest.param({}, "", "\n", id="empty-document"),
    pytest.param({"version": 2}, "", "version = 2\n", id="one-key"),
    pytest.param({"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {"sandbox_image": "pause"}}}, "",
                 'version = 2\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    sandbox_image = "pause"\n',
                 id="nested-tables-indented-two-spaces"),
    pytest.param({"t": {"sub": {"x": 1}, "k": "v"}}, "", '[t]\n  k = "v"\n  [t.sub]\n    x = 1\n',
                 id="keys-before-sub-tables"),
    pytest.param({"a": [{"x": 1}, {"x": 2, "sub": {"y": 3}}]}, "",
                 "[[a]]\n  x = 1\n[[a]]\n  x = 2\n  [a.sub]\n    y = 3\n", id="array-of-tables"),
    pytest.param({"version": 2}, "line one\n\nline three", "# line one\n#\n# line three\nversion = 2\n",
                 id="header-lines-become-comments"),
    pytest.param({"a": 1}, "Written by gpuop: do not edit", "# Written by gpuop: do not edit\na = 1\n",
                 id="one-header-line"),
])
def test_dumps_text(document, header, expected):
    text = toml_write.dumps(document, header)
    assert text == expected
    assert tomllib.loads(text) == document


def test_header_is_only_comments():
    header = "a\n[not.a.table]\nc = 1\n  indented \"quoted\" é"
    text = toml_write.dumps({"k": "v"}, header)
    lines = text.splitlines()
    assert all(line.startswith("#") for line in lines[:-1])
    assert lines[-1] == 'k = "v"'
    assert tomllib.loads(text) == {"k": "v"}


REALISTIC = r'''
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = -999
imports = ["/etc/containerd/conf.d/*.toml"]

[grpc]
  address = "/run/containerd/containerd.sock"
  max_recv_message_size = 16777216

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  enable_selinux = false
  stats_collect_period = 10
  image_pull_progress_timeout = "5m0s"
  device_ownership_from_security_context = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["io.kubernetes.cri.*", "nvidia.com/*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
        BinaryName = "/usr/bin/runc"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
      endpoint = ["https://mirror.example.com", "https://registry-1.docker.io"]
    [plugins."io.containerd.grpc.v1.cri".registry.configs."my registry:5000".auth]
      username = "robot$ci"
      password = "p\"w\\d\n\t\u0001\u007f é😀"
[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/containerd"

[[plugins."io.containerd.transfer.v1.local".unpack_config]]
  platform = "linux/amd64"
  snapshotter = "overlayfs"
[[plugins."io.containerd.transfer.v1.local".unpack_config]]
  platform = "linux/arm64"
  snapshotter = "native"
  differ = { name = "walking", tags = ["a", "b"] }

[timeouts]
  "io.containerd.timeout.shim.cleanup" = "5s"

[gpuop_extras]
  ratio = 1.5
  thousand = 1e3
  big = inf
  small = -inf
  nothing = nan
  negative_zero = -0.0
  hex = 0xff
  mixed = [1, "two", 3.0, { four = 4 }, [5, [6]]]
  servers = [{ name = "a", port = 1 }, { name = "b", port = 2 }]
  empty_array = []
  empty_inline = {}
  local_date = 1979-05-27
  local_time = 07:32:00.999999
  local_datetime = 1979-05-27T07:32:00
  offset_datetime = 1979-05-27T00:32:00.5-07:00
  utc_datetime = 1979-05-27T07:32:00Z
  "key with space" = "v"
  "" = "empty key"
  "ключ" = "unicode key"
  multiline = """
first
second"""
  literal = 'C:\Users\no escapes'
  [gpuop_extras.nested.deeper.deepest]
    leaf = true
'''


def _nested_table_arrays():
    return {"a": [{"x": 1, "b": [{"y": 1}, {"y": 2, "c": {"z": [1, 2]}}]}, {"x": 2}]}


@pytest.mark.parametrize("document", [
    pytest.param(tomllib.loads(REALISTIC), id="realistic-containerd-config-as-tomllib-reads-it"),
    pytest.param(tomllib.loads(REALISTIC)["plugins"]["io.containerd.grpc.v1.cri"], id="cri-section-alone"),
    pytest.param({"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {"containerd": {"runtimes": {
        "runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}},
        "nvidia": {"runtime_type": "io.containerd.runc.v2",
                   "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}}}}}}},
        id="drop-in-shape"),
    pytest.param(_nested_table_arrays(), id="nested-arrays-of-tables"),
    pytest.param({"t": {}, "u": {"v": {}}, "w": [{}]}, id="empty-tables"),
    pytest.param({"s": "\x00\x08\x0b\x0e\x1f\x7f\"\\\n\r\t\u2028\U0001F600"}, id="every-kind-of-awkward-char"),
    pytest.param({"docker.io": {"a b": {"": {"x.y": 1}}}}, id="quoted-keys-in-table-headers"),
    pytest.param({"f": [1.5, 1e3, float("inf"), float("-inf"), float("nan"), -0.0, 5e-324, 1.7976931348623157e308]},
                 id="floats"),
    pytest.param({"i": [0, -1, 2 ** 63 - 1, -2 ** 63]}, id="ints"),
    pytest.param({"d": [datetime.date(2024, 2, 29), datetime.time(0, 0), datetime.time(23, 59, 59, 1),
                        datetime.datetime(2024, 2, 29, 12, 0, 0, 123456),
                        datetime.datetime(2024, 2, 29, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=5,
                                                                                                          minutes=30)))]},
                 id="dates-and-times"),
])
def test_dumps_round_trips(document):
    text = toml_write.dumps(document, "a header\nover two lines")
    back = tomllib.loads(text)
    # Arrays of inline tables come back as arrays of tables: the same data, so the same dict.
    assert same_ignoring_key_order(back, document)
    assert text.startswith("# a header\n# over two lines\n")
    # Writing what was read back gives the same text: the output is stable.
    assert toml_write.dumps(back, "a header\nover two lines") == text


def test_realistic_round_trip_keeps_types():
    document = tomllib.loads(REALISTIC)
    back = tomllib.loads(toml_write.dumps(document))
    extras = back["gpuop_extras"]
    assert type(extras["ratio"]) is float and extras["ratio"] == 1.5
    assert type(extras["thousand"]) is float and extras["thousand"] == 1000.0
    assert extras["big"] == math.inf and extras["small"] == -math.inf and math.isnan(extras["nothing"])
    assert math.copysign(1.0, extras["negative_zero"]) == -1.0
    assert type(extras["hex"]) is int and extras["hex"] == 255
    assert extras["mixed"] == [1, "two", 3.0, {"four": 4}, [5, [6]]]
    assert type(extras["mixed"][2]) is float
    assert extras["servers"] == [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    assert type(extras["local_date"]) is datetime.date
    assert extras["local_time"] == datetime.time(7, 32, 0, 999999)
    assert extras["local_datetime"].tzinfo is None
    assert extras["offset_datetime"].utcoffset() == datetime.timedelta(hours=-7)
    assert extras["utc_datetime"].utcoffset() == datetime.timedelta(0)
    assert extras["multiline"] == "first\nsecond"
    assert extras["literal"] == "C:\\Users\\no escapes"
    assert extras[""] == "empty key" and extras["key with space"] == "v" and extras["ключ"] == "unicode key"
    cri = back["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["registry"]["configs"]["my registry:5000"]["auth"]["password"] == 'p"w\\d\n\t\x01\x7f é😀'
    assert cri["containerd"]["runtimes"]["runc"]["options"] == {"SystemdCgroup": True, "BinaryName": "/usr/bin/runc"}
    unpack = back["plugins"]["io.containerd.transfer.v1.local"]["unpack_config"]
    assert [u["platform"] for u in unpack] == ["linux/amd64", "linux/arm64"]
    assert unpack[1]["differ"] == {"name": "walking", "tags": ["a", "b"]}


@pytest.mark.parametrize("document", [
    pytest.param({"a\n": 1}, id="key-ending-in-newline"),
    pytest.param({"t\n": {"x": 1}}, id="table-name-ending-in-newline"),
])
def test_dumps_round_trips_keys_a_bare_regex_would_pass(document):
    # tomllib reads such keys ("a\n" = 1); the writer must quote them, not write them bare.
    assert tomllib.loads('"a\\n" = 1\n') == {"a\n": 1}
    assert tomllib.loads(toml_write.dumps(document)) == document
