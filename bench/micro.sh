#!/usr/bin/env bash
# bench/micro.sh [ROUNDS]: the per-module-run cost with and without pipelining, alternated in one
# run; prints wall and CPU (user+sys of the whole ansible-playbook process tree) per variant.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/.venv/bin:$PATH ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.junit JUNIT_OUTPUT_DIR=/tmp/gpuop-bench/junit-micro
rounds=${1:-3}
for r in $(seq "$rounds"); do
    for pipe in False True; do
        out=$( { /usr/bin/time -f '%e %U %S' env ANSIBLE_PIPELINING=$pipe ansible-playbook bench/micro-tasks.yml >/dev/null; } 2>&1 | tail -1)
        read -r wall user sys <<<"$out"
        printf 'round %s pipelining=%-5s wall %6.2fs cpu %5.2fs  %s\n' "$r" "$pipe" "$wall" "$(echo "$user + $sys" | bc)" "$(uptime | sed 's/.*load/load/')"
    done
done
