"""kwok_cluster's reading of a failed cluster's logs: the last error line of each component, as it says it.

The lines are real ones, from a cluster whose etcd found its port taken (2026-12-03).
"""

import json
import os
import subprocess

from gpuop_testlib import ROOT, ansible_env

ETCD = [
    '{"level":"info","ts":"2026-12-03T07:17:14.925209Z","caller":"embed/etcd.go:138","msg":"configuring peer listeners",'
    '"listen-peer-urls":["http://0.0.0.0:32751"]}',
    '{"level":"error","ts":"2026-12-03T07:17:14.925406Z","caller":"embed/etcd.go:586","msg":"creating peer listener failed",'
    '"error":"listen tcp 0.0.0.0:32751: bind: address already in use","stacktrace":"go.etcd.io/etcd/server/v3/embed..."}',
    '{"level":"fatal","ts":"2026-12-03T07:17:14.947135Z","caller":"etcdmain/etcd.go:183","msg":"discovery failed",'
    '"error":"listen tcp 0.0.0.0:32751: bind: address already in use","stacktrace":"go.etcd.io/etcd/server/v3/etcdmain..."}',
]
APISERVER = [
    'W1203 07:17:25.274406   32013 logging.go:55] [core] [Channel #3 SubChannel #9] grpc: addrConn.createTransport failed',
    'E1203 07:17:35.434788   32013 run.go:72] "command failed" err="error creating storage factory: context deadline exceeded"',
    'I1203 07:17:35.5   32013 something.go:1] after the error',
]
KWOK = ['{"time":"2026-12-03T07:17:15Z","level":"INFO","msg":"Starting"}']


def _log_errors(workdir, cluster):
    playbook = os.path.join(workdir, "errors.yml")
    with open(playbook, "w") as handle:
        json.dump([{"hosts": "localhost", "gather_facts": False,
                    "vars_files": [os.path.join(ROOT, "roles", "kwok_cluster", "vars", "main.yml")],
                    "vars": {"kwok_cluster_name": cluster},
                    "tasks": [{"ansible.builtin.debug": {"var": "_kwok_cluster_log_errors"}}]}], handle)
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), playbook], cwd=ROOT,
                          capture_output=True, text=True,
                          env=ansible_env({"KWOK_WORKDIR": workdir, "ANSIBLE_STDOUT_CALLBACK": "json",
                                           "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json",
                                           "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["_kwok_cluster_log_errors"]


def test_the_last_error_line_of_each_component_is_named(tmp_path):
    logs = tmp_path / "clusters" / "lab" / "logs"
    logs.mkdir(parents=True)
    (logs / "etcd.log").write_text("\n".join(ETCD) + "\n")
    (logs / "kube-apiserver.log").write_text("\n".join(APISERVER) + "\n")
    (logs / "kwok-controller.log").write_text("\n".join(KWOK) + "\n")
    assert _log_errors(str(tmp_path), "lab") == [
        "etcd.log: discovery failed: listen tcp 0.0.0.0:32751: bind: address already in use",
        'kube-apiserver.log: E1203 07:17:35.434788   32013 run.go:72] "command failed" err="error creating storage '
        'factory: context deadline exceeded"',
    ]


def test_no_logs_no_lines(tmp_path):
    assert _log_errors(str(tmp_path), "lab") == []
