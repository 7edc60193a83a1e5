#!/usr/bin/env bash
# The GPU check, for a machine with a GPU: an NVIDIA one with the CUDA toolkit (PRESET=nvidia,
# the default) or an AMD one with ROCm (PRESET=dev). In one run it
#   1. builds the preset's ringrt, its GPU tests and ringrt_gpu_floor,
#   2. checks that HIP devices exist, then runs the gpu-labelled tests with LOGICAL logical devices
#      (RINGRT_HIP_LOGICAL_DEVICES),
#   3. sweeps `ringrt run configs/gpu.yaml` (1 KiB to 1 GiB per device, every value checked: #wrong) with
#      naive, ring, all2all and auto (the default thresholds), timed both ways (experiment.timing=both:
#      each call waited for, and calls back to back),
#   4. sweeps each other collective (reduce_scatter, allgather, broadcast, reduce, alltoall) with
#      the default algorithm choice (the allreduce thresholds: direct, naive for reduce, at small sizes, ring
#      above allreduce.ring_threshold; alltoall is always direct),
#      1 KiB to 256 MiB per device by factors of 16, every value checked (#wrong),
#   5. measures the floor of an allreduce on that GPU (ringrt_gpu_floor): device-to-device copy bandwidth,
#      and one fused kernel that does the whole allreduce, launched back to back and as a graph,
#   6. prints ringrt's allreduce times over the fused floor's, per sweep and size (scripts/gpu-ratio.sh).
# Time budget: the GPU machine is lent for 15 minutes in all (start-up included), so the steps are sized
# to fit with room for one rerun; step 4 is about a minute on an H200 (5 collectives x 5 sizes, warmup 1,
# iters 5; mostly NVRTC compiles of each size's new kernels), an estimate not yet measured there.
# Usage: OUT=DIR [PRESET=nvidia] [LOGICAL=4] [JOBS=$(nproc)] scripts/gpu-check.sh
# Writes DIR/env.txt, build.log, devices.txt, gpu-tests.log, sweep-<algorithm>.{txt,csv},
# sweep-<collective>.{txt,csv}, floor.txt (after its command line, the CSV rows), ratio.txt (after its
# command line, the table; also printed at the end). A failed step is reported and the others still run;
# exit status 1 when any step failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-build/gpu-check}"
PRESET="${PRESET:-nvidia}"
LOGICAL="${LOGICAL:-4}"
JOBS="${JOBS:-$(nproc)}"
mkdir -p "$OUT"
status=0

# step NAME LOG COMMAND...: runs COMMAND with stdout and stderr appended to LOG; a failure is noted.
step() {
  local name=$1 log=$2
  shift 2
  echo "== $name ($(date -u +%T)): $*" | tee -a "$log" >&2
  if ! "$@" >>"$log" 2>&1; then
    echo "!! $name failed: see $log" >&2
    status=1
  fi
}

{
  date -u
  uname -a
  nvidia-smi -L 2>&1 || rocm-smi --showproductname 2>&1 || true
  cmake --version | head -1
} >"$OUT/env.txt" 2>&1

step configure "$OUT/build.log" cmake --preset "$PRESET"
step build "$OUT/build.log" cmake --build --preset "$PRESET" -j "$JOBS" \
  --target ringrt_cli ringrt_gpu_floor gpu_tests
bin="build/$PRESET"

export RINGRT_HIP_LOGICAL_DEVICES="$LOGICAL"
# A GPU must be there: otherwise the gpu tests all skip and would read as passed.
step devices "$OUT/devices.txt" "$bin/ringrt" config configs/gpu.yaml --set backend=hip --dump
step gpu-tests "$OUT/gpu-tests.log" ctest --test-dir "$bin" -L gpu --timeout 300 --output-on-failure

sizes=()
for ((s = 1024; s <= 1073741824; s *= 4)); do sizes+=("$s"); done
for algo in naive ring all2all auto; do
  case $algo in
    naive) sets=(--set allreduce.ring=0 --set allreduce.all2all=0) ;;
    ring) sets=(--set allreduce.ring=2 --set allreduce.all2all=0) ;;
    all2all) sets=(--set allreduce.all2all=2) ;;
    auto) sets=() ;;
  esac
  step "sweep $algo" "$OUT/sweep-$algo.txt" "$bin/ringrt" run configs/gpu.yaml --set backend=hip --set devices.count="$LOGICAL" \
    --set experiment.timing=both "${sets[@]}" --csv "$OUT/sweep-$algo.csv"
done
for coll in reduce_scatter allgather broadcast reduce alltoall; do
  step "sweep $coll" "$OUT/sweep-$coll.txt" "$bin/ringrt" run configs/gpu.yaml --set backend=hip \
    --set devices.count="$LOGICAL" --set experiment.collective="$coll" --set experiment.warmup=1 \
    --set experiment.iters=5 --set 'experiment.sizes={min: 1KiB, max: 256MiB, factor: 16}' --csv "$OUT/sweep-$coll.csv"
done
rm -f "$OUT/floor.txt" "$OUT/ratio.txt"  # this run's floor only: the ratios read every floor row there
step floor "$OUT/floor.txt" "$bin/ringrt_gpu_floor" 1073741824 5 "$LOGICAL" -- "${sizes[@]}"
csvs=()
for algo in naive ring all2all auto; do [ -f "$OUT/sweep-$algo.csv" ] && csvs+=("$OUT/sweep-$algo.csv"); done
if ((${#csvs[@]} > 0)); then
  step ratio "$OUT/ratio.txt" scripts/gpu-ratio.sh "$OUT/floor.txt" "${csvs[@]}"
  grep -v '^== ' "$OUT/ratio.txt"
else
  echo "!! ratio: no allreduce sweep wrote its CSV" >&2
  status=1
fi
if ((status == 0)); then echo "gpu-check: every step passed; results in $OUT" >&2; else echo "gpu-check: FAILED (the steps marked !! above); logs in $OUT" >&2; fi
exit "$status"
