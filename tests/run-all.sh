#!/usr/bin/env bash
# Everything `make test` runs: a test cluster of its own, pytest against it, every molecule scenario.
# The test cluster is deleted at the end, also on failure. Each part's time is printed as it ends, and
# all of them again at the end (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

export GPUOP_TEST_ROOT="${GPUOP_TEST_ROOT:-/tmp/gpuop-test}"
export GPUOP_TEST_CLUSTER="${GPUOP_TEST_CLUSTER:-gpuop-test}"
export GPUOP_TEST_KUBECONFIG="$GPUOP_TEST_ROOT/kubeconfig"
vars=(-e "gpuop_root=$GPUOP_TEST_ROOT" -e "gpuop_cluster_name=$GPUOP_TEST_CLUSTER")

start=$SECONDS
times=()
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

teardown() {
  local rc=$?
  echo "== tearing down the test cluster $GPUOP_TEST_CLUSTER"
  ansible-playbook playbooks/reset.yml "${vars[@]}" >/dev/null || echo "reset of $GPUOP_TEST_CLUSTER failed" >&2
  echo "== make test's parts:"
  printf '%s\n' "${times[@]}"
  echo "== make test took $(( SECONDS - start )) s (exit $rc)"
}
trap teardown EXIT

part "ansible-lint --profile production (offline)" ansible-lint --profile production
part "ansible-test sanity of the built collection (tools/sanity.sh)" bash tools/sanity.sh
part "toolchain and test cluster ($GPUOP_TEST_CLUSTER under $GPUOP_TEST_ROOT)" \
  ansible-playbook playbooks/cluster.yml "${vars[@]}"
# The fault suite (tests/faults) runs with `make test-faults`, and in CI after this (.ci/run): docs/reliability.md.
# tests/collection builds the artifact and uses it installed elsewhere, on a kwok cluster of its own.
part "pytest" pytest -q --durations=15 tests --ignore=tests/faults
for scenario in $(ls molecule); do
  part "molecule test -s $scenario" molecule test -s "$scenario"
done
