"""containerd_dropin: data tables over add_import, run() on containerd 1.6 and 2.4.2, and its refusals.

No real binaries: run() gets a fake ``version_of`` and ``loaded_of``; every file lives under tmp_path.
"""

import copy
import os
import stat
import tomllib

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import containerd_dropin as dropin_mod
from ansible_collections.gpuop.gates.plugins.module_utils import containerd_merge as merge
from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

CRI = "io.containerd.grpc.v1.cri"
E = "/etc/containerd/conf.d/99-nvidia.toml"
Q = '"%s"' % E


# --------------------------------------------------------------------------------------------
# add_import
# --------------------------------------------------------------------------------------------

def assert_only_import_changed(original, result, quoted):
    """Every original line is still there, in order; only the one import was added (and maybe a comma)."""
    orig = original.splitlines()
    kept = []
    for line in result.splitlines():
        if line.strip() in (quoted, quoted + ","):
            continue  # the element gpuop added to a multi-line array
        kept.append(line.replace(", " + quoted, "").replace(quoted, ""))
    if len(kept) == len(orig) + 1:
        kept.remove("imports = []")  # the imports line gpuop added to a file without one
    assert len(kept) == len(orig), (orig, kept)
    for old, new in zip(orig, kept):
        # A multi-line array's last element may have gained the comma the new element needs.
        assert new == old or (new == old.rstrip() + "," and not old.rstrip().endswith(",")), (old, new)
    # Line endings as they were: a CRLF file stays CRLF throughout.
    if "\r\n" in original:
        assert result.count("\n") == result.count("\r\n") == result.count("\r")
    else:
        assert "\r" not in result


