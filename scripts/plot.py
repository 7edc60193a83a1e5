#!/usr/bin/python3
"""Plot busbw against message size, one line per collective and algorithm, from `ringrt run --csv` files.

    build/release/ringrt run configs/ring.yaml --csv ring.csv
    build/release/ringrt run configs/naive.yaml --csv naive.csv
    build/release/ringrt run configs/ring.yaml --set experiment.collective=allgather --csv allgather.csv
    scripts/plot.py -o busbw.png ring.csv naive.csv allgather.csv

Each CSV row is one size (columns of runtime/cli/report.cpp write_csv: size_bytes, ..., algo, ...,
busbw_gbs, ..., ndev, backend, collective, phase, bucket). Rows are grouped by collective and algorithm
(files written before the collective column count as allreduce); when one such pair appears in several
files, the file name tells its lines apart; several rows of one size (an FSDP step's units) are averaged.
busbw_gbs is the latency's (experiment.timing latency or both) or the pipelined time's (pipelined); rows
without one (the collectives of pipelined bucket steps, timed only as whole steps) are left out.
Needs Debian's python3-matplotlib (scripts/install-deps.sh), hence /usr/bin/python3 rather than
whatever python3 comes first on PATH.
"""
import argparse
import collections
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def read_series(paths):
    """{(collective, algo, file stem): [(size_bytes, busbw_gbs), ...]} over all files, sorted by size,
    rows of one size averaged."""
    series = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if not row["busbw_gbs"]:  # a collective of pipelined steps: timed only as its whole step
                    continue
                key = (row.get("collective") or "allreduce", row["algo"], pathlib.Path(path).stem)
                series[key][int(row["size_bytes"])].append(float(row["busbw_gbs"]))
    return {key: sorted((size, sum(v) / len(v)) for size, v in points.items()) for key, points in series.items()}


def label_of(key, series):
    """The legend of one line: the algorithm, the collective when there are several, the file when the
    pair repeats across files."""
    collective, algo, stem = key
    collectives = {k[0] for k in series}
    files = sum(1 for k in series if k[:2] == key[:2])
    label = f"{collective} {algo}" if len(collectives) > 1 else algo
    return label if files == 1 else f"{label} ({stem})"


def size_label(n):
    """A byte count as people write it: 1 KiB, 64 MiB, 1.5 GiB (3 significant digits), 512 B."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} B"


def label_sizes(ax, sizes):
    """Log-2 x axis with a tick at every size, labelled by size_label."""
    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=45, ha="right")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="CSV files written by `ringrt run --csv`")
    parser.add_argument("-o", "--output", default="busbw.png", help="the PNG to write (default: busbw.png)")
    parser.add_argument("--title", help="the plot's title (default: the collectives' bus bandwidth)")
    args = parser.parse_args()

    series = read_series(args.csv)
    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = set()
    for key, points in sorted(series.items()):
        xs, ys = zip(*points)
        sizes.update(xs)
        ax.plot(xs, ys, marker="o", label=label_of(key, series))
    label_sizes(ax, sizes)
    ax.set_xlabel("size per device")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(args.title or ", ".join(sorted({k[0] for k in series})) + " bus bandwidth")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
