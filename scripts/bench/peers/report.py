#!/usr/bin/python3
"""The table, the targets and the plot of scripts/bench-peers.sh, from its CSV.

    scripts/bench/peers/report.py peers.csv busbw.png

Rows: system, algo, ndev, bytes_per_dev, time_s, algbw_GBps, busbw_GBps (systems: floor, floor-in-place,
floor-dram, openmpi, ringrt, ringrt-<lever>-off ablations, and over-mpi-<R>x<D>: ringrt across R MPI ranks of D devices). Prints the table (times in us), every ringrt algorithm's
time over the floor and over Open MPI, the project's targets (ringrt's automatic choice: over Open
MPI <= 1.0 below 1 MiB and <= 0.5 from 1 MiB; over the floor <= 3 at 256 KiB and <= 1.3 at 64 MiB for 4
devices) with met / NOT met, the floor targets again for the in-place form (ringrt rows "in-place:<chosen>",
Tensor::allreduce_in_place), and what each ablation costs; draws busbw against size per (system, algo, ndev).
The floor (system floor) is cache-aware: 2*N*S bytes over the bandwidth floor.cpp measured on a working set
of that footprint (N*S input + N*S output bytes), so at 256 KiB it is cache bandwidth, not DRAM's;
floor-dram is the old bound over the DRAM peak, kept for comparison.
Exit status 0 even when a target is missed (the table says so).
"""
import collections
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # scripts/: plot.py's size labels
from plot import label_sizes, size_label  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1], newline="")))
for r in rows:
    r["ndev"], r["bytes"], r["t"] = int(r["ndev"]), int(r["bytes_per_dev"]), float(r["time_s"])


print(f"{'system':<24} {'algo':<16} {'ndev':>4} {'size':>8} {'time_us':>12} {'algbw':>8} {'busbw':>8}")
for r in rows:
    print(f"{r['system']:<24} {r['algo']:<16} {r['ndev']:>4} {size_label(r['bytes']):>8} {r['t'] * 1e6:>12.1f} "
          f"{float(r['algbw_GBps']):>8.3f} {float(r['busbw_GBps']):>8.3f}")


def pick(system, ndev, size, algo_prefix=""):
    for r in rows:
        if r["system"] == system and r["ndev"] == ndev and r["bytes"] == size and r["algo"].startswith(algo_prefix):
            return r["t"]
    return None


print("\n# ringrt time / peer time, every algorithm (floor: cache-aware, for in-place rows floor-in-place;"
      " floor-dram: DRAM peak)")
print(f"{'algo':<16} {'ndev':>4} {'size':>8} {'time_us':>10} {'/floor':>8} {'/floor-dram':>11} {'/openmpi':>9}")
for r in rows:
    if r["system"] != "ringrt":
        continue
    own_floor = "floor-in-place" if r["algo"].startswith("in-place") else "floor"  # footprint N*S, not 2*N*S
    peers = [pick(p, r["ndev"], r["bytes"]) for p in (own_floor, "floor-dram", "openmpi")]
    cells = [f"{r['t'] / p:{w}.2f}" if p else f"{'-':>{w}}" for p, w in zip(peers, (8, 11, 9))]
    print(f"{r['algo']:<16} {r['ndev']:>4} {size_label(r['bytes']):>8} {r['t'] * 1e6:>10.1f} {' '.join(cells)}")

def floor_limit(ndev, size):
    """The target bound on the automatic choice over the floor at this point: 1.3x at 64 MiB on 4 devices,
    3x at 256 KiB, none elsewhere."""
    return 1.3 if size >= (64 << 20) and ndev == 4 else 3.0 if size == (256 << 10) else None


print("\n# targets (issues 7 and 19): ratio = ringrt auto time / peer time")
all_met = True
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        auto, mpi, floor = pick("ringrt", ndev, size, "auto"), pick("openmpi", ndev, size), pick("floor", ndev, size)
        if auto is None:
            continue
        checks = []
        if mpi is not None:
            limit = 1.0 if size < (1 << 20) else 0.5
            checks.append(("openmpi", auto / mpi, limit))
        if floor is not None and floor_limit(ndev, size) is not None:
            checks.append(("floor", auto / floor, floor_limit(ndev, size)))
        for name, ratio, limit in checks:
            ok = ratio <= limit
            all_met &= ok
            print(f"ndev {ndev} {size_label(size):>8}: ringrt/{name} = {ratio:6.3f} (target <= {limit}) "
                  f"{'met' if ok else 'NOT met'}")
