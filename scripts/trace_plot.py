#!/usr/bin/python3
"""Draw a ringrt trace (Chrome trace-event JSON) as a PNG timeline: one lane per device queue, kernels
and copies in two colours, time in microseconds.

    build/release/ringrt run configs/ring.yaml --set experiment.sizes.max=1MiB --set runtime.peer_reads=false \
        --set runtime.peer_writes=false --trace ring.json   # both off: every copy of the ring runs and shows
    scripts/trace_plot.py -o ring.png ring.json            # the last run in the file (the largest row)
    scripts/trace_plot.py --run 2 -o ring2.png ring.json   # another one
    scripts/trace_plot.py --all -o all.png ring.json       # every run, on one time axis

The file is what `ringrt run --trace` or ringrt::Trace::write_chrome_json writes (runtime/api/trace.hpp):
"X" events with pid = the rank, tid = a device queue named by a "thread_name" metadata event, and args
item, kind (kernel | copy), bytes, run, deps, src/dst (copies), kernel (kernels). `ringrt run --trace`
records the last timed iteration of each row, one run each (numbered in args.run, 1, 2, ...); several
files (rank-suffixed, under mpirun) are drawn together, one lane per rank and queue. Each bar is labelled
with its item index where it is wide enough. chrome://tracing or ui.perfetto.dev open the same file.
Needs Debian's python3-matplotlib (scripts/install-deps.sh), hence /usr/bin/python3.
"""
import argparse
import collections
import json

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from plot import size_label  # noqa: E402  (scripts/plot.py, beside this file)

COLOURS = {"kernel": "#4878d0", "copy": "#ee854a"}


def read_trace(paths):
    """(lanes, events): lanes {(pid, tid): name}, events [dict] of the "X" events of every file. The files
    of several ranks on one host are put on one time axis by their metadata's origin_ns (the monotonic
    clock at each trace's start); files from several hosts cannot be, and each keeps its own."""
    traces = []
    for path in paths:
        with open(path) as f:
            traces.append(json.load(f))
    metas = [t.get("metadata", {}) for t in traces]
    one_host = len({m.get("host") for m in metas}) == 1 and all("origin_ns" in m for m in metas)
    if len(traces) > 1 and not one_host:
        print("trace_plot.py: the files come from several hosts: their times are not aligned")
    dropped = sum(m.get("dropped", 0) for m in metas)
    if dropped:
        print(f"trace_plot.py: {dropped} events were dropped past the trace's cap: the runs after it are "
              "missing and the last one kept may be incomplete")
    first = min((m["origin_ns"] for m in metas), default=0) if one_host else 0
    lanes, events = {}, []
    for trace, meta in zip(traces, metas):
        shift = (meta["origin_ns"] - first) / 1000 if one_host else 0
        for e in trace["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                lanes[(e["pid"], e["tid"])] = e["args"]["name"]
            elif e.get("ph") == "X":
                events.append(dict(e, ts=e["ts"] + shift))
    return lanes, events


def pick(events, run, every):
    """The events to draw: every run, the given one, or the last (highest args.run)."""
    if every or not events:
        return events
    runs = sorted({e["args"].get("run", 0) for e in events})
    want = runs[-1] if run is None else run
    if want not in runs:
        raise SystemExit(f"trace_plot.py: run {want} is not in the trace (runs: {runs[0]}..{runs[-1]})")
    return [e for e in events if e["args"].get("run", 0) == want]


def draw(lanes, events, output, title):
    keys = sorted({(e["pid"], e["tid"]) for e in events})
    row = {k: i for i, k in enumerate(keys)}
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(keys) + 1.6))
    bars = collections.defaultdict(list)  # (lane, kind) -> [(start, width)]: one call per lane and kind
    labelled = len(events) <= 2000  # item numbers only where they can be read
    for e in events:
        kind = e["args"].get("kind", e.get("cat", "kernel"))
        start, width = e["ts"] - t0, max(e["dur"], (t1 - t0) * 1e-4)  # a 0 us item still shows
        y = row[(e["pid"], e["tid"])]
        bars[(y, kind)].append((start, width))
        if labelled and width > (t1 - t0) * 0.015:
            ax.text(start + width / 2, y, str(e["args"].get("item", "")), ha="center", va="center", fontsize=6)
    for (y, kind), spans in bars.items():
        ax.broken_barh(spans, (y - 0.35, 0.7), facecolors=COLOURS.get(kind, "grey"), edgecolor="black", linewidth=0.3)
    multi_rank = len({k[0] for k in keys}) > 1
    ax.set_yticks(range(len(keys)))
    names = [lanes.get(k, f"tid {k[1]}") for k in keys]  # a rank's queues are named rank<R>/... already
    ax.set_yticklabels([f"rank {k[0]} {n}" if multi_rank and not n.startswith("rank") else n for k, n in zip(keys, names)])
    ax.invert_yaxis()  # the first queue on top
    ax.set_xlabel("time (µs)")
    ax.set_xlim(0, (t1 - t0) * 1.01)
    kernels = sum(1 for e in events if e["args"].get("kind") == "kernel")
    copied = sum(e["args"].get("bytes", 0) for e in events if e["args"].get("kind") == "copy")
    ax.set_title(title or f"{kernels} kernels, {len(events) - kernels} copies ({size_label(copied)} copied), "
                 f"{len(keys)} queues, {t1 - t0:.1f} µs")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper right", fontsize=8)
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    fig.tight_layout()
    fig.savefig(output, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="+", help="trace files written by `ringrt run --trace`")
    parser.add_argument("-o", "--output", default="trace.png", help="the PNG to write (default: trace.png)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--run", type=int, help="the run (args.run) to draw (default: the last)")
    which.add_argument("--all", action="store_true", help="draw every run")
    parser.add_argument("--title", help="the plot's title (default: counts and the time span)")
    args = parser.parse_args()
    try:
        lanes, events = read_trace(args.trace)
        events = pick(events, args.run, args.all)
        if not events:
            raise SystemExit("trace_plot.py: the trace holds no events")
        draw(lanes, events, args.output, args.title)
    except (OSError, ValueError) as e:  # a missing or unreadable file, not JSON, an unknown image format
        raise SystemExit(f"trace_plot.py: {e}")
    except (KeyError, TypeError, AttributeError) as e:
        raise SystemExit(f"trace_plot.py: not a ringrt trace (ringrt run --trace, Trace::write_chrome_json): {e!r}")
    print(f"wrote {args.output}: {len(events)} events")


if __name__ == "__main__":
    main()
