#!/usr/bin/env bash
# How far ringrt's allreduce is from the floor on one GPU: for each sweep, size and algorithm,
# ringrt's time divided by the fused floor's at the same number of devices and size. Reads the CSVs of
# `ringrt run --csv` (the allreduce sweeps of scripts/gpu-check.sh and gpu-pack.sh's run.sh; columns found
# by name in the header: size_bytes, algo, time_us, ndev, collective, pipelined_time_us) and the output of
# ringrt_gpu_floor (its rows floor,fused,<ndev>,<bytes>,<time_s>,... and floor,fused_graph,...: one fused
# kernel launched back to back, and as a graph; scripts/bench/gpu/floor.cpp). Lines that are neither
# (the floor's bound and bw rows, a log's command lines) are skipped, as are rows of other collectives.
# bash and awk only: the lent GPU machine may have no Python.
#
# Usage: scripts/gpu-ratio.sh FLOOR_OUTPUT SWEEP.csv...
# Output: a header line, then one line per timed row of each CSV, columns separated by spaces:
#   sweep      the CSV's name without "sweep-" and ".csv" (naive, ring, all2all, auto)
#   algo       the algorithm that row ran (the CSV's algo: what auto chose)
#   ndev bytes the devices and bytes per device
#   lat_us pipe_us          ringrt's time per call: latency (each call waited for) and pipelined (back
#                           to back, experiment.timing=pipelined or both), in microseconds
#   fused_us graph_us       the fused floor, back to back and as graph launches, in microseconds
#   lat/fused lat/graph pipe/fused pipe/graph   the ratios, 2 decimals (1.00: as fast as the floor)
# "-" where a time is missing: a CSV without pipelined times (timing latency), or no floor row for that
# ndev and size. Exit 2 for bad arguments or an unreadable file.
set -euo pipefail
if (($# < 2)); then
  echo "usage: scripts/gpu-ratio.sh FLOOR_OUTPUT SWEEP.csv..." >&2
  exit 2
fi
for f in "$@"; do
  [ -r "$f" ] || { echo "gpu-ratio: cannot read $f" >&2; exit 2; }
done
awk '
  function value(name) { return (name in col) ? $(col[name]) : "" }
  function us(t) { return t == "" ? "-" : sprintf("%.3f", t) }
  function ratio(t, f) { return (t == "" || f == "" || f + 0 <= 0) ? "-" : sprintf("%.2f", t / f) }
  BEGIN {
    FS = ","
    fmt = "%-8s %-8s %4s %11s %11s %11s %10s %10s %9s %9s %10s %10s\n"
    printf fmt, "sweep", "algo", "ndev", "bytes", "lat_us", "pipe_us", "fused_us", "graph_us", "lat/fused", "lat/graph",
      "pipe/fused", "pipe/graph"
  }
  FILENAME == ARGV[1] {  # the floor: microseconds by "ndev,bytes"
    if ($1 == "floor" && $2 == "fused") fused[$3 "," $4] = $5 * 1e6
    if ($1 == "floor" && $2 == "fused_graph") graph[$3 "," $4] = $5 * 1e6
    next
  }
  FNR == 1 {  # a CSV header: its columns by name
    split("", col)
    for (i = 1; i <= NF; ++i) col[$i] = i
    sweep = FILENAME
    sub(/.*\//, "", sweep)
    sub(/^sweep-/, "", sweep)
    sub(/\.csv$/, "", sweep)
    next
  }
  {
    c = value("collective")
    if (c != "" && c != "allreduce") next
    lat = value("time_us")
    pipe = value("pipelined_time_us")
    if (lat == "" && pipe == "") next  # not timed
    key = value("ndev") "," value("size_bytes")
    f = (key in fused) ? fused[key] : ""
    g = (key in graph) ? graph[key] : ""
    printf fmt, sweep, value("algo"), value("ndev"), value("size_bytes"), us(lat), us(pipe), us(f), us(g),
      ratio(lat, f), ratio(lat, g), ratio(pipe, f), ratio(pipe, g)
  }
' "$@"