# the same floor targets for the automatic choice in place (Tensor::allreduce_in_place, DDP's form: the
# input's own memory, as the floor's sum4 probe), shown beside the out-of-place figures above, which alone
# decide the summary line
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        inplace = pick("ringrt", ndev, size, "in-place")
        floor = pick("floor-in-place", ndev, size) or pick("floor", ndev, size)  # its footprint: N*S bytes
        if inplace is None or floor is None:
            continue
        limit = floor_limit(ndev, size)
        if limit is not None:
            print(f"ndev {ndev} {size_label(size):>8}: ringrt in-place/floor = {inplace / floor:6.3f} "
                  f"(target <= {limit}) {'met' if inplace / floor <= limit else 'NOT met'} (in-place form)")
# the tuned automatic choice against the best algorithm forced, at every point (target: within 1.05x).
# When the choice is that algorithm, the two rows time one algorithm twice (programs of their own, timed in
# turns) and their ratio is this run's spread, not the choice's cost: met, with the spread shown, up to
# 1.25x (the widest spread seen on the shared VM was 1.17x); beyond, the automatic row itself is slow.
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        auto_rows = [r for r in rows if r["system"] == "ringrt" and r["ndev"] == ndev and r["bytes"] == size
                     and r["algo"].startswith("auto")]
        forced = [r for r in rows if r["system"] == "ringrt" and r["ndev"] == ndev and r["bytes"] == size
                  and r["algo"] in ("naive", "ring", "all2all", "oneshot", "twoshot", "ring_fused")]
        if not auto_rows or not forced:
            continue
        auto, chosen = auto_rows[0]["t"], auto_rows[0]["algo"].partition(":")[2]
        best = min(forced, key=lambda r: r["t"])
        same = chosen == best["algo"]
        limit = 1.25 if same else 1.05
        ok = auto / best["t"] <= limit
        all_met &= ok
        why = " (the best algorithm chosen; the ratio is the spread of timing it twice)" if same else ""
        print(f"ndev {ndev} {size_label(size):>8}: ringrt auto/best forced ({best['algo']}) = {auto / best['t']:6.3f} "
              f"(target <= {limit}) {'met' if ok else 'NOT met'}{why}")
# the fused forms (one launch per device, rewrite/collective.hpp) against the best unfused algorithm
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        at = {r["algo"]: r["t"] for r in rows if r["system"] == "ringrt" and r["ndev"] == ndev and r["bytes"] == size}
        unfused = [a for a in ("naive", "ring", "all2all") if a in at]
        if not unfused:
            continue
        best = min(unfused, key=lambda a: at[a])
        for fused in ("oneshot", "twoshot", "ring_fused"):
            if fused in at:
                print(f"ndev {ndev} {size_label(size):>8}: ringrt {fused}/best unfused ({best}) = "
                      f"{at[fused] / at[best]:6.3f}{' (the fused form wins)' if at[fused] < at[best] else ''}")
# deterministic mode (allreduce.deterministic, docs/deterministic.md) against the automatic choice: target
# <= 1.3x at 64 MiB on 4 devices (issue 47), shown at every point
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        auto, det = pick("ringrt", ndev, size, "auto"), pick("ringrt", ndev, size, "deterministic")
        if auto is None or det is None:
            continue
        target = ndev == 4 and size == 64 << 20
        ok = det / auto <= 1.3
        all_met &= ok or not target
        print(f"ndev {ndev} {size_label(size):>8}: ringrt deterministic/auto = {det / auto:6.3f}"
              + (f" (target <= 1.3) {'met' if ok else 'NOT met'}" if target else ""))