ADD_IMPORT_CASES = [
    pytest.param(
        'version = 2\nroot = "/var/lib/containerd"\n\n[plugins."io.containerd.grpc.v1.cri"]\n'
        '  sandbox_image = "registry.k8s.io/pause:3.9"\n',
        'version = 2\nimports = [%s]\nroot = "/var/lib/containerd"\n\n[plugins."io.containerd.grpc.v1.cri"]\n'
        '  sandbox_image = "registry.k8s.io/pause:3.9"\n' % Q,
        id="no-imports-inserted-after-version"),
    pytest.param(
        '# hand-made\nroot = "/var/lib/containerd"\nversion = 2   # v2 layout\n\n[plugins]\n',
        '# hand-made\nroot = "/var/lib/containerd"\nversion = 2   # v2 layout\nimports = [%s]\n\n[plugins]\n' % Q,
        id="no-imports-version-not-first-line"),
    pytest.param(
        '# containerd 1.x layout, no version\nroot = "/var/lib/containerd"\n\n[plugins.cri]\n  sandbox_image = "p"\n',
        '# containerd 1.x layout, no version\nroot = "/var/lib/containerd"\n\nimports = [%s]\n[plugins.cri]\n'
        '  sandbox_image = "p"\n' % Q,
        id="no-imports-no-version-before-first-table"),
    pytest.param(
        '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "p"\n',
        'imports = [%s]\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "p"\n' % Q,
        id="no-imports-first-line-is-a-table"),
    pytest.param(
        'root = "/var/lib/containerd"\nstate = "/run/containerd"\n',
        'root = "/var/lib/containerd"\nstate = "/run/containerd"\nimports = [%s]\n' % Q,
        id="no-imports-no-version-no-table-appended"),
    pytest.param('', 'imports = [%s]\n' % Q, id="empty-file"),
    pytest.param('version = 2', 'version = 2\nimports = [%s]\n' % Q, id="no-imports-version-without-final-newline"),
    pytest.param('root = "/x"', 'root = "/x"\nimports = [%s]\n' % Q, id="no-imports-no-version-without-final-newline"),
    pytest.param(
        'version = 2\n[plugins."x"]\n  imports = ["/not/top/level"]\n',
        'version = 2\nimports = [%s]\n[plugins."x"]\n  imports = ["/not/top/level"]\n' % Q,
        id="imports-key-inside-a-table-is-not-the-top-level-one"),
    pytest.param(
        'version = 2\nimports = ["/etc/containerd/certs.toml"]\n\n[plugins]\n',
        'version = 2\nimports = ["/etc/containerd/certs.toml", %s]\n\n[plugins]\n' % Q,
        id="one-line-appended"),
    pytest.param(
        'version = 2\nimports = ["/a.toml", "/b.toml"]  # see [docs] ]\n',
        'version = 2\nimports = ["/a.toml", "/b.toml", %s]  # see [docs] ]\n' % Q,
        id="one-line-comment-with-brackets-after"),
    pytest.param(
        'imports = ["/etc/containerd/[ab]*.toml"]\n',
        'imports = ["/etc/containerd/[ab]*.toml", %s]\n' % Q,
        id="one-line-glob-with-brackets-inside-string"),
    pytest.param('version = 2\nimports = []\n', 'version = 2\nimports = [%s]\n' % Q, id="one-line-empty"),
    # "every other byte kept": the spaces inside the brackets too.
    pytest.param('imports = [ ]  # none yet\n', 'imports = [ %s]  # none yet\n' % Q, id="one-line-empty-with-space"),
    pytest.param('  imports   =   [ "/a.toml" ]\n', '  imports   =   [ "/a.toml", %s ]\n' % Q,
                 id="one-line-space-before-closing-bracket"),
    pytest.param(
        'version = 2\nimports = [\n  "/etc/containerd/a.toml",\n  "/etc/containerd/b.toml",\n]\n\n[plugins]\n',
        'version = 2\nimports = [\n  "/etc/containerd/a.toml",\n  "/etc/containerd/b.toml",\n  %s,\n]\n\n[plugins]\n' % Q,
        id="multi-line-trailing-comma"),
    pytest.param(
        'version = 2\nimports = [\n  "/etc/containerd/a.toml",\n  "/etc/containerd/b.toml"\n]\n\n[plugins]\n',
        'version = 2\nimports = [\n  "/etc/containerd/a.toml",\n  "/etc/containerd/b.toml",\n  %s,\n]\n\n[plugins]\n' % Q,
        id="multi-line-no-trailing-comma"),
    pytest.param(
        'imports = [\n    "/a.toml",  # first\n    # "/b.toml",\n]\n',
        'imports = [\n    "/a.toml",  # first\n    # "/b.toml",\n    %s,\n]\n' % Q,
        id="multi-line-four-spaces-comment-line-last"),
    pytest.param(
        'imports = [\n  "/a.toml"\n  ]\n',
        'imports = [\n  "/a.toml",\n  %s,\n  ]\n' % Q,
        id="multi-line-indented-closing-bracket"),
    pytest.param('imports = [\n]\n', 'imports = [\n  %s,\n]\n' % Q, id="multi-line-empty"),
    pytest.param(
        'version = 2\r\nimports = ["/a.toml"]\r\n\r\n[plugins]\r\n',
        'version = 2\r\nimports = ["/a.toml", %s]\r\n\r\n[plugins]\r\n' % Q,
        id="crlf-one-line"),
    pytest.param(
        'version = 2\r\nroot = "/x"\r\n[plugins]\r\n',
        'version = 2\r\nimports = [%s]\r\nroot = "/x"\r\n[plugins]\r\n' % Q,
        id="crlf-no-imports"),
    pytest.param(
        'version = 2\r\nimports = [\r\n  "/a.toml"\r\n]\r\n',
        'version = 2\r\nimports = [\r\n  "/a.toml",\r\n  %s,\r\n]\r\n' % Q,
        id="crlf-multi-line-no-trailing-comma"),
    pytest.param(
        'version = 2\r\nimports = [\r\n  "/a.toml",\r\n]\r\n',
        'version = 2\r\nimports = [\r\n  "/a.toml",\r\n  %s,\r\n]\r\n' % Q,
        id="crlf-multi-line-trailing-comma"),
    pytest.param('version = 2\nimports = ["/a.toml"]', 'version = 2\nimports = ["/a.toml", %s]' % Q,
                 id="one-line-without-final-newline"),
    pytest.param('imports = [\n  "/a.toml",\n]', 'imports = [\n  "/a.toml",\n  %s,\n]' % Q,
                 id="multi-line-without-final-newline"),
    pytest.param(
        'version = 2\n\n# the certs drop-in\nimports = ["/a.toml"]\n# end\noom_score = 0\n[grpc]\n  address = "/x"\n',
        'version = 2\n\n# the certs drop-in\nimports = ["/a.toml", %s]\n# end\noom_score = 0\n[grpc]\n  address = "/x"\n' % Q,
        id="comments-and-blank-lines-kept"),
]


