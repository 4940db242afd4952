"""wait_for: returns as soon as the predicate holds; on timeout names what it waited for and what it saw."""

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import wait_for


class FakeClock(object):
    """A clock that moves only when the wait sleeps: the test controls time, not the machine."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_returns_the_state_that_satisfied_the_predicate():
    clock = FakeClock()
    states = iter([1, 2, 3, 4])
    state, elapsed = wait_for(lambda: next(states), lambda s: s == 3, 10, "three", clock=clock, sleep=clock.sleep)
    assert state == 3
    assert elapsed == pytest.approx(0.4)
    assert all(s <= 0.5 for s in clock.sleeps)


@pytest.mark.parametrize("fetch_results, expected", [
    (["a"], "waiting for x; last state: A"),
    ([GpuopError("connection refused")], "waiting for x; last error: connection refused"),
    (["a", GpuopError("connection refused")], "last error: connection refused; last state seen: A"),
])
def test_timeout_names_what_and_what_was_seen(fetch_results, expected):
    clock = FakeClock()
    seq = list(fetch_results)

    def fetch():
        item = seq.pop(0) if len(seq) > 1 else seq[0]
        if isinstance(item, Exception):
            raise item
        return item

    with pytest.raises(GpuopError) as err:
        wait_for(fetch, lambda s: False, 1.0, "x", describe=str.upper, clock=clock, sleep=clock.sleep)
    assert expected in err.value.msg
    assert err.value.msg.startswith("timed out after 1.0s")
