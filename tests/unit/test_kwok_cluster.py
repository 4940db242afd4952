"""kwok_cluster's lifecycle decisions and its reading of a failed cluster's logs (module_utils kwok_cluster).

The log lines are real ones, from a cluster whose etcd found its port taken (2026-12-03).
"""

import pytest

import gpuop_testlib  # noqa: F401 - puts the collection on the path
from ansible_collections.gpuop.gates.plugins.module_utils import kwok_cluster as kc

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


def test_the_last_error_line_of_each_component_is_named(tmp_path):
    logs = tmp_path / "clusters" / "lab" / "logs"
    logs.mkdir(parents=True)
    (logs / "etcd.log").write_text("\n".join(ETCD) + "\n")
    (logs / "kube-apiserver.log").write_text("\n".join(APISERVER) + "\n")
    (logs / "kwok-controller.log").write_text("\n".join(KWOK) + "\n")
    assert kc.log_errors(str(logs)) == [
        "etcd.log: discovery failed: listen tcp 0.0.0.0:32751: bind: address already in use",
        'kube-apiserver.log: E1203 07:17:35.434788   32013 run.go:72] "command failed" err="error creating storage '
        'factory: context deadline exceeded"',
    ]


def test_no_logs_no_lines(tmp_path):
    assert kc.log_errors(str(tmp_path / "clusters" / "lab" / "logs")) == []


@pytest.mark.parametrize("listed,answers,step", [
    (False, False, "create"),
    (True, True, "keep"),
    (True, False, "start"),
])
def test_first_step(listed, answers, step):
    assert kc.first_step(listed, answers) == step


@pytest.mark.parametrize("started,answers,owned,verdict", [
    (True, True, False, "ok"),
    (True, True, True, "ok"),
    (True, False, True, "recreate"),   # kwokctl start exited 0, the API server is silent: ours, so recreate
    (False, False, True, "recreate"),
    (True, False, False, "refuse"),    # not ours: never deleted
    (False, False, False, "refuse"),
])
def test_after_start(started, answers, owned, verdict):
    assert kc.after_start(started, answers, owned) == verdict


@pytest.mark.parametrize("answers,attempt,verdict", [
    (True, 1, "ok"), (False, 1, "retry"), (False, 2, "fail"), (True, 2, "ok"),
])
def test_after_create(answers, attempt, verdict):
    assert kc.after_create(answers, attempt) == verdict


class FakeKwokctl:
    """kwokctl and kubectl as scripted answers: each call pops the next (rc, out, err) of its verb."""

    def __init__(self, script):
        self.script = {key: list(value) for key, value in script.items()}
        self.calls = []

    def __call__(self, argv):
        verb = "readyz" if "/readyz" in argv else " ".join(argv[1:3])
        self.calls.append(verb)
        return self.script[verb].pop(0)


def _params(tmp_path, name="lab"):
    bins = tmp_path / "bin"
    bins.mkdir()
    for binary in kc.BINARIES:
        (bins / binary).write_text("")
    home = tmp_path / "kwok"
    (home / "clusters" / name).mkdir(parents=True)
    (home / "clusters" / name / "kubeconfig.yaml").write_text("kubeconfig of %s\n" % name)
    return {"name": name, "kubeconfig": str(tmp_path / "out" / "kubeconfig"), "bin_dir": str(bins),
            "create_args": [], "wait_timeout": 60, "kwok_home": str(home)}


def test_a_missing_cluster_is_marked_created_and_its_kubeconfig_written_0600(tmp_path):
    params = _params(tmp_path)
    run = FakeKwokctl({"get clusters": [(0, "other\n", "")], "create cluster": [(0, "", "")], "readyz": [(0, "ok", "")]})
    result = kc.ensure(params, run)
    assert result["action"] == "created" and result["changed"]
    assert run.calls == ["get clusters", "create cluster", "readyz"]
    assert (tmp_path / "out" / ".gpuop-cluster-lab").read_text() == "lab\n"
    assert (tmp_path / "out" / "kubeconfig").read_text() == "kubeconfig of lab\n"
    assert (tmp_path / "out" / "kubeconfig").stat().st_mode & 0o777 == 0o600