@pytest.mark.parametrize("text, expected", ADD_IMPORT_CASES)
def test_add_import(text, expected):
    got = dropin_mod.add_import("/etc/containerd/config.toml", text, E)
    assert got == expected
    assert_only_import_changed(text, got, Q)
    before, after = tomllib.loads(text), tomllib.loads(got)
    assert after.pop("imports") == before.pop("imports", []) + [E]
    assert after == before


def test_add_import_escapes_the_entry():
    entry = '/etc/containerd/conf.d/odd "name"\\x.toml'
    got = dropin_mod.add_import("/c", 'version = 2\n', entry)
    assert got == 'version = 2\nimports = ["/etc/containerd/conf.d/odd \\"name\\"\\\\x.toml"]\n'
    assert tomllib.loads(got)["imports"] == [entry]


@pytest.mark.parametrize("text", [
    pytest.param('imports = [\n  "/a.toml",\n  "/b.toml"]\n', id="multi-line-closed-on-last-element-line"),
    pytest.param('version = 2\n"imports" = ["/a.toml"]\n', id="imports-as-quoted-key"),
    pytest.param('version = 2\nimports = "/a.toml"\n', id="imports-not-an-array"),
    pytest.param("version = 2\nimports = ['/a.toml'] + []\n", id="not-toml-at-all"),
])
def test_add_import_refuses_what_it_cannot_edit_in_place(text):
    with pytest.raises(GpuopError) as caught:
        dropin_mod.add_import("/etc/containerd/config.toml", text, E)
    message = str(caught.value)
    assert message.startswith("/etc/containerd/config.toml")
    if "malformed TOML" not in message:
        assert message == ("/etc/containerd/config.toml: cannot add the import of %s in place without changing "
                           "anything else: add %s to its imports by hand, then re-run" % (E, Q))


# --------------------------------------------------------------------------------------------
# run(): files under tmp_path, fake binaries
# --------------------------------------------------------------------------------------------

MAIN = '''version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = 0
@IMPORTS@
[grpc]
  address = "/run/containerd/containerd.sock"

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "@DEFAULT@"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true
    [plugins."io.containerd.grpc.v1.cri".registry]
      [plugins."io.containerd.grpc.v1.cri".registry.mirrors]
        [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
          endpoint = ["https://mirror.example.com"]
  [plugins."io.containerd.internal.v1.opt"]
    path = "/opt/containerd"
'''

REGISTRY_ONLY = '''version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."quay.io"]
  endpoint = ["https://quay-mirror.example.com"]
'''

V16 = "1.6.20~ds1"
V24 = "2.4.2"


def loaded(*runtimes, default="runc", version="1.6.20"):
    return {"runtimes": list(runtimes), "default_runtime_name": default, "cri_loaded": True, "error": None,
            "containerd_version": version}


