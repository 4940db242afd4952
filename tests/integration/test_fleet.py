"""The doctor's fleet gate on node twins prepared by hand, one twin per verdict, the way incidents leave nodes.

Seven twins of this test's own (Debian's containerd 1.6.20 and the built 2.4.2), reached over real SSH by
playbooks/doctor.yml (its first play reads each node with containerd_node_view, read-only), against the
test cluster. What each twin was made into, over SSH, and the verdicts the doctor must give it, exactly:

* pending (2.4.2): a minimal nvidia drop-in imported, containerd not restarted -> restart-pending;
* crifail (1.6): the same drop-in, not restarted; under 1.x it replaces the CRI section and runc is gone ->
  cri-fails-on-restart, dropin-minimal-on-1x;
* dropped (1.6): nvidia in the main file and loaded; then a registry-only drop-in imported (gpu-operator
  issue 301), not restarted -> runtime-dropped-on-restart, dropin-minimal-on-1x;
* handler (1.6): untouched, but a pod whose RuntimeClass names handler nvidia runs on its (kwok) node ->
  handler-not-loaded;
* orphan (1.6): the drop-in written to config.d/, which nothing imports (toolkit issue 1404) -> orphan-dropin;
* incomplete (2.4.2): nvidia without runtime_type, imported and restarted (toolkit issue 1956) ->
  runtime-incomplete, with the file and the line of its table;
* v3path (1.6): the 2.x plugin path in a version 3 drop-in, imported and restarted -> plugin-path-ignored.

The doctor writes nothing on any twin (every file under /etc/containerd byte-identical), and --check prints
the same findings.
"""

import json
import os
import socket
import subprocess
import uuid

import pytest
import yaml

from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster, NotFound
from gpuop_testlib import ROOT, ansible_env

PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
SFX = uuid.uuid4().hex[:5]
IMPORT = "sed -i '1a imports = [\"/etc/containerd/conf.d/*.toml\"]' /etc/containerd/config.toml && mkdir -p /etc/containerd/conf.d"
RESTART = "/etc/gpuop-twin/containerd-service restart"
MINIMAL = ('printf \'version = 2\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\\n'
           '  runtime_type = "io.containerd.runc.v2"\\n\' > %s')
TWINS = {
    "pending": ("built", [IMPORT, MINIMAL % "/etc/containerd/conf.d/99-nvidia.toml"], {"restart-pending"}),
    "crifail": ("system", [IMPORT, MINIMAL % "/etc/containerd/conf.d/99-nvidia.toml"],
                {"cri-fails-on-restart", "dropin-minimal-on-1x"}),
    "dropped": ("system", [
        'printf \'[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\\n  runtime_type = "io.containerd.runc.v2"\\n\''
        " >> /etc/containerd/config.toml", RESTART, IMPORT,
        'printf \'version = 2\\n[plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.example.com"]\\n'
        '  endpoint = ["https://mirror.example.com"]\\n\' > /etc/containerd/conf.d/50-registry.toml'],
        {"runtime-dropped-on-restart", "dropin-minimal-on-1x"}),
    "handler": ("system", [], {"handler-not-loaded"}),
    "orphan": ("system", ["mkdir -p /etc/containerd/config.d", MINIMAL % "/etc/containerd/config.d/99-nvidia.toml"],
               {"orphan-dropin"}),
    "incomplete": ("built", [IMPORT, 'printf \'version = 2\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\\n'
                             '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\\n'
                             '    BinaryName = "/usr/bin/nvidia-container-runtime"\\n\' > /etc/containerd/conf.d/99-nvidia.toml',
                             RESTART], {"runtime-incomplete"}),
    "v3path": ("system", [IMPORT, 'printf \'version = 3\\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\\n'
                          '  runtime_type = "io.containerd.runc.v2"\\n\' > /etc/containerd/conf.d/99-nvidia.toml', RESTART],
               {"plugin-path-ignored"}),
}


def _name(kind):
    return "fl-%s-%s" % (SFX, kind)


