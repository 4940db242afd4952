"""Controller modules run in-process (plugins/action, plugin_utils/in_process.py): same results as a module run.

One playbook of gpuop tasks on the controller, run twice: once as it runs by default (each task's module
``main()`` inside the Ansible worker), once with ``gpuop_in_process=false`` (AnsiballZ, a new Python per
task). Both are asked at -vvv, which says which way each task ran, so the comparison is between the two
real paths. The tasks cover success, a file written and re-run (changed, then not), check mode with diff, a
module's own failure message, argument-spec errors (an unknown option, a wrong type, a missing one), a loop,
task-level no_log, a task environment (TMPDIR), a read of the live test cluster and a bounded wait that
times out on it. Every task's result must be the same, key for key, but for the time a wait took.
"""

import json
import os
import re
import subprocess

import pytest

from gpuop_testlib import ROOT, ansible_env

PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")

CONFIG = """version: v1
sharing:
  timeSlicing:
    resources:
      - name: nvidia.com/gpu
        replicas: 5
"""

PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    cfg: {config}
    out: {out}
  tasks:
    - name: sharing written
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 4, vram_per_gpu_gib: 40, advertised: 20,
                                dest: "{{{{ out }}}}/slots.txt"}}
    - name: sharing again (changed=false)
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 4, vram_per_gpu_gib: 40, advertised: 20,
                                dest: "{{{{ out }}}}/slots.txt"}}
    - name: check mode and diff
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 4, vram_per_gpu_gib: 40, advertised: 19,
                                dest: "{{{{ out }}}}/slots.txt"}}
      check_mode: true
      diff: true
    - name: the module's own failure
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 0, vram_per_gpu_gib: 40}}
      ignore_errors: true
    - name: an unknown option
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 4, vram_per_gpu_gib: 40, bogus: 1}}
      ignore_errors: true
    - name: a wrong type
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: four, vram_per_gpu_gib: 40}}
      ignore_errors: true
    - name: a missing option
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", vram_per_gpu_gib: 40}}
      ignore_errors: true
    - name: a loop
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: "{{{{ item }}}}", vram_per_gpu_gib: 40}}
      loop: [1, 2, 4]
    - name: no_log
      gpuop.gates.gpu_sharing: {{config: "{{{{ cfg }}}}", physical_gpus: 4, vram_per_gpu_gib: 40}}
      no_log: true
    - name: a task environment (a path option expands the variable it sets)
      gpuop.gates.containerd_merge: {{config: "$GPUOP_IN_PROCESS_OUT/config.toml"}}
      environment:
        GPUOP_IN_PROCESS_OUT: "{{{{ out }}}}"
        TMPDIR: "{{{{ out }}}}/tmp"
    - name: read the live cluster
      gpuop.gates.k8s_apply:
        kubeconfig: {kubeconfig}
        read: [{{apiVersion: v1, kind: Namespace, metadata: {{name: default}}}}]
    - name: a bounded wait that times out
      gpuop.gates.pod_wait: {{kubeconfig: {kubeconfig}, name: gpuop-in-process-no-such-pod, phase: Running, timeout: 1}}
      ignore_errors: true
