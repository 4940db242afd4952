"""A seeded mutation fuzzer over containerd_merge's entry point: it raises GpuopError or answers, nothing else.

Seeds are the real files: every config of tests/fixtures/containerd/merge_cases.yml (the lab's
own pair among them), the containerd ``config dump`` outputs of tests/fixtures/containerd/dumps
and the hostile corpus of tests/fixtures/hostile/toml. Each case mutates a main config and a
drop-in it imports (bytes, TOML tokens, whole lines, hostile values), writes both into a folder
and calls ``analyze`` (read, parse, validate, resolve imports, predict both containerd majors),
then renders merge.txt, the report and the summary.

Anything but GpuopError is a bug; so is an answer whose merge.txt is not exactly the five keys
in order, one per line, or an error message over more than one line. The seed is fixed
(GPUOP_FUZZ_SEED to try others, GPUOP_FUZZ_CASES for more cases); a failure prints the input.
"""

import glob
import os
import random
import time

import yaml

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SEED = int(os.environ.get("GPUOP_FUZZ_SEED", "20260912"))
CASES = int(os.environ.get("GPUOP_FUZZ_CASES", "4000"))
TIME_BOUND = 240  # seconds; the default run takes well under a minute

# TOML syntax and values that stress the parser and the readers after it.
TOKENS = [
    "[", "]", "[[", "]]", "{", "}", "=", ".", ",", "#", '"', "'", '"""', "'''", "\\", "\n", "\r\n", "\t",
    "\\u0000", "\\n", "\\uD800", "\\U0010FFFF", "\x00", "\x7f", "\ufeff", "\u2028", "é", "😀",
    " = 1", " = []", " = {}", " = [1, \"a\"]", " = {a = {b = {c = 1}}}", " = 1979-05-27T07:32:00Z", " = inf",
    " = nan", " = -0", " = 0x1F", " = 1e400", " = 99999999999999999999999", " = true", ' = "x"',
    "version = 3", "version = 4", "version = -1", "version = \"2\"", "version = 2.0",
    "imports = []", 'imports = ["*"]', 'imports = ["conf.d/*.toml"]', 'imports = ["../*"]',
    'imports = ["/dev/null"]', 'imports = ["/proc/self/status"]', 'imports = ["config.toml"]',
    'imports = ["\\u0000"]', 'imports = ["[*"]', "imports = [1]", "imports = \"x\"",
    "plugins = 1", "[plugins]", '[plugins."io.containerd.grpc.v1.cri"]', '[plugins."cri".containerd]',
    '[plugins."io.containerd.cri.v1.runtime".containerd]', '[plugins."io.containerd.grpc.v1.cri".containerd]',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."a\\nb"]',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."runc,nvidia"]',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
    "containerd = 1", "runtimes = []", "runtimes = {nvidia = 1}", "options = 1", "options = {BinaryName = [1]}",
    "default_runtime_name = []", "default_runtime_name = {}", 'default_runtime_name = ""',
    'default_runtime_name = "nvidia"', "SystemdCgroup = \"yes\"", "runtime_type = [1]",
    "a = " + "[" * 300 + "]" * 300, "[" + ".".join(["t"] * 300) + "]",
]


def _seeds():
    texts = []
    table = yaml.safe_load(open(os.path.join(FIXTURES, "containerd", "merge_cases.yml"), encoding="utf-8"))
    for case in table["cases"] + table["bad_input"]:
        for text in case.get("files", {}).values():
            if not case.get("binary"):
                texts.append(text)
    for pattern in ("containerd/dumps/*.toml", "hostile/toml/*.toml"):
        for path in sorted(glob.glob(os.path.join(FIXTURES, pattern))):
            with open(path, "rb") as handle:
                texts.append(handle.read().decode("utf-8", "surrogateescape"))
    assert len(texts) >= 30, "the seed corpus shrank to %d files" % len(texts)
    return texts