# the compressed wire (allreduce.wire bfloat16, docs/compressed-wire.md) against the automatic choice, at every
# point (issue 47 asks for 4 and 64 MiB on 4 cpu devices)
for ndev in sorted({r["ndev"] for r in rows}):
    for size in sorted({r["bytes"] for r in rows}):
        auto, wire = pick("ringrt", ndev, size, "auto"), pick("ringrt", ndev, size, "wire_bfloat16")
        if auto is not None and wire is not None:
            print(f"ndev {ndev} {size_label(size):>8}: ringrt wire_bfloat16/auto = {wire / auto:6.3f}")
# the GPT-2 DDP step against the floor of its bytes: 2 N B / DRAM bandwidth, scaled from floor-dram's row
for r in rows:
    if r["system"] == "ringrt" and r["algo"].startswith("gpt2-ddp-step"):
        ref = [f for f in rows if f["system"] == "floor-dram" and f["ndev"] == r["ndev"]]
        if not ref:
            continue
        f = max(ref, key=lambda f: f["bytes"])
        floor_t = f["t"] * r["bytes"] / f["bytes"]
        ok = r["t"] / floor_t <= 1.5
        all_met &= ok
        print(f"GPT-2 DDP step, ndev {r['ndev']}, {size_label(r['bytes'])} per device: {r['t'] * 1e3:.1f} ms, floor "
              f"{floor_t * 1e3:.1f} ms, ratio {r['t'] / floor_t:6.3f} (target <= 1.5) {'met' if ok else 'NOT met'}")
print("# all targets met" if all_met else "# some targets NOT met")

over_mpi = sorted({r["system"] for r in rows if r["system"].startswith("over-mpi-")})
if over_mpi:
    # targets: 2 x 1 and 4 x 1 at most MPI_Allreduce's time at every size; 2 x 2 (against 4 ranks) at most 0.6x at
    # 4 MiB and 64 MiB; the fixed cost (1 KiB) at most 1.5x
    print("\n# ringrt over MPI ranks: time / MPI_Allreduce's on as many ranks (as many devices)")
    for system in over_mpi:
        layout = system[len("over-mpi-"):]
        for r in sorted((r for r in rows if r["system"] == system), key=lambda r: r["bytes"]):
            mpi = pick("openmpi", r["ndev"], r["bytes"])
            if not mpi:
                continue
            limit = 1.5 if r["bytes"] <= 1024 else 0.6 if layout == "2x2" and r["bytes"] >= 4 << 20 else \
                None if layout == "2x2" else 1.0
            ok = limit is None or r["t"] / mpi <= limit
            print(f"{system:<16} {size_label(r['bytes']):>8}: {r['t'] * 1e6:10.1f} us, MPI {mpi * 1e6:10.1f} us, "
                  f"{r['t'] / mpi:6.2f}x" + ("" if limit is None else f" (target <= {limit}) {'met' if ok else 'NOT met'}"))

ablations = sorted({r["system"] for r in rows if r["system"].startswith("ringrt-")})
if ablations:
    print("\n# levers: time with the lever off / time with every lever on (ringrt auto)")
    for system in ablations:
        for r in rows:
            if r["system"] != system:
                continue
            on = pick("ringrt", r["ndev"], r["bytes"], "auto")
            if on:
                print(f"{system:<24} ndev {r['ndev']} {size_label(r['bytes']):>8}: {r['t'] / on:6.2f}x "
                      f"({r['t'] * 1e6:.1f} us vs {on * 1e6:.1f} us)")

series = collections.defaultdict(list)
for r in rows:
    if r["algo"].startswith("gpt2"):  # one point of its own, in the targets above
        continue
    series[(r["system"], r["algo"].split(":")[0], r["ndev"])].append((r["bytes"], float(r["busbw_GBps"])))
fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
for ax, ndev in zip(axes, (2, 4)):
    for (system, algo, nd), pts in sorted(series.items()):
        if nd != ndev:
            continue
        pts.sort()
        style = "--" if system in ("floor", "floor-dram", "openmpi") else "-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=f"{system} {algo}")
    label_sizes(ax, {r["bytes"] for r in rows if r["ndev"] == ndev})
    ax.set_xlabel("bytes per device")
    ax.set_title(f"allreduce float32 sum, {ndev} devices")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
axes[0].set_ylabel("busbw (GB/s)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print(f"\n# plot: {sys.argv[2]}")
