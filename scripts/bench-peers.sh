#!/usr/bin/env bash
# ringrt's cpu-backend allreduce side by side with Open MPI and the memory-bandwidth floor (docs/performance.md).
#
#   scripts/bench-peers.sh [OUT_DIR]        (default build/release/bench-peers)
#
# One run on this machine, float32 sum, N in {2, 4} devices (ranks), S in {256 KiB, 4 MiB, 64 MiB}
# bytes per device:
# - floor: the bound 2*N*S / B (every input byte read once, every output byte written once), B the best
#   of memcpy, STREAM-style add, sum4 (a reduce's own pattern: four arrays each set to their sum) and
#   sum4s (four arrays summed into four others with streaming stores) bandwidth with 1 and 2 threads
#   measured on a working set of the
#   allreduce's footprint (N*S input + N*S output bytes): cache bandwidth where that fits (256 KiB, and
#   4 MiB on 2 devices here), DRAM's at 64 MiB (see floor.cpp); floor-in-place: the same bytes over the
#   bandwidth at the in-place footprint (N*S), the bound of the in-place rows; floor-dram: the old bound
#   over the DRAM peak, for comparison. OUT_DIR/bandwidth.csv: bw (DRAM) and bwat,<footprint> rows;
# - openmpi: MPI_Allreduce, N ranks on this host (--oversubscribe; MALLOC_MMAP_MAX_=0 so that glibc
#   does not mmap fresh pages for Open MPI's temporary buffers on every call, and
#   MALLOC_TRIM_THRESHOLD_ large, without which the heap is trimmed on every free instead and the same
#   happens: 4 MiB on 2 ranks measured 70 ms with MALLOC_MMAP_MAX_=0 alone, 1.6 ms with both);
# - ringrt: each algorithm forced (naive, ring, all2all, and the fused oneshot, twoshot and ring_fused) and the automatic choice (auto:<chosen>), tuned
#   first by `ringrt tune` on this machine (OUT_DIR/tuning.yaml, its table in OUT_DIR/tune.txt), and the
#   automatic choice in place as DDP runs it (in-place:<chosen>: Tensor::allreduce_in_place), and the automatic
#   choice in deterministic mode (deterministic:<chosen>: allreduce.deterministic, docs/deterministic.md), and
#   over the compressed wires (wire_bfloat16, wire_fp8_e4m3, wire_fp8_e5m2:<chosen>: allreduce.wire,
#   docs/compressed-wire.md);
# - ringrt gpt2-ddp-step: one DDP step of GPT-2 small (17 buckets, 475 MiB per device, 4 devices);
# - over-mpi-RxD: ringrt's automatic choice across R MPI ranks of D cpu devices each (2 x 1, 4 x 1, 2 x 2),
#   tuned first by `mpirun ringrt tune` (naive, ring, all2all and MPI's own, mpi), at 1 KiB (a call's fixed
#   cost) and the sizes above, against MPI_Allreduce on as many ranks;
# - ringrt-<lever>-off: the automatic choice with one optimisation switched off (see README,
#   "Performance switches"), to show what it buys.
# Every figure is the best of BLOCKS timed blocks after warm-up; every result is checked (a wrong
# result fails the script). Writes OUT_DIR/peers.csv (system, algo, ndev, bytes_per_dev, time_s,
# algbw_GBps, busbw_GBps), OUT_DIR/busbw.png, and prints the table and the targets.
# Environment: BUILD_DIR (default build/release, configured with the release preset when it is),
# BLOCKS (default 15), SIZES (bytes, default "262144 4194304 67108864"), NDEVS (default "2 4").
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/release}"
out="${1:-$build/bench-peers}"
blocks="${BLOCKS:-15}"
sizes=(${SIZES:-262144 4194304 67108864})
ndevs=(${NDEVS:-2 4})
mkdir -p "$out"
csv="$out/peers.csv"

bash scripts/install-deps.sh
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  if [[ "$build" == build/release ]]; then cmake --preset release >/dev/null; else cmake --preset release -B "$build" >/dev/null; fi
fi
cmake --build "$build" -j2 --target ringrt_peers ringrt_floor ringrt_cli
mpicxx -O2 -DOMPI_SKIP_MPICXX -o "$build/mpi_allreduce" scripts/bench/peers/mpi_allreduce.cpp

echo "system,algo,ndev,bytes_per_dev,time_s,algbw_GBps,busbw_GBps" >"$csv"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores of $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
  "$(free -g | awk '/^Mem:/ {print $2}') GiB" | tee "$out/machine.txt"

echo "# floor" >&2
"$build/ringrt_floor" $((128 << 20)) 5 "${ndevs[@]}" -- "${sizes[@]}" >"$out/floor.txt"
grep '^bw' "$out/floor.txt" | tee "$out/bandwidth.csv"
grep -E '^floor(-dram|-in-place)?,' "$out/floor.txt" >>"$csv"

for n in "${ndevs[@]}"; do
  echo "# openmpi, $n ranks" >&2
  MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295 \
    mpirun --allow-run-as-root --oversubscribe -x MALLOC_MMAP_MAX_ -x MALLOC_TRIM_THRESHOLD_ -np "$n" \
    "$build/mpi_allreduce" 3 "$blocks" 0 1024 "${sizes[@]}" >>"$csv"