class Node:
    """A node's /etc/containerd under tmp_path, and run() against it with fake binaries."""

    def __init__(self, root, imports_glob=False, default="runc", extra=None, main_mode=0o600):
        self.root = str(root)
        self.etc = os.path.join(self.root, "etc", "containerd")
        self.confd = os.path.join(self.etc, "conf.d")
        os.makedirs(self.confd)
        self.config = os.path.join(self.etc, "config.toml")
        self.dropin = os.path.join(self.confd, "99-nvidia.toml")
        imports = 'imports = ["%s/*.toml"]\n' % self.confd if imports_glob else ""
        self.main_text = MAIN.replace("@IMPORTS@", imports).replace("@DEFAULT@", default)
        with open(self.config, "w", encoding="utf-8") as handle:
            handle.write(self.main_text)
        os.chmod(self.config, main_mode)
        for name, text in (extra or {}).items():
            with open(os.path.join(self.confd, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        self.calls = []

    def params(self, **overrides):
        params = {name: spec.get("default") for name, spec in dropin_mod.argument_spec().items()}
        params.update(config=self.config, dropin=self.dropin, address=os.path.join(self.root, "run/containerd.sock"),
                      daemon_cwd=self.root)
        params.update(overrides)
        return params

    def run(self, version, loaded_view=None, check_mode=False, **overrides):
        def version_of(binary):
            self.calls.append(("version_of", binary))
            return version

        def loaded_of(address, ctr, crictl, wait_timeout):
            self.calls.append(("loaded_of", address))
            return loaded_view

        return dropin_mod.run(self.params(**overrides), check_mode, version_of=version_of, loaded_of=loaded_of)

    def snapshot(self):
        """Every file under etc/containerd: path -> (bytes, mode)."""
        out = {}
        for folder, _dirs, names in os.walk(self.etc):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    out[os.path.relpath(path, self.root)] = (handle.read(), stat.S_IMODE(os.stat(path).st_mode))
        return out

    def read(self, path):
        with open(path, encoding="utf-8") as handle:
            return handle.read()


def expected_main_after(node):
    """The main file as written: one import line after ``version = 2``, every other byte as it was."""
    return node.main_text.replace("version = 2\n", 'version = 2\nimports = ["%s"]\n' % node.dropin, 1)


@pytest.mark.parametrize("version, major", [pytest.param(V16, 1, id="containerd-1.6"),
                                            pytest.param(V24, 2, id="containerd-2.4.2")])
def test_first_run_writes_dropin_and_one_import(tmp_path, version, major):
    node = Node(tmp_path)
    result = node.run(version, loaded("runc"))
    assert result["refused"] is False and result["forced"] is False and result["refusals"] == []
    assert result["changed"] is True and result["restart_needed"] is True
    assert result["containerd_major"] == major and result["containerd_version"] == version
    assert ("version_of", "/usr/bin/containerd") in node.calls

    # The main file: one import line added, everything else (and its 0600 mode) kept.
    main_after = node.read(node.config)
    assert main_after == expected_main_after(node)
    assert_only_import_changed(node.main_text, main_after, '"%s"' % node.dropin)
    assert stat.S_IMODE(os.stat(node.config).st_mode) == 0o600
    assert result["written"]["main_changed"] is True and result["written"]["dropin_changed"] is True
    assert result["written"]["main_lines_added"] == ['imports = ["%s"]' % node.dropin]
    assert stat.S_IMODE(os.stat(node.dropin).st_mode) == 0o644

    text = node.read(node.dropin)
    assert text.startswith("# Written by gpuop.gates (nvidia_runtime) for containerd %s" % version)
    doc = tomllib.loads(text)
    nvidia = {"runtime_type": "io.containerd.runc.v2",
              "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}}
    assert doc["version"] == 2
    assert list(doc["plugins"]) == [CRI]
    section = doc["plugins"][CRI]
    if major == 1:
        # Self-sufficient: the CRI section 1.x loads from the main file, plus nvidia.
        assert result["written"]["dropin_kind"] == "self-sufficient copy of the CRI section"
        assert section["sandbox_image"] == "registry.k8s.io/pause:3.9"
        assert section["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": "/etc/cni/net.d"}
        assert section["registry"] == {"mirrors": {"docker.io": {"endpoint": ["https://mirror.example.com"]}}}
        assert section["containerd"]["default_runtime_name"] == "runc"
        assert section["containerd"]["runtimes"] == {
            "runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}},
            "nvidia": nvidia}
        # Nothing else: without nvidia it is the main file's section exactly.
        without_nvidia = copy.deepcopy(section)
        del without_nvidia["containerd"]["runtimes"]["nvidia"]
        assert without_nvidia == tomllib.loads(node.main_text)["plugins"][CRI]
    else:
        assert result["written"]["dropin_kind"] == "minimal"
        assert section == {"containerd": {"runtimes": {"nvidia": nvidia}}}
    assert "io.containerd.internal.v1.opt" not in doc["plugins"]

    assert result["files"] == {"main": node.config, "main_imports": [node.dropin], "dropin": node.dropin,
                               "dropin_present": True, "dropin_runtimes": ["nvidia"] if major == 2 else ["nvidia", "runc"]}

    # What containerd would load from the files as written (read again, independently of the run).
    pred = merge.analyze(node.config, node.root)["predicted"]["containerd_%d" % major]
    assert pred["cri_loads"] is True and pred["default_runtime_name"] == "runc"
    assert pred["runtimes"] == ["nvidia", "runc"]
    assert pred["runtime_details"]["runc"]["systemd_cgroup"] is True
    assert pred["runtime_details"]["nvidia"]["systemd_cgroup"] is True
    assert pred["runtime_details"]["nvidia"]["binary_name"] == "/usr/bin/nvidia-container-runtime"
    assert pred["loaded_files"] == [node.config, node.dropin]
    assert result["predicted"]["runtimes"] == ["nvidia", "runc"]


@pytest.mark.parametrize("version", [pytest.param(V16, id="containerd-1.6"), pytest.param(V24, id="containerd-2.4.2")])
@pytest.mark.parametrize("loaded_view, restart_needed", [
    pytest.param(loaded("nvidia", "runc"), False, id="daemon-has-nvidia"),
    pytest.param(loaded("runc"), True, id="daemon-has-only-runc"),
    pytest.param(None, True, id="no-daemon"),
    pytest.param(dict(loaded("nvidia", "runc"), cri_loaded=False, error="CRI down"), True, id="cri-not-loaded"),
])
def test_second_run_changes_nothing(tmp_path, version, loaded_view, restart_needed):
    node = Node(tmp_path)
    node.run(version, loaded("runc"))
    written = node.snapshot()
    result = node.run(version, loaded_view)
    assert node.snapshot() == written
    assert result["changed"] is False and result["refused"] is False and result["refusals"] == []
    assert result["written"]["main_changed"] is False and result["written"]["dropin_changed"] is False
    assert result["written"]["main_lines_added"] == []
    assert result["restart_needed"] is restart_needed
    assert result["diff"][0]["before"] == result["diff"][0]["after"]
    assert result["diff"][1]["before"] == result["diff"][1]["after"]


@pytest.mark.parametrize("version", [pytest.param(V16, id="containerd-1.6"), pytest.param(V24, id="containerd-2.4.2")])
def test_check_mode_writes_nothing(tmp_path, version):
    node = Node(tmp_path)
    before = node.snapshot()
    result = node.run(version, loaded("runc"), check_mode=True)
    assert node.snapshot() == before
    assert not os.path.exists(node.dropin)
    assert result["changed"] is True and result["refused"] is False
    assert result["files"]["dropin_present"] is False and result["files"]["main_imports"] == []
    # The diff still shows what a real run would write.
    assert result["diff"][0]["after"] == expected_main_after(node)
    assert "nvidia" in tomllib.loads(result["diff"][1]["after"])["plugins"][CRI]["containerd"]["runtimes"]


@pytest.mark.parametrize("version", [pytest.param(V16, id="containerd-1.6"), pytest.param(V24, id="containerd-2.4.2")])
def test_glob_import_already_names_the_dropin(tmp_path, version):
    node = Node(tmp_path, imports_glob=True)
    result = node.run(version, loaded("runc"))
    assert result["refusals"] == []
    assert node.read(node.config) == node.main_text
    assert result["written"]["main_changed"] is False and result["written"]["dropin_changed"] is True
    assert os.path.exists(node.dropin)


# --------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------

REFUSALS = [
    pytest.param(dict(imports_glob=True, extra={"zz-registry.toml": REGISTRY_ONLY}), V16, {}, None,
                 ["zz-registry.toml is loaded after", "99-nvidia.toml and wins", "nvidia runtime would not load"],
                 id="1.6-registry-only-dropin-sorts-after-ours"),
    pytest.param(dict(imports_glob=True, extra={"zz-registry.toml": REGISTRY_ONLY}), V24, {}, None,
                 [], id="2.4.2-registry-only-dropin-sorts-after-ours-is-merged"),
    pytest.param(dict(imports_glob=True, extra={"00-registry.toml": REGISTRY_ONLY}), V16, {}, None,
                 [], id="1.6-registry-only-dropin-sorts-before-ours"),
    pytest.param({}, V16, {"handlers_in_use": ["kata"]}, None,
                 ["runtime kata (named by a RuntimeClass) would vanish under containerd 1.6.20~ds1"],
                 id="1.6-runtimeclass-handler-kata-undefined"),
    pytest.param({}, V24, {"handlers_in_use": ["kata"]}, None,
                 ["runtime kata (named by a RuntimeClass) would vanish under containerd 2.4.2"],
                 id="2.4.2-runtimeclass-handler-kata-undefined"),
    pytest.param({}, V16, {"handlers_in_use": ["runc", "nvidia"]}, None, [], id="1.6-runtimeclass-handlers-defined"),
    pytest.param({}, V16, {}, loaded("runc", "gvisor"),
                 ["runtime gvisor (loaded by the running daemon) would vanish under containerd 1.6.20~ds1"],
                 id="1.6-daemon-has-gvisor-files-do-not"),
    pytest.param({}, V24, {}, loaded("runc", "gvisor"),
                 ["runtime gvisor (loaded by the running daemon) would vanish under containerd 2.4.2"],
                 id="2.4.2-daemon-has-gvisor-files-do-not"),
    pytest.param({}, V16, {}, loaded("runc", "crun", default="crun"),
                 ["runtime crun (the running daemon's default runtime) would vanish"],
                 id="1.6-daemon-default-runtime-not-in-files"),
    pytest.param({}, V16, {}, dict(loaded("gvisor"), cri_loaded=False), [],
                 id="1.6-daemon-without-cri-is-no-evidence"),
    pytest.param(dict(default="crun"), V16, {}, None,
                 ["the CRI plugin would fail under containerd 1.6.20~ds1",
                  'no corresponding runtime configured in containerd.runtimes for containerd default_runtime_name = '
                  '"crun"'],
                 id="1.6-default-runtime-undefined"),
    pytest.param(dict(default="crun"), V24, {}, None,
                 ["the CRI plugin would fail under containerd 2.4.2", 'default_runtime_name = "crun"'],
                 id="2.4.2-default-runtime-undefined"),
]


@pytest.mark.parametrize("setup, version, overrides, loaded_view, expected", REFUSALS)
def test_refusals(tmp_path, setup, version, overrides, loaded_view, expected):
    node = Node(tmp_path, **setup)
    before = node.snapshot()
    result = node.run(version, loaded_view, **overrides)
    joined = "; ".join(result["refusals"])
    if not expected:
        assert result["refusals"] == [] and result["refused"] is False
        assert result["changed"] is True and os.path.exists(node.dropin)
        assert "nvidia" in result["predicted"]["runtimes"]
        return
    for part in expected:
        assert part in joined, joined
    assert result["refused"] is True and result["changed"] is False and result["restart_needed"] is False
    assert result["msg"].startswith("refused: ")
    # A refused run writes nothing.
    assert node.snapshot() == before
    assert not os.path.exists(node.dropin)
    assert result["files"]["dropin_present"] is False


@pytest.mark.parametrize("setup, version, overrides, loaded_view, expected", [
    p for p in REFUSALS if p.values[4]])
def test_force_writes_past_refusals(tmp_path, setup, version, overrides, loaded_view, expected):
    node = Node(tmp_path, **setup)
    result = node.run(version, loaded_view, force=True, **overrides)
    joined = "; ".join(result["refusals"])
    for part in expected:
        assert part in joined, joined
    assert result["forced"] is True and result["refused"] is False
    assert result["changed"] is True and result["restart_needed"] is True
    assert "FORCED past: " in result["msg"]
    assert os.path.exists(node.dropin)
    assert node.read(node.dropin) == result["diff"][1]["after"]
    assert node.read(node.config) == result["diff"][0]["after"]
    assert stat.S_IMODE(os.stat(node.config).st_mode) == 0o600


@pytest.mark.parametrize("overrides, version, expected", [
    pytest.param({"runtime_name": "nv idia"}, V16, "runtime_name: 'nv idia' is not a runtime handler name",
                 id="bad-runtime-name"),
    pytest.param({"handlers_in_use": ["ok", "bad,name"]}, V16, "handlers_in_use: 'bad,name' is not a runtime handler",
                 id="bad-handler-name"),
    pytest.param({"dropin": "@CONFIG@"}, V16, "dropin must not be the main file", id="dropin-is-main-file"),
    pytest.param({}, "3.0.0", "containerd '3.0.0': only containerd 1.x and 2.x are known", id="unknown-major"),
    pytest.param({}, "", "only containerd 1.x and 2.x are known", id="no-version"),
    pytest.param({"config": "@ROOT@/etc/containerd/missing.toml"}, V16, "missing.toml: no such file",
                 id="missing-main-file"),
])
def test_bad_input_raises(tmp_path, overrides, version, expected):
    node = Node(tmp_path)
    before = node.snapshot()
    overrides = {k: v.replace("@CONFIG@", node.config).replace("@ROOT@", node.root) if isinstance(v, str) else v
                 for k, v in overrides.items()}
    with pytest.raises(GpuopError) as caught:
        node.run(version, None, **overrides)
    assert expected in str(caught.value)
    assert node.snapshot() == before


# --------------------------------------------------------------------------------------------
# Rendering and the files view
# --------------------------------------------------------------------------------------------

PARAMS = {"runtime_name": "nvidia", "runtime_type": "io.containerd.runc.v2",
          "binary_name": "/usr/bin/nvidia-container-runtime"}


@pytest.mark.parametrize("main_version, systemd, plugin, version_key", [
    pytest.param(2, True, CRI, 2, id="v2-systemd"),
    pytest.param(2, False, CRI, 2, id="v2-cgroupfs"),
    pytest.param(0, True, CRI, 2, id="no-version-written-as-v2"),
    pytest.param(3, True, merge.CRI_ID_V3, 3, id="v3-new-plugin-id"),
])
def test_render_minimal(main_version, systemd, plugin, version_key):
    doc = tomllib.loads(dropin_mod.render_minimal(PARAMS, main_version, systemd, V24))
    options = {"BinaryName": "/usr/bin/nvidia-container-runtime"}
    if systemd:
        options["SystemdCgroup"] = True
    assert doc == {"version": version_key, "plugins": {plugin: {"containerd": {"runtimes": {
        "nvidia": {"runtime_type": "io.containerd.runc.v2", "options": options}}}}}}


@pytest.mark.parametrize("section, expected_runtimes", [
    pytest.param(None, ["nvidia", "runc"], id="no-section-built-in-runc-kept"),
    pytest.param({"sandbox_image": "p"}, ["nvidia", "runc"], id="no-containerd-table"),
    pytest.param({"containerd": {"snapshotter": "overlayfs"}}, ["nvidia", "runc"], id="no-runtimes-table"),
    pytest.param({"containerd": {"runtimes": {"crun": {"runtime_type": "io.containerd.runc.v2"}}}}, ["crun", "nvidia"],
                 id="own-runtimes-table-kept-as-is"),
])
def test_render_copy(section, expected_runtimes):
    original = copy.deepcopy(section)
    text = dropin_mod.render_copy(PARAMS, section, "/etc/containerd/config.toml", False, V16)
    doc = tomllib.loads(text)
    assert doc["version"] == 2 and list(doc["plugins"]) == [CRI]
    assert sorted(doc["plugins"][CRI]["containerd"]["runtimes"]) == expected_runtimes
    assert section == original  # the caller's section is not changed
    if section is not None:
        for key_name, value in section.items():
            if key_name != "containerd":
                assert doc["plugins"][CRI][key_name] == value
    assert "/etc/containerd/config.toml" in text.split("\n\n")[0]


def test_files_view_without_dropin(tmp_path):
    node = Node(tmp_path, imports_glob=True)
    assert dropin_mod.files_view(node.config, node.main_text, node.dropin, None) == {
        "main": node.config, "main_imports": ["%s/*.toml" % node.confd], "dropin": node.dropin,
        "dropin_present": False, "dropin_runtimes": []}


def test_1x_copy_is_of_the_section_that_wins_now(tmp_path):
    # 1.x loads only 00-registry.toml's CRI section now (it is the last file declaring it): the copy is of
    # that section, and a runtimes table that keeps the built-in runc (SystemdCgroup false, so nvidia's too).
    node = Node(tmp_path, imports_glob=True, extra={"00-registry.toml": REGISTRY_ONLY})
    result = node.run(V16, loaded("runc"))
    assert result["refusals"] == []
    section = tomllib.loads(node.read(node.dropin))["plugins"][CRI]
    assert section == {
        "registry": {"mirrors": {"quay.io": {"endpoint": ["https://quay-mirror.example.com"]}}},
        "containerd": {"runtimes": {
            "runc": {"runtime_type": "io.containerd.runc.v2"},
            "nvidia": {"runtime_type": "io.containerd.runc.v2",
                       "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}}}}
    assert "00-registry.toml" in node.read(node.dropin).split("version = 2")[0]