def test_an_answering_cluster_is_kept_and_nothing_changes(tmp_path):
    params = _params(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kubeconfig").write_text("kubeconfig of lab\n")
    (tmp_path / "out" / "kubeconfig").chmod(0o600)
    run = FakeKwokctl({"get clusters": [(0, "lab\n", "")], "readyz": [(0, "ok", "")]})
    assert kc.ensure(params, run) == {"changed": False, "action": "kept", "steps": [], "kubeconfig": params["kubeconfig"]}


def test_a_silent_cluster_not_ours_is_refused_with_the_reset_command(tmp_path):
    params = _params(tmp_path)
    run = FakeKwokctl({"get clusters": [(0, "lab\n", "")], "readyz": [(1, "", "connection refused"), (1, "", "still refused")],
                       "stop cluster": [(0, "", "")], "start cluster": [(0, "", "")]})
    with pytest.raises(kc.GpuopError, match=r"neither answers nor starts \(still refused\), and gpuop did not create it.*"
                                            r"kwokctl delete cluster --name lab"):
        kc.ensure(params, run)
    assert "delete cluster" not in run.calls


def test_a_silent_cluster_of_ours_is_deleted_and_created_again(tmp_path):
    params = _params(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".gpuop-cluster-lab").write_text("lab\n")
    run = FakeKwokctl({"get clusters": [(0, "lab\n", "")], "readyz": [(1, "", "refused"), (1, "", "refused"), (0, "ok", "")],
                       "stop cluster": [(0, "", "")], "start cluster": [(0, "", "")],
                       "delete cluster": [(0, "", "")], "create cluster": [(0, "", "")]})
    result = kc.ensure(params, run)
    assert result["action"] == "recreated"
    assert run.calls == ["get clusters", "readyz", "stop cluster", "start cluster", "readyz", "delete cluster",
                         "create cluster", "readyz"]


def test_a_new_cluster_silent_twice_fails_naming_both_attempts(tmp_path):
    params = _params(tmp_path)
    logs = tmp_path / "kwok" / "clusters" / "lab" / "logs"
    logs.mkdir()
    (logs / "etcd.log").write_text("\n".join(ETCD) + "\n")
    run = FakeKwokctl({"get clusters": [(0, "", "")], "readyz": [(1, "", "refused"), (1, "", "refused again")],
                       "create cluster": [(0, "", ""), (0, "", "")], "delete cluster": [(0, "", "")]})
    with pytest.raises(kc.GpuopError) as err:
        kc.ensure(params, run)
    assert "created twice" in err.value.msg and "(refused again)" in err.value.msg
    assert err.value.msg.count("bind: address already in use") == 2
    assert run.calls == ["get clusters", "create cluster", "readyz", "delete cluster", "create cluster", "readyz"]


def test_check_mode_runs_only_the_questions(tmp_path):
    params = _params(tmp_path)
    run = FakeKwokctl({"get clusters": [(0, "", "")]})
    result = kc.ensure(params, run, check_mode=True)
    assert result["action"] == "would create" and result["changed"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("change,message", [
    ({"name": "Lab_1"}, "name=\"Lab_1\" must be a DNS label"),
    ({"wait_timeout": 0}, "wait_timeout must be at least 1"),
])
def test_bad_parameters(tmp_path, change, message):
    params = _params(tmp_path)
    params.update(change)
    with pytest.raises(kc.GpuopError, match=message):
        kc.ensure(params, FakeKwokctl({}))


def test_missing_binaries_are_named(tmp_path):
    params = _params(tmp_path)
    (tmp_path / "bin" / "kwokctl").unlink()
    with pytest.raises(kc.GpuopError, match="lacks kwokctl"):
        kc.ensure(params, FakeKwokctl({}))


def _held_elsewhere(path):
    """True when another open file description holds the lock (what a second run would meet)."""
    import fcntl

    with open(path, "a") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other, fcntl.LOCK_UN)
        return False


@pytest.mark.parametrize("listed,readyz,calls", [
    # a new cluster: kwokctl create and the look at what it made run under the lock
    (False, [(0, "ok", "")], [("get clusters", False), ("create cluster", True), ("readyz", True)]),
    # a silent one: stop, start and the look after them run under the lock
    (True, [(1, "", "refused"), (0, "ok", "")],
     [("get clusters", False), ("readyz", False), ("stop cluster", True), ("start cluster", True), ("readyz", True)]),
    # an answering one: no lock taken at all
    (True, [(0, "ok", "")], [("get clusters", False), ("readyz", False)]),
])
def test_kwokctl_creates_and_starts_under_the_machine_wide_lock(tmp_path, listed, readyz, calls):
    params = _params(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".gpuop-cluster-lab").write_text("lab\n")
    lock = tmp_path / "kwok" / kc.LOCK_NAME
    seen = []
    script = FakeKwokctl({"get clusters": [(0, "lab\n" if listed else "", "")], "create cluster": [(0, "", "")],
                          "stop cluster": [(0, "", "")], "start cluster": [(0, "", "")], "readyz": list(readyz)})

    def run(argv):
        answer = script(argv)
        seen.append((script.calls[-1], lock.exists() and _held_elsewhere(str(lock))))
        return answer

    kc.ensure(params, run)
    assert seen == calls
    assert lock.exists() == any(held for _verb, held in calls)
    assert not (lock.exists() and _held_elsewhere(str(lock)))  # released at the end


def test_a_lock_held_by_another_run_is_waited_for_then_named(tmp_path):
    import fcntl

    home = tmp_path / "kwok"
    home.mkdir()
    now = [0.0]
    naps = []

    def sleep(seconds):
        naps.append(seconds)
        now[0] += seconds

    with open(str(home / kc.LOCK_NAME), "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(kc.GpuopError) as failure:
            with kc.creation_lock(str(home), 2, clock=lambda: now[0], sleep=sleep):
                raise AssertionError("the lock was taken while another run held it")
    assert failure.value.msg == ("another run has been creating or starting a kwok cluster for 2s (it holds %s); "
                                 "try again when it is done" % (home / kc.LOCK_NAME))
    assert naps and set(naps) == {kc.LOCK_POLL} and 2 <= now[0] <= 2 + kc.LOCK_POLL
    # Free again: taken at once.
    with kc.creation_lock(str(home), 2, clock=lambda: now[0], sleep=sleep) as path:
        assert path == str(home / kc.LOCK_NAME) and _held_elsewhere(path)
    assert kc.lock_timeout(60) == 180