def _mutate(rng, text):
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(9)
        pos = rng.randint(0, len(text))
        lines = text.splitlines(True)
        if op == 0:
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
        elif op == 1:
            text = text[:pos] + text[pos + rng.randint(1, 40):]
        elif op == 2 and lines:
            lines.insert(rng.randrange(len(lines) + 1), lines[rng.randrange(len(lines))])
            text = "".join(lines)
        elif op == 3 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
        elif op == 4:
            text = text[:pos] + chr(rng.choice([rng.randrange(0, 0x80), rng.randrange(0x80, 0x3000)])) + text[pos:]
        elif op == 5:
            text = text + "\n" + rng.choice(TOKENS) + "\n"
        elif op == 6 and lines:
            # Replace a value with a hostile one, keeping the key.
            i = rng.randrange(len(lines))
            if "=" in lines[i]:
                lines[i] = lines[i].split("=", 1)[0] + rng.choice([t for t in TOKENS if t.startswith(" = ")]) + "\n"
                text = "".join(lines)
        elif op == 7:
            text = text[:pos]  # truncated, as a half-written file would be
        else:
            start = rng.randint(0, len(text))
            text = text[:pos] + text[start:start + rng.randint(1, 200)] + text[pos:]
    return text


def _write(path, text, rng):
    data = text.encode("utf-8", "surrogateescape")
    if rng.random() < 0.03:
        data = data[:rng.randint(0, len(data))] + bytes([rng.randrange(0x80, 0x100)]) + data[rng.randint(0, len(data)):]
    with open(path, "wb") as handle:
        handle.write(data)


def test_merge_entry_point_raises_only_gpuop_error(tmp_path):
    rng = random.Random(SEED)
    seeds = _seeds()
    folder = str(tmp_path)
    os.makedirs(os.path.join(folder, "conf.d"))
    main, dropin = os.path.join(folder, "config.toml"), os.path.join(folder, "conf.d", "99-nvidia.toml")
    header = 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % folder
    outcomes = {"answer": 0, "GpuopError": 0}
    started = time.monotonic()
    for number in range(CASES):
        assert time.monotonic() - started < TIME_BOUND, "the fuzzer is too slow: %d cases in %ss" % (number, TIME_BOUND)
        main_text = rng.choice(seeds)
        dropin_text = rng.choice(seeds)
        # Mutate the main file, the drop-in, or both (an intact seed beside a broken one is a case too).
        which = rng.randrange(3)
        if which != 1:
            main_text = _mutate(rng, main_text)
        if which != 0:
            dropin_text = _mutate(rng, dropin_text)
        if rng.random() < 0.6:
            main_text = header + main_text
        _write(main, main_text, rng)
        _write(dropin, dropin_text, rng)
        where = "case %d (seed %d):\n--- main\n%r\n--- drop-in\n%r" % (number, SEED, main_text[:3000], dropin_text[:3000])
        try:
            result = containerd_merge.analyze(main, "/", ["runc"])
            merge_txt = containerd_merge.render_merge_txt(result)
            containerd_merge.render_report(result)
            containerd_merge.summary(result)
        except GpuopError as exc:
            outcomes["GpuopError"] += 1
            assert exc.msg and "\n" not in exc.msg, "a multi-line error: %r\n%s" % (exc.msg, where)
            continue
        except Exception as exc:  # noqa: BLE001 - this is what the fuzzer looks for
            raise AssertionError("%s: %s escaped containerd_merge.analyze\n%s" % (type(exc).__name__, exc, where))
        outcomes["answer"] += 1
        keys = [line.split("=", 1)[0] for line in merge_txt.split("\n")]
        assert keys == list(containerd_merge.MERGE_KEYS) + [""], "merge.txt is not five lines:\n%s\n%s" % (merge_txt, where)
    print("containerd_merge fuzz, seed %d: %s" % (SEED, outcomes))
    # Both outcomes must be common, or the mutations are too timid (or too wild) to test anything.
    assert outcomes["answer"] > CASES // 20 and outcomes["GpuopError"] > CASES // 20, outcomes