done

# the automatic choice as a user gets it: `ringrt tune` on this machine first (allreduce, float32, the
# sizes below on 2..max(N) devices), its file then used by every ringrt figure (RINGRT_TUNING)
max_n=$(printf '%s\n' "${ndevs[@]}" | sort -n | tail -1)
counts=$(for s in "${sizes[@]}"; do echo $((s / 4)); done | paste -sd, -)  # float32 elements
echo "# ringrt tune, 2..$max_n devices" >&2
"$build/ringrt" tune --out "$out/tuning.yaml" --collectives allreduce --set "devices.count=$max_n" \
  --set "experiment.counts=[$counts]" --set experiment.warmup=3 --set experiment.iters=5 >"$out/tune.txt"
export RINGRT_TUNING="$out/tuning.yaml"

for n in "${ndevs[@]}"; do
  echo "# ringrt, $n devices" >&2
  # the algorithms timed in turns, block by block (ringrt_allreduce.cpp), so auto and the forced
  # algorithms see the same machine
  "$build/ringrt_peers" ringrt "$n" 3 "$blocks" auto,deterministic,wire_bfloat16,wire_fp8_e4m3,wire_fp8_e5m2,naive,ring,all2all,oneshot,twoshot,ring_fused,in-place "${sizes[@]}" >>"$csv"
done

# ringrt across MPI ranks (system over-mpi-RxD: R ranks x D cpu devices, every rank a host of its own),
# beside MPI_Allreduce on the same ranks above (2 x 2 against 4 ranks); 1 KiB: the fixed cost of a call.
# The automatic choice as a user gets it across ranks: `mpirun ringrt tune` first, per layout (naive, ring,
# all2all and MPI's own collective, mpi, measured across the ranks), into the same tuning file.
# (stdin from /dev/null: mpirun would read the loop's list)
mpi_counts=$(for s in 1024 "${sizes[@]}"; do echo $((s / 4)); done | paste -sd, -)
while read -r ranks per; do
  echo "# ringrt tune over MPI, $ranks ranks x $per devices" >&2
  RINGRT_RANKS_PER_HOST=1 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl vader,self \
    -x RINGRT_RANKS_PER_HOST -np "$ranks" "$build/ringrt" tune --out "$out/tuning.yaml" --collectives allreduce \
    --set "devices.count=$per" --set "experiment.counts=[$mpi_counts]" --set experiment.warmup=3 \
    --set experiment.iters=5 </dev/null >>"$out/tune.txt"
  echo "# ringrt over MPI, $ranks ranks x $per devices" >&2
  RINGRT_RANKS_PER_HOST=1 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl vader,self \
    -x RINGRT_RANKS_PER_HOST -x RINGRT_TUNING -np "$ranks" \
    "$build/ringrt_peers" "over-mpi-${ranks}x${per}" "$per" 3 "$blocks" auto 1024 "${sizes[@]}" </dev/null >>"$csv"
done <<'LAYOUTS'
2 1
4 1
2 2
LAYOUTS

# the real workload: one DDP step of GPT-2 small (configs/ddp-gpt2-small.yaml: 17 gradient buckets of its
# 124M float32 parameters allreduced in place on 4 devices), the tuned choice; report.py sets it beside
# the floor of its bytes (the DRAM floor: 475 MiB per device fits no cache)
echo "# ringrt, GPT-2 small DDP step" >&2
"$build/ringrt" run configs/ddp-gpt2-small.yaml --set experiment.iters=3 --json "$out/gpt2-ddp.json" >"$out/gpt2-ddp.txt"
/usr/bin/python3 - "$out/gpt2-ddp.json" >>"$csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, n = j["step"], len(j["devices"])
if any(r["wrong"] != 0 for r in j["rows"]):
    sys.exit("GPT-2 DDP step: wrong results")
algos = "+".join(sorted({r["algo"] for r in j["rows"]}))
t = s["time_us"] * 1e-6
print(f"ringrt,gpt2-ddp-step:{algos},{n},{s['bytes']},{t:.9g},{s['bytes'] / t / 1e9:.6g},{s['busbw']:.6g}")
PY

# ablations: the automatic choice with one lever off at a time
while read -r lever env; do
  [[ -z "$lever" ]] && continue
  for n in "${ndevs[@]}"; do
    echo "# ringrt with $lever off, $n devices" >&2
    env "$env" "$build/ringrt_peers" "ringrt-$lever-off" "$n" 3 "$blocks" auto "${sizes[@]}" >>"$csv"
  done
done <<'LEVERS'
peer-reads RINGRT_PEER_READS=0
peer-writes RINGRT_PEER_WRITES=0
kernel-split RINGRT_KERNEL_SPLIT=0
in-place RINGRT_ALLREDUCE_IN_PLACE=0
inline-small RINGRT_INLINE_SMALL=0
stream-stores RINGRT_STREAM_BYTES=0
LEVERS

/usr/bin/python3 scripts/bench/peers/report.py "$csv" "$out/busbw.png" | tee "$out/report.txt"
