#!/usr/bin/env bash
# bench/byhand.sh: steps 1-8 done by hand, the way a careful person would with a shell, python3's
# tomllib and kubectl: files written with heredocs, the merge decided by a parser, every condition
# polled at 0.2 s (no fixed sleep), each output recorded at its moment. It is the baseline
# bench/run.py measures `ansible-playbook site.yml` against; it writes the same outputs under its
# own root (the seed's formats; issues 4 and 5).
#
#   bench/byhand.sh --root DIR [--kubeconfig FILE] [--bin-dir DIR] [--timing FILE] [--timeout S]
#
# The cluster must exist (playbooks/cluster.yml made it, lab-node-0/1/2 Ready); --kubeconfig
# defaults to DIR/kubeconfig. --bin-dir is the toolchain's bin folder (default: the newest
# ~/.cache/gpuop/<pin>/bin holding kubectl). --timing writes per-step start/end times and the
# moment each wait saw its condition (epoch seconds) as JSON.
set -euo pipefail

ROOT="" KCFG="" BIN="" TIMING="" TIMEOUT=60
while [ $# -gt 0 ]; do
    case "$1" in
        --root) ROOT=$2; shift 2 ;;
        --kubeconfig) KCFG=$2; shift 2 ;;
        --bin-dir) BIN=$2; shift 2 ;;
        --timing) TIMING=$2; shift 2 ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "byhand: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$ROOT" ] || { echo "byhand: --root DIR is required" >&2; exit 2; }
case "$ROOT" in /*) ;; *) echo "byhand: --root must be absolute, got $ROOT" >&2; exit 2 ;; esac
KCFG=${KCFG:-$ROOT/kubeconfig}
[ -f "$KCFG" ] || { echo "byhand: kubeconfig $KCFG does not exist" >&2; exit 2; }
if [ -z "$BIN" ]; then
    BIN=$(ls -dt "$HOME"/.cache/gpuop/*/bin 2>/dev/null | while read -r d; do [ -x "$d/kubectl" ] && { echo "$d"; break; }; done)
fi
[ -x "$BIN/kubectl" ] || { echo "byhand: no kubectl in ${BIN:-~/.cache/gpuop/*/bin} (give --bin-dir)" >&2; exit 2; }
k() { "$BIN/kubectl" --kubeconfig "$KCFG" "$@"; }

# ------------------------------------------------------------------ timing (bash's own clock)
T_STEPS=() T_WAITS=()
step_start() { _step=$1; _t0=$EPOCHREALTIME; }
step_end() { T_STEPS+=("{\"step\": \"$_step\", \"start\": $_t0, \"end\": $EPOCHREALTIME}"); }
reached() { T_WAITS+=("{\"wait\": \"$1\", \"reached\": $2, \"started\": $3}"); }
write_timing() {
    [ -n "$TIMING" ] || return 0
    local IFS=,
    printf '{"steps": [%s], "waits": [%s]}\n' "${T_STEPS[*]}" "${T_WAITS[*]}" >"$TIMING"
}

# poll NAME CMD...: run CMD every 0.2 s until it succeeds; its stdout is kept in $POLL_OUT.
poll() {
    local name=$1; shift
    local start=$EPOCHREALTIME deadline=$((SECONDS + TIMEOUT))
    while :; do
        if POLL_OUT=$("$@" 2>/dev/null); then
            reached "$name" "$EPOCHREALTIME" "$start"
            return 0
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "byhand: timed out after ${TIMEOUT}s waiting for $name; last: ${POLL_OUT:-nothing}" >&2
            return 1
        fi
        sleep 0.2
    done
}

mkdir -p "$ROOT/etc/containerd/conf.d" "$ROOT/out" "$ROOT/bin" "$ROOT/k8s"

# ------------------------------------------------------------------ steps 1-4 (no cluster)
step_start "1-4 containerd files, merge, check script"
cat >"$ROOT/etc/containerd/config.toml" <<EOF
# containerd main config, written by the containerd_config role. Edits are overwritten.
version = 2
imports = ["$ROOT/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
EOF
cat >"$ROOT/etc/containerd/conf.d/99-nvidia.toml" <<'EOF'
# containerd drop-in 99-nvidia.toml, written by the containerd_config role. Edits are overwritten.

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
EOF
# Step 3: the parser decides. LOADED_RUNTIMES is the incident day's observation (runc), not computed.
python3 - "$ROOT/etc/containerd/config.toml" "$ROOT/out/merge.txt" runc <<'EOF'
import glob, os, sys, tomllib
main_path, dest, loaded = sys.argv[1], sys.argv[2], sys.argv[3]

def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)

def runtimes(doc):
    found = {}
    for plugin, section in (doc.get("plugins") or {}).items():
        names = ((section or {}).get("containerd") or {}).get("runtimes") or {}
        if names:
            found[plugin] = set(names)
    return found

