#!/usr/bin/env bash
# Everything `make test` runs: a test cluster of its own, pytest against it, every molecule scenario.
#
# pytest and the molecule scenarios run side by side: two streams, one per core. They share nothing: every
# scenario has its own gpuop_root and its own cluster (gpuop-molecule-<scenario>), pytest has the test cluster
# and the clusters and twins of its own tests (kwok_cluster creates a cluster again on new ports when two
# creations picked the same one). The scenarios run one after another in their stream, each into a log that is
# printed whole when the stream ends. GPUOP_TEST_SERIAL=1 runs everything one after another instead.
# The test cluster is deleted at the end, also on failure. Each part's time is printed as it ends, and all of
# them again at the end (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

export GPUOP_TEST_ROOT="${GPUOP_TEST_ROOT:-/tmp/gpuop-test}"
export GPUOP_TEST_CLUSTER="${GPUOP_TEST_CLUSTER:-gpuop-test}"
export GPUOP_TEST_KUBECONFIG="$GPUOP_TEST_ROOT/kubeconfig"
vars=(-e "gpuop_root=$GPUOP_TEST_ROOT" -e "gpuop_cluster_name=$GPUOP_TEST_CLUSTER")
logs=$(mktemp -d /tmp/gpuop-make-test.XXXXXX)

start=$SECONDS
times=()
molecule_pid=""
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

molecule_stream() {  # every scenario, one after another; "<seconds> <scenario> <exit>" per line in $logs/molecule.times
  local scenario t0 rc
  for scenario in $(ls molecule); do
    t0=$SECONDS
    rc=0
    molecule test -s "$scenario" > "$logs/molecule-$scenario.log" 2>&1 || rc=$?
    echo "$(( SECONDS - t0 )) $scenario $rc" >> "$logs/molecule.times"
  done
}

molecule_report() {  # print each scenario's log and time; fail if one failed
  local failed=0 took scenario rc
  while read -r took scenario rc; do
    echo "== molecule test -s $scenario (exit $rc, $took s)"
    cat "$logs/molecule-$scenario.log"
    times+=("$(printf '%5d s  %s%s' "$took" "molecule test -s $scenario" "$( (( rc == 0 )) || echo " FAILED (exit $rc)")")")
    (( rc == 0 )) || failed=1
  done < "$logs/molecule.times"
  return $failed
}

teardown() {
  local rc=$?
  if [ -n "$molecule_pid" ] && kill -0 "$molecule_pid" 2>/dev/null; then
    echo "== waiting for the molecule scenarios to end (each destroys its own cluster)"
    wait "$molecule_pid" || true
  fi
  echo "== tearing down the test cluster $GPUOP_TEST_CLUSTER"
  ansible-playbook playbooks/reset.yml "${vars[@]}" >/dev/null || echo "reset of $GPUOP_TEST_CLUSTER failed" >&2
  echo "== make test's parts:"
  printf '%s\n' "${times[@]}"
  echo "== make test took $(( SECONDS - start )) s (exit $rc)"
  rm -rf "$logs"
}
trap teardown EXIT

part "ansible-lint --profile production (offline)" ansible-lint --profile production
part "ansible-test sanity of the built collection (tools/sanity.sh)" bash tools/sanity.sh
part "toolchain and test cluster ($GPUOP_TEST_CLUSTER under $GPUOP_TEST_ROOT)" \
  ansible-playbook playbooks/cluster.yml "${vars[@]}"

# The fault suite (tests/faults) runs with `make test-faults`, and in CI after this (.ci/run): docs/reliability.md.
# tests/collection builds the artifact and uses it installed elsewhere, on a kwok cluster of its own.
if [ "${GPUOP_TEST_SERIAL:-0}" = 1 ]; then
  part "pytest" pytest -q --durations=15 tests --ignore=tests/faults
  part "molecule test (every scenario)" molecule_stream
  molecule_report
else
  echo "== molecule test, every scenario, beside pytest (their logs follow pytest's)"
  molecule_stream &
  molecule_pid=$!
  t0=$SECONDS
  rc=0
  part "pytest" pytest -q --durations=15 tests --ignore=tests/faults || rc=$?
  wait "$molecule_pid" || true
  molecule_pid=""
  echo "== pytest and the molecule scenarios side by side took $(( SECONDS - t0 )) s"
  molecule_report || rc=1
  exit $rc
fi