def _free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def _playbook(args, check=True):
    proc = subprocess.run([PLAYBOOK] + args, cwd=ROOT, env=ansible_env({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}),
                          capture_output=True, text=True, check=False, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    return proc


def _on(hosts, name, command):
    host = hosts[name]
    proc = subprocess.run(["ssh", "-i", host["ansible_ssh_private_key_file"], "-p", str(host["ansible_port"]),
                           "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                           "-o", "BatchMode=yes", "root@127.0.0.1", command], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, "%s on %s: %s" % (command, name, proc.stderr)
    return proc.stdout


def _tree(hosts, name):
    return _on(hosts, name, "find /etc/containerd -type f | sort | xargs sha256sum")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, lab_kubeconfig):
    folder = str(tmp_path_factory.mktemp("fleet"))
    extra = {"node_twins_dir": folder, "node_twins_inventory": os.path.join(folder, "inventory.yml"),
             "node_twins_list": [{"name": _name(kind), "port": port, "containerd": containerd}
                                 for (kind, (containerd, _steps, _codes)), port in zip(sorted(TWINS.items()),
                                                                                       _free_ports(len(TWINS)))]}
    cluster = Cluster(lab_kubeconfig)
    namespace, rc_name, node = _name("ns"), _name("rc"), _name("handler")
    try:
        # Inside the try: twins.yml that fails half-way has started some twins, and twins-down.yml stops them.
        _playbook([os.path.join("playbooks", "twins.yml"), "-e", json.dumps(extra)])
        with open(extra["node_twins_inventory"]) as handle:
            hosts = yaml.safe_load(handle)["all"]["children"]["gpu_nodes"]["hosts"]
        for kind, (_containerd, steps, _codes) in TWINS.items():
            for step in steps:
                _on(hosts, _name(kind), step)
        cluster.request("POST", "/api/v1/nodes", body={
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        cluster.request("POST", "/apis/node.k8s.io/v1/runtimeclasses", body={
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": rc_name}, "handler": "nvidia"})
        cluster.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        cluster.request("POST", "/api/v1/namespaces/%s/pods" % namespace, body={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda"},
            "spec": {"nodeName": node, "runtimeClassName": rc_name, "containers": [{"name": "c", "image": "cuda"}]}})
        yield {"folder": folder, "hosts": hosts, "inventory": extra["node_twins_inventory"], "kubeconfig": lab_kubeconfig}
    finally:
        for path in ("/api/v1/namespaces/%s" % namespace, "/apis/node.k8s.io/v1/runtimeclasses/%s" % rc_name,
                     "/api/v1/nodes/%s" % node):
            try:
                cluster.request("DELETE", path, query={"gracePeriodSeconds": "0"})
            except NotFound:
                pass
        _playbook([os.path.join("playbooks", "twins-down.yml"), "-e", json.dumps(extra)])


def _doctor(fleet, out, check=False):
    args = [os.path.join("playbooks", "doctor.yml"), "-i", os.path.join(ROOT, "inventory", "hosts.yml"), "-i", fleet["inventory"],
            "-e", "gpuop_kubeconfig=%s" % fleet["kubeconfig"], "-e", "doctor_output_dir=%s" % out,
            "-e", "gpuop_root=%s" % os.path.join(fleet["folder"], "root")]
    return _playbook(args + (["--check"] if check else []))


def _findings_block(stdout):
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TASK [Show the findings"))
    return [line for line in lines[start + 1:] if line.startswith("        ")]


def test_each_prepared_break_is_named_on_its_node_and_nothing_is_written(fleet):
    before = {name: _tree(fleet["hosts"], name) for name in fleet["hosts"]}
    out = os.path.join(fleet["folder"], "out")
    run = _doctor(fleet, out)
    with open(os.path.join(out, "doctor.json")) as handle:
        report = json.load(handle)
    found = {name: set() for name in fleet["hosts"]}
    for item in report["findings"]:
        if item["gate"] == "containerd-nodes":
            for name in item["details"]["nodes"]:
                found[name].add(item["code"])
    assert found == {_name(kind): codes for kind, (_c, _s, codes) in TWINS.items()}, json.dumps(report["findings"], indent=1)
    incomplete = [f for f in report["findings"] if f["code"] == "runtime-incomplete"][0]
    assert incomplete["details"]["file"] == "/etc/containerd/conf.d/99-nvidia.toml"
    assert incomplete["details"]["line"] == 2 and incomplete["details"]["runtime"] == "nvidia"
    matrix = report["nodes"]
    assert matrix[_name("handler")]["handlers"] == "broken" and matrix[_name("orphan")]["files"] == "broken"
    assert matrix[_name("pending")] == {"read": "ok", "restart": "broken", "files": "ok", "handlers": "ok"}
    assert report["gates"]["containerd-nodes"]["state"] == "broken"
    assert {name: _tree(fleet["hosts"], name) for name in fleet["hosts"]} == before
    checked = _doctor(fleet, os.path.join(fleet["folder"], "out-check"), check=True)
    assert _findings_block(checked.stdout) == _findings_block(run.stdout)
    assert not os.path.exists(os.path.join(fleet["folder"], "out-check", "doctor.json"))
