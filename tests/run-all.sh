#!/usr/bin/env bash
# Everything `make test` runs: ansible-lint, ansible-test sanity, a test cluster of its own, pytest against it,
# every molecule scenario.
#
# Two streams side by side, one per core: pytest (on the test cluster) in one; ansible-lint, sanity and the
# molecule scenarios, one after another, in the other. They share nothing: every scenario has its own
# gpuop_root and cluster (gpuop-molecule-<scenario>), pytest the test cluster and its tests' own clusters and
# twins; kwok_cluster creates clusters one at a time machine-wide (its lock), and each collection build stages
# in a folder of its own. The second stream's parts each write a log, printed whole when pytest is done.
# GPUOP_TEST_SERIAL=1 runs everything one after another instead.
# The test cluster is deleted at the end, also on failure. Each part's time is printed, and all of them again
# at the end (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

export GPUOP_TEST_ROOT="${GPUOP_TEST_ROOT:-/tmp/gpuop-test}"
export GPUOP_TEST_CLUSTER="${GPUOP_TEST_CLUSTER:-gpuop-test}"
export GPUOP_TEST_KUBECONFIG="$GPUOP_TEST_ROOT/kubeconfig"
vars=(-e "gpuop_root=$GPUOP_TEST_ROOT" -e "gpuop_cluster_name=$GPUOP_TEST_CLUSTER")
logs=$(mktemp -d /tmp/gpuop-make-test.XXXXXX)

start=$SECONDS
times=()
side_pid=""
part() {  # part "<title>" command...: run one part, print and keep how long it took
  local title=$1 t0=$SECONDS
  shift
  echo "== $title"
  local rc=0
  "$@" || rc=$?
  times+=("$(printf '%5d s  %s%s' $(( SECONDS - t0 )) "$title" "$( (( rc == 0 )) || echo " FAILED (exit $rc)")")")
  echo "== $title: $(( SECONDS - t0 )) s"
  return $rc
}

side_stream() {  # lint, sanity, every scenario, one after another; "<seconds> <exit> <title>" per line in $logs/side.times
  local scenario
  side_part "ansible-lint --profile production (offline)" ansible-lint --profile production
  side_part "ansible-test sanity of the built collection (tools/sanity.sh)" bash tools/sanity.sh
  for scenario in $(ls molecule); do
    side_part "molecule test -s $scenario" molecule test -s "$scenario"
  done
}

side_part() {
  local title=$1 t0=$SECONDS rc=0
  shift
  "$@" > "$logs/side-$(( $(wc -l < "$logs/side.times") + 1 )).log" 2>&1 || rc=$?
  echo "$(( SECONDS - t0 )) $rc $title" >> "$logs/side.times"
}

side_report() {  # print each part's log and time; fail if one failed
  local failed=0 n=0 took rc title
  while read -r took rc title; do
    n=$(( n + 1 ))
    echo "== $title (exit $rc, $took s)"
    cat "$logs/side-$n.log"
    times+=("$(printf '%5d s  %s%s' "$took" "$title" "$( (( rc == 0 )) || echo " FAILED (exit $rc)")")")
    (( rc == 0 )) || failed=1
  done < "$logs/side.times"
  return $failed
}

teardown() {
  local rc=$?
  if [ -n "$side_pid" ] && kill -0 "$side_pid" 2>/dev/null; then
    echo "== waiting for the second stream to end (each molecule scenario destroys its own cluster)"
    wait "$side_pid" || true
  fi
  echo "== tearing down the test cluster $GPUOP_TEST_CLUSTER"
  ansible-playbook playbooks/reset.yml "${vars[@]}" >/dev/null || echo "reset of $GPUOP_TEST_CLUSTER failed" >&2
  echo "== make test's parts:"
  printf '%s\n' "${times[@]}"
  echo "== make test took $(( SECONDS - start )) s (exit $rc)"
  rm -rf "$logs"
}
trap teardown EXIT

touch "$logs/side.times"
# The fault suite (tests/faults) runs with `make test-faults`, and in CI after this (.ci/run): docs/reliability.md.
# tests/collection builds the artifact and uses it installed elsewhere, on a kwok cluster of its own.
if [ "${GPUOP_TEST_SERIAL:-0}" = 1 ]; then
  side_stream
  side_report
  part "toolchain and test cluster ($GPUOP_TEST_CLUSTER under $GPUOP_TEST_ROOT)" \
    ansible-playbook playbooks/cluster.yml "${vars[@]}"
  part "pytest" pytest -q --durations=15 tests --ignore=tests/faults
else
  echo "== ansible-lint, sanity and every molecule scenario beside the test cluster and pytest (their logs follow pytest's)"
  side_stream &
  side_pid=$!
  rc=0
  part "toolchain and test cluster ($GPUOP_TEST_CLUSTER under $GPUOP_TEST_ROOT)" \
    ansible-playbook playbooks/cluster.yml "${vars[@]}" || rc=$?
  if (( rc == 0 )); then
    part "pytest" pytest -q --durations=15 tests --ignore=tests/faults || rc=$?
  fi
  wait "$side_pid" || true
  side_pid=""
  echo "== both streams ended after $(( SECONDS - start )) s"
  side_report || rc=1
  exit $rc
fi
