#!/usr/bin/env bash
# For a lent GPU machine whose image has the CUDA toolkit but not ringrt's libraries (Boost, TBB,
# yaml-cpp, {fmt}, Open MPI: nothing can be installed there): builds the nvidia preset here and packs
# into DIR (default devpack/, which git ignores through .git/info/exclude) the programs ringrt,
# ringrt_gpu_floor and gpu_tests, the shared libraries they load (not glibc, not the CUDA driver,
# runtime or NVRTC: the GPU machine's are used), scripts/gpu-ratio.sh, and run.sh, the GPU check to run there:
#   bash devpack/run.sh "$OUT"   (the device tool, carrying devpack/)
# run.sh runs the gpu tests and sweeps ringrt run configs/gpu.yaml on 4 logical devices (allreduce with
# naive, ring, all2all and the default choice, timed both ways: experiment.timing=both; the other
# collectives), 1 KiB to 64 MiB per device, every value checked, then ringrt_gpu_floor (1 KiB to 1 GiB: the
# copy bound, and one fused kernel back to back and as a graph), then the table of the allreduce's times
# over the fused floor's (gpu-ratio.sh); run it from the repository's root (it reads configs/gpu.yaml); it
# writes OUT/steps.txt, OUT/ratio.txt and OUT/gc.tgz (every log and CSV), and prints steps.txt and the table.
# About a minute on an H200 (measured before timing=both and the fused floor). Usage: scripts/gpu-pack.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-devpack}"
cmake --preset nvidia >/dev/null
cmake --build --preset nvidia --target ringrt_cli ringrt_gpu_floor gpu_tests
git_dir=$(git rev-parse --git-common-dir)
mkdir -p "$git_dir/info"
grep -qx "/$dir/" "$git_dir/info/exclude" 2>/dev/null || echo "/$dir/" >>"$git_dir/info/exclude"
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
cp build/nvidia/ringrt build/nvidia/ringrt_gpu_floor build/nvidia/test/gpu/gpu_tests "$dir/bin/"
cp scripts/gpu-ratio.sh "$dir/"  # beside run.sh, not in bin/: the library scan below reads bin/'s programs
missing=$(for f in "$dir"/bin/*; do ldd "$f"; done | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
[ -z "$missing" ] || { echo "gpu-pack: libraries not found here: $missing" >&2; exit 1; }
for f in "$dir"/bin/*; do ldd "$f"; done | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libpthread* | libdl.so* | librt.so* | ld-linux* | libcuda.so* | libcudart* | libnvrtc*) ;;
    *) cp -L "$lib" "$dir/lib/" ;;
  esac
done
strip --strip-debug "$dir"/bin/* "$dir"/lib/* 2>/dev/null || true
cat >"$dir/run.sh" <<'RUN'
#!/bin/bash
# The GPU check with the programs packed by scripts/gpu-pack.sh; results under $1 (default $OUT).
set -u
R=${1:-$OUT}; W=$R/gc; P=$(dirname "$0"); mkdir -p "$W"
nv=$(dirname "$(find / -xdev \( -path /proc -o -path /sys \) -prune -o -name 'libnvrtc.so.1*' -print 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$P/lib:$nv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RINGRT_HIP_LOGICAL_DEVICES=4 RINGRT_CACHE_DIR=/tmp/ringrt-cache
B=$P/bin
step() { local t=$1 name=$2; shift 2; echo "== $name $(date -u +%T) $*" >>"$W/steps.txt"
  timeout "$t" "$@" >"$W/$name.txt" 2>&1; echo "   rc=$? $(date -u +%T)" >>"$W/steps.txt"; tail -1 "$W/$name.txt" >>"$W/steps.txt"; }
{ date -u; nvidia-smi -L; echo "nvrtc: $nv"; ldd "$B/ringrt" | grep -E "not found|nvrtc"; nproc; } >"$W/env.txt" 2>&1
step 20 devices "$B/ringrt" config configs/gpu.yaml --set backend=hip --dump
step 100 gpu-tests "$B/gpu_tests" --report_level=short
S='experiment.sizes={min: 1KiB, max: 64MiB, factor: 4}'
for a in naive ring all2all auto; do
  case $a in naive) x=(--set allreduce.ring=0 --set allreduce.all2all=0) ;; ring) x=(--set allreduce.ring=2 --set allreduce.all2all=0) ;;
    all2all) x=(--set allreduce.all2all=2) ;; auto) x=() ;; esac
  step 40 "sweep-$a" "$B/ringrt" run configs/gpu.yaml --set backend=hip --set "$S" --set experiment.warmup=2 --set experiment.iters=10 --set experiment.timing=both "${x[@]}" --csv "$W/sweep-$a.csv"
done
for c in reduce_scatter allgather broadcast reduce alltoall; do
  step 25 "sweep-$c" "$B/ringrt" run configs/gpu.yaml --set backend=hip --set experiment.collective=$c --set "$S" --set experiment.warmup=1 --set experiment.iters=5 --csv "$W/sweep-$c.csv"
done
sz=(); for ((s = 1024; s <= 1073741824; s *= 4)); do sz+=($s); done
step 45 floor "$B/ringrt_gpu_floor" 1073741824 5 4 -- "${sz[@]}"
c=(); for a in naive ring all2all auto; do [ -f "$W/sweep-$a.csv" ] && c+=("$W/sweep-$a.csv"); done
step 10 ratio bash "$P/gpu-ratio.sh" "$W/floor.txt" "${c[@]}"
tar czf "$R/gc.tgz" -C "$R" gc; cp "$W/steps.txt" "$R/steps.txt"; cp "$W/ratio.txt" "$R/ratio.txt"; cat "$W/steps.txt" "$W/ratio.txt"
RUN
chmod +x "$dir/run.sh"
du -sh "$dir"