main = load(main_path)
mine = runtimes(main)
theirs = {}
for pattern in main.get("imports", []):
    if not os.path.isabs(pattern):
        pattern = os.path.join(os.path.dirname(main_path), pattern)
    for path in sorted(glob.glob(pattern)):
        for plugin, names in runtimes(load(path)).items():
            theirs.setdefault(plugin, set()).update(names)
shared = sorted(set(mine) & set(theirs))
join = lambda names: ",".join(sorted(names))
with open(dest, "w") as out:
    out.write("MAIN_RUNTIMES=%s\n" % join(set().union(*mine.values()) if mine else ()))
    out.write("DROPIN_RUNTIMES=%s\n" % join(set().union(*theirs.values()) if theirs else ()))
    out.write("CONFLICT=%s\n" % ("yes" if shared else "no"))
    out.write("CONFLICT_TABLE=%s\n" % ('plugins."%s".containerd.runtimes' % shared[0] if shared else ""))
    out.write("LOADED_RUNTIMES=%s\n" % loaded)
EOF
# Step 4: asks the loaded config (containerd on PATH), exact name nvidia under containerd.runtimes.
cat >"$ROOT/bin/check-runtime.sh" <<'EOF'
#!/bin/sh
# Exit 0 when the loaded containerd configuration has a runtime named exactly nvidia, else 1.
command -v containerd >/dev/null 2>&1 || { echo "check-runtime: containerd not on PATH" >&2; exit 2; }
dump=$(containerd config dump 2>/dev/null) || { echo "check-runtime: containerd config dump failed" >&2; exit 3; }
printf '%s\n' "$dump" | grep -Eq "^[[:space:]]*\[plugins\.(\"io\.containerd\.grpc\.v1\.cri\"|'io\.containerd\.cri\.v1\.runtime')\.containerd\.runtimes\.(nvidia|\"nvidia\"|'nvidia')(\.options)?\][[:space:]]*(#.*)?$" && exit 0
echo "check-runtime: no runtime nvidia in the loaded configuration" >&2
exit 1
EOF
chmod 0755 "$ROOT/bin/check-runtime.sh"
step_end

# ------------------------------------------------------------------ step 5
step_start "5 RuntimeClass, GPU pod, PodScheduled=False"
cat >"$ROOT/k8s/runtimeclass.yaml" <<'EOF'
# Written by gpuop (role gpu_pod). RuntimeClass is cluster-scoped: no namespace.
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: nvidia
handler: nvidia
EOF
cat >"$ROOT/k8s/gpu-pod.yaml" <<'EOF'
# Written by gpuop (role gpu_pod).
apiVersion: v1
kind: Pod
metadata:
  name: cuda-probe
  namespace: gpu-lab
spec:
  runtimeClassName: nvidia
  restartPolicy: Never
  containers:
    - name: cuda
      image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
      command: [nvidia-smi]
      resources:
        limits:
          nvidia.com/gpu: 1
EOF
k create namespace gpu-lab >/dev/null
# A pod is refused until the namespace's default ServiceAccount exists (made by a controller).
poll "serviceaccount gpu-lab/default" k get serviceaccount default -n gpu-lab -o name
k apply -f "$ROOT/k8s/runtimeclass.yaml" -f "$ROOT/k8s/gpu-pod.yaml" >/dev/null
sched_false() {
    local out
    out=$(k get pod cuda-probe -n gpu-lab -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.status}{"\n"}{.reason}{"\n"}{.message}{"\n"}{end}')
    [ "$(head -n1 <<<"$out")" = False ] && tail -n +2 <<<"$out"
}
poll "pod PodScheduled=False" sched_false
printf '%s\n' "$POLL_OUT" >"$ROOT/out/unscheduled.txt"
step_end

# ------------------------------------------------------------------ step 6
step_start "6 advertise 4 on lab-node-0, pod Running, node-gpu.txt"
k patch node lab-node-0 --subresource=status --type=merge \
    -p '{"status":{"capacity":{"nvidia.com/gpu":"4"},"allocatable":{"nvidia.com/gpu":"4"}}}' >/dev/null
running() { [ "$(k get pod cuda-probe -n gpu-lab -o jsonpath='{.status.phase}')" = Running ]; }
poll "pod Running" running
k get nodes lab-node-0 lab-node-1 lab-node-2 \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}' |
    awk '{ printf "%-10s  %s\n", $1, ($2 == "" ? "0" : $2) }' >"$ROOT/out/node-gpu.txt"
step_end

