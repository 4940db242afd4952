"""Node twins (playbooks/twins.yml, twins-down.yml): stand-in GPU nodes reached over real SSH.

Three twins of this test's own (their own folder and ports): Debian's containerd 1.6 under Python 3.8, the
built containerd 2.x under Python 3.10 and under Python 3.13 (the interpreters of /root/.pyenv). Ansible
reaches each over SSH with the inventory the playbook wrote. Each twin answers with its own hostname,
Python and containerd; a file written under /etc/containerd over SSH stays inside its twin; the host's
/etc/containerd and /run/containerd are as they were. A second start changes nothing. The teardown stops
every process of every twin (by its mount namespace) and removes the inventory.
"""

import hashlib
import json
import os
import socket
import subprocess

import pytest
import yaml

from gpuop_testlib import ROOT, ansible_env

PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
ANSIBLE = os.path.join(ROOT, ".venv", "bin", "ansible")
PYENV = "/root/.pyenv/versions"
TWINS = [("twin-py38", "system", "3.8.18", "1.6.20"), ("twin-py310", "built", "3.10.13", "2.4.2"),
         ("twin-py313", "built", "3.13.0", "2.4.2")]


def _free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def _digest(path):
    if not os.path.exists(path):
        return None
    if os.path.isdir(path):
        return sorted(os.listdir(path))
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _playbook(name, extra):
    proc = subprocess.run([PLAYBOOK, os.path.join(ROOT, "playbooks", name), "-e", json.dumps(extra)], cwd=ROOT,
                          env=ansible_env(), capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def _changed(stdout):
    return int(stdout.split("changed=")[-1].split()[0])


def _on_twins(inventory, args):
    """Each twin's result of one ad-hoc module run over SSH (the json callback)."""
    proc = subprocess.run([ANSIBLE, "-i", inventory, "gpu_nodes"] + args, cwd=ROOT,
                          env=ansible_env({"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
                                          "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json"}),
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    for _name, _containerd, python, _version in TWINS:
        assert os.path.isfile(os.path.join(PYENV, python, "bin", "python3")), "Python %s is not under %s" % (python, PYENV)
    folder = str(tmp_path_factory.mktemp("twins"))
    ports = _free_ports(len(TWINS))
    extra = {"node_twins_dir": folder, "node_twins_inventory": os.path.join(folder, "inventory.yml"),
             "node_twins_list": [{"name": name, "port": port, "containerd": containerd,
                                  "python": os.path.join(PYENV, python, "bin", "python3")}
                                 for (name, containerd, python, _v), port in zip(TWINS, ports)]}
    host_before = {p: _digest(p) for p in ("/etc/containerd/config.toml", "/etc/containerd", "/run/containerd")}
    try:
        # Inside the try: twins.yml that fails half-way has started some twins, and twins-down.yml stops them.
        first = _playbook("twins.yml", extra)
        yield {"extra": extra, "folder": folder, "first": first, "host_before": host_before}
    finally:
        _playbook("twins-down.yml", extra)


def test_each_twin_answers_over_ssh_with_its_own_hostname_python_and_containerd(twins):
    inventory = twins["extra"]["node_twins_inventory"]
    with open(inventory) as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]["gpu_nodes"]["hosts"]
    assert sorted(hosts) == sorted(t[0] for t in TWINS)
    assert all(h["ansible_connection"] == "ssh" and h["ansible_host"] == "127.0.0.1" for h in hosts.values())
    script = ("hostname; "
              "{{ ansible_python_interpreter }} -c 'import sys; print(\"%d.%d.%d\" % sys.version_info[:3])'; "
              "ctr version 2>/dev/null | sed -n '/Server:/,$p' | sed -n 's/^ *Version: *//p'")
    answers = _on_twins(inventory, ["-m", "ansible.builtin.shell", "-a", script])
    for name, _containerd, python, version in TWINS:
        lines = answers[name]["stdout_lines"]
        assert lines[0] == name, answers[name]
        assert lines[1] == python, answers[name]
        assert lines[2].startswith(version), answers[name]


def test_the_modules_run_on_each_twins_python(twins):
    # Ansible's own module (AnsiballZ) on 3.8, 3.10 and 3.13, over SSH: what a node-side module will need.
    answers = _on_twins(twins["extra"]["node_twins_inventory"], ["-m", "ansible.builtin.setup", "-a", "filter=ansible_python_version"])
    for name, _containerd, python, _version in TWINS:
        assert answers[name]["ansible_facts"]["ansible_python_version"] == python, answers[name]


def test_what_a_twin_writes_stays_inside_it_and_the_host_is_untouched(twins):
    inventory = twins["extra"]["node_twins_inventory"]
    marker = "/etc/containerd/twin-test.toml"
    _on_twins(inventory, ["-m", "ansible.builtin.copy", "-a", "dest=%s content='# {{ inventory_hostname }}\n' mode=0644" % marker])
    seen = _on_twins(inventory, ["-m", "ansible.builtin.command", "-a", "cat %s" % marker])
    for name, _c, _p, _v in TWINS:
        assert seen[name]["stdout"] == "# %s" % name, seen[name]
    assert not os.path.exists(marker)
    assert {p: _digest(p) for p in twins["host_before"]} == twins["host_before"]


def test_a_second_start_changes_nothing(twins):
    inventory = twins["extra"]["node_twins_inventory"]
    before = _digest(inventory)
    again = _playbook("twins.yml", twins["extra"])
    assert _changed(twins["first"]) >= 2 and _changed(again) == 0, again[-2000:]
    assert _digest(inventory) == before


def test_the_teardown_stops_every_process_of_every_twin(tmp_path):
    folder = str(tmp_path)
    [port] = _free_ports(1)
    extra = {"node_twins_dir": folder, "node_twins_inventory": os.path.join(folder, "inventory.yml"),
             "node_twins_list": [{"name": "twin-down", "port": port, "containerd": "system"}]}
    try:
        _playbook("twins.yml", extra)
        with open(os.path.join(folder, "twin-down", "twin.json")) as handle:
            record = json.load(handle)
    except BaseException:
        _playbook("twins-down.yml", extra)
        raise
    namespace = record["mnt_ns"]

    def members():
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.readlink("/proc/%s/ns/mnt" % entry) == namespace:
                    found.append(int(entry))
            except OSError:
                pass
        return found

    assert len(members()) >= 2  # sshd and the twin's containerd at least
    down = _playbook("twins-down.yml", extra)
    assert _changed(down) >= 1
    assert members() == [] and not os.path.exists(os.path.join(folder, "inventory.yml"))
    assert _changed(_playbook("twins-down.yml", extra)) == 0


def test_the_merge_prediction_runs_on_each_twins_python_over_ssh(twins):
    # containerd_merge on the node itself, Python 3.8, 3.10 and 3.13 (no tomllib before 3.11: gpuop's own
    # TOML reader), on the twin's own main config: runc only, with SystemdCgroup; both versions load it.
    answers = _on_twins(twins["extra"]["node_twins_inventory"],
                        ["-m", "gpuop.gates.containerd_merge", "-a", "config=/etc/containerd/config.toml"])
    for name, _containerd, python, _version in TWINS:
        result = answers[name]
        assert not result.get("failed"), result
        assert result["main_runtimes"] == ["runc"] and result["dropin_runtimes"] == [], result
        for version in ("containerd_1", "containerd_2"):
            assert result["predicted"][version]["runtimes"] == ["runc"], result["predicted"]
            assert result["predicted"][version]["cri_loads"] is True, result["predicted"]
        assert result["predicted"]["containerd_1"]["runtime_details"]["runc"]["runtime_type"] == "io.containerd.runc.v2"


def test_a_cluster_module_on_a_host_reached_over_ssh_runs_as_a_module(twins, lab_kubeconfig):
    # The action plugin of k8s_apply runs the module in Ansible's worker only on the controller. Reached over
    # SSH it sends the module to the host (AnsiballZ) as before. A node has no kubernetes package, so the
    # twin runs it with this checkout's venv Python (the host's /work and /tmp are visible in a twin).
    venv_python = os.path.join(ROOT, ".venv", "bin", "python")
    proc = subprocess.run(
        [ANSIBLE, "-i", twins["extra"]["node_twins_inventory"], "twin-py310", "-vvv", "-e", "ansible_python_interpreter=%s" % venv_python,
         "-m", "gpuop.gates.k8s_apply",
         "-a", json.dumps({"kubeconfig": lab_kubeconfig, "read": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]})],
        cwd=ROOT, env=ansible_env({"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"}), capture_output=True, text=True, check=False,
        timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "gpuop.gates.k8s_apply: runs as a module (connection ssh)" in proc.stdout
    assert "AnsiballZ_k8s_apply.py" in proc.stdout and "SSH: EXEC ssh" in proc.stdout
    head = "twin-py310 | SUCCESS => "
    assert proc.stdout.count(head) == 1, proc.stdout[-3000:]
    rest = proc.stdout[proc.stdout.index(head) + len(head):]
    assert rest.startswith("{"), rest[:2000]
    result, _end = json.JSONDecoder().raw_decode(rest)
    assert result["read"][0]["kind"] == "Namespace" and result["read"][0]["metadata"]["name"] == "default", result