"""

MAIN_TOML = """version = 2
imports = ["/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""

# The only values that may differ between two runs of the same task: how long a wait took.
VOLATILE = re.compile(r"\d+\.\d+ ?s\b")


def _run(tmp_path, kubeconfig, in_process):
    out = tmp_path / ("in-process" if in_process else "module")
    (out / "tmp").mkdir(parents=True)
    (out / "config.toml").write_text(MAIN_TOML)
    playbook = tmp_path / ("play-%s.yml" % in_process)
    playbook.write_text(PLAY.format(config=json.dumps(CONFIG), out=json.dumps(str(out)), kubeconfig=json.dumps(kubeconfig)))
    proc = subprocess.run(
        [PLAYBOOK, str(playbook), "-vvv", "-e", "gpuop_in_process=%s" % in_process], cwd=ROOT,
        env=ansible_env({"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"}),
        capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out, proc.stdout


def _results(stdout, out):
    """Each task's result (loop items too) from the default callback's JSON lines, with the root normalised."""
    found = []
    for line in stdout.splitlines():
        match = re.match(r"^(ok|changed|fatal|skipping): \[localhost\].*? => (\{.*\})$", line)
        if match:
            text = VOLATILE.sub("<time>", match.group(2).replace(str(out), "<out>"))
            result = json.loads(text)
            result.pop("_ansible_no_log", None)
            found.append((match.group(1), result))
    return found


def test_controller_modules_give_the_same_results_in_process_as_a_module_run(tmp_path, lab_kubeconfig):
    out_in, stdout_in = _run(tmp_path, lab_kubeconfig, True)
    out_mod, stdout_mod = _run(tmp_path, lab_kubeconfig, False)

    # Each path was the one asked for.
    assert stdout_in.count("runs in-process on the controller") == 14, stdout_in[-3000:]
    assert "AnsiballZ" not in stdout_in
    assert stdout_mod.count("runs as a module (gpuop_in_process is false)") == 14, stdout_mod[-3000:]
    assert stdout_mod.count("AnsiballZ_gpu_sharing.py") >= 10

    got_in, got_mod = _results(stdout_in, out_in), _results(stdout_mod, out_mod)
    assert len(got_in) == len(got_mod) == 14, (len(got_in), len(got_mod))
    for (status_in, one_in), (status_mod, one_mod) in zip(got_in, got_mod):
        assert status_in == status_mod
        assert one_in == one_mod

    # What the results say, so the comparison cannot pass on two equal empty answers.
    statuses = [status for status, _ in got_in]
    assert statuses == ["changed", "ok", "changed"] + ["fatal"] * 4 + ["ok"] * 6 + ["fatal"], statuses
    assert got_in[2][1]["diff"]["after"].count("ADVERTISED=19") == 1 and got_in[2][1]["changed"] is True
    assert got_in[3][1]["msg"] == "physical_gpus must be at least 1, got 0"
    assert "Unsupported parameters for (gpuop.gates.gpu_sharing) module: bogus" in got_in[4][1]["msg"]
    assert "physical_gpus" in got_in[5][1]["msg"] and "int" in got_in[5][1]["msg"]
    assert got_in[6][1]["msg"] == "missing required arguments: physical_gpus"
    assert [r["slots"] for _, r in got_in[7:10]] == [5, 10, 20]
    assert "slots" not in got_in[10][1] and "censored" in got_in[10][1]
    assert got_in[11][1]["main_runtimes"] == ["runc"], got_in[11][1]
    assert got_in[11][1]["invocation"]["module_args"]["config"] == "<out>/config.toml"
    assert got_in[12][1]["read"][0]["metadata"]["name"] == "default"
    assert got_in[13][0] == "fatal" and "gpuop-in-process-no-such-pod" in got_in[13][1]["msg"]
    for folder in (out_in, out_mod):
        assert (folder / "slots.txt").read_text().splitlines()[2] == "ADVERTISED=20"
        assert os.listdir(folder / "tmp") == []


@pytest.mark.parametrize("interpreter, expected", [
    (None, True), ("auto_silent", True), ("auto", True),
    (os.path.join(ROOT, ".venv", "bin", "python"), True),
    (os.path.join(ROOT, ".venv", "bin", "python3"), True),
    # the venv's base Python is the same file, but imports another site-packages
    (os.path.realpath(os.path.join(ROOT, ".venv", "bin", "python")), False),
    ("/usr/bin/python3", False), ("/no/such/python", False),
])
def test_in_process_only_with_the_controllers_own_python(interpreter, expected):
    from ansible_collections.gpuop.gates.plugins.plugin_utils.in_process import same_python

    assert same_python(interpreter, os.path.join(ROOT, ".venv", "bin", "python")) is expected