# ------------------------------------------------------------------ step 7
step_start "7 time-slicing ConfigMap, 20 on lab-node-1, slots.txt"
cat >"$ROOT/k8s/time-slicing.yaml" <<'EOF'
# Written by gpuop (role gpu_time_slicing). ConfigMap data values are strings: the device
# plugin's config is a YAML block scalar under data.any.
apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        renameByDefault: false
        failRequestsGreaterThanOne: true
        resources:
          - name: nvidia.com/gpu
            replicas: 5
EOF
k create namespace gpu-operator >/dev/null
k apply -f "$ROOT/k8s/time-slicing.yaml" >/dev/null
replicas=$(k get configmap time-slicing-config -n gpu-operator -o jsonpath='{.data.any}' | awk '$1 == "replicas:" { print $2; exit }')
physical=4 vram=40
k patch node lab-node-1 --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$((physical * replicas))\"},\"allocatable\":{\"nvidia.com/gpu\":\"$((physical * replicas))\"}}}" >/dev/null
advertised=$(k get node lab-node-1 -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
# Time-slicing shares each GPU's memory: nothing is guaranteed per slot, all of it is shared.
printf 'PHYSICAL_GPUS=%s\nREPLICAS=%s\nADVERTISED=%s\nVRAM_PER_GPU_GIB=%s\nVRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=%s\nISOLATION=none\n' \
    "$physical" "$replicas" "$advertised" "$vram" "$vram" >"$ROOT/out/slots.txt"
step_end

# ------------------------------------------------------------------ step 8
step_start "8 toolkit DaemonSet: complete, one update, stalled, rollout.txt"
cat >"$ROOT/k8s/toolkit-ds.yaml" <<'EOF'
# Written by gpuop (role toolkit_rollout): the DaemonSet's first version.
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-container-toolkit
  namespace: gpu-operator
  labels:
    app: nvidia-container-toolkit
spec:
  selector:
    matchLabels:
      app: nvidia-container-toolkit
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        app: nvidia-container-toolkit
    spec:
      containers:
        - name: toolkit
          image: nvcr.io/nvidia/k8s/container-toolkit:v1.16.2
          resources:
            requests:
              memory: 128Mi
EOF
k apply -f "$ROOT/k8s/toolkit-ds.yaml" >/dev/null
NEW_IMAGE=nvcr.io/nvidia/k8s/container-toolkit:v1.17.0
# One look: the DaemonSet's status line, then one line per pod (image, phase, PodScheduled reason/message).
ds_look() {
    k get ds,pods -n gpu-operator -l app=nvidia-container-toolkit -o jsonpath='{range .items[*]}{.kind}|{.metadata.generation}|{.status.observedGeneration}|{.status.desiredNumberScheduled}|{.status.updatedNumberScheduled}|{.status.numberReady}|{.status.numberAvailable}|{.status.numberUnavailable}|{.spec.updateStrategy.rollingUpdate.maxUnavailable}|{.metadata.deletionTimestamp}|{.spec.containers[0].image}|{.status.phase}|{.status.conditions[?(@.type=="PodScheduled")].status}|{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}'
}
complete() {
    ds_look | awk -F'|' '$1 == "DaemonSet" && $2 == 1 && $3 == $2 && $4 > 0 && $5 == $4 && $6 == $4 && $7 == $4 { ok = 1 } END { exit !ok }'
}
poll "DaemonSet complete" complete
k patch ds nvidia-container-toolkit -n gpu-operator --type=strategic -p \
    "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"toolkit\",\"image\":\"$NEW_IMAGE\",\"resources\":{\"requests\":{\"memory\":\"64Gi\"}}}]}}}}" >/dev/null
# Stalled: the controller saw generation 2, maxUnavailable pods are down, and the new pod it made
# cannot be scheduled (so no further progress is possible).
stalled() {
    ds_look | awk -F'|' -v new="$NEW_IMAGE" '
        $1 == "DaemonSet" { gen = $2; obs = $3; desired = $4; updated = $5; ready = $6; unavail = $7 + 0; maxu = $9 }
        $1 == "Pod" && $10 == "" && $11 != new { old++ }
        $1 == "Pod" && $10 == "" && $11 == new && $12 == "Pending" && $13 == "False" {
            blocked++
            if (blocker == "") {
                if ($14 ~ /Insufficient memory/) blocker = "insufficient-memory"
                else if ($14 ~ /Insufficient cpu/) blocker = "insufficient-cpu"
                else blocker = "unknown"
            }
        }
        END {
            if (gen < 2 || obs != gen || updated < 1 || unavail < maxu || blocked < 1) exit 1
            printf "DESIRED=%s\nUPDATED=%s\nREADY=%s\nOLD_IMAGE_PODS=%d\nMAX_UNAVAILABLE=%s\nBLOCKER=%s\n", desired, updated, ready, old, maxu, blocker
        }'
}
poll "DaemonSet stalled" stalled
printf '%s\n' "$POLL_OUT" >"$ROOT/out/rollout.txt"
step_end
write_timing
