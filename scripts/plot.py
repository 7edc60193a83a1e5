#!/usr/bin/python3
"""Plot busbw against message size, one line per allreduce algorithm, from `ringrt run --csv` files.

    build/release/ringrt run configs/ring.yaml --csv ring.csv
    build/release/ringrt run configs/naive.yaml --csv naive.csv
    scripts/plot.py -o busbw.png ring.csv naive.csv

Each CSV row is one size (columns of runtime/cli/report.hpp write_csv: size_bytes, ..., algo, ...,
busbw_gbs, ..., ndev, backend). Rows are grouped by algorithm; when one algorithm appears in several
files, the file name tells its lines apart. Needs Debian's python3-matplotlib (scripts/install-deps.sh),
hence /usr/bin/python3 rather than whatever python3 comes first on PATH.
"""
import argparse
import collections
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def read_series(paths):
    """{(algo, file stem): [(size_bytes, busbw_gbs), ...]} over all files, sorted by size."""
    series = collections.defaultdict(list)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                series[(row["algo"], pathlib.Path(path).stem)].append(
                    (int(row["size_bytes"]), float(row["busbw_gbs"])))
    return {key: sorted(points) for key, points in series.items()}


def size_label(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="CSV files written by `ringrt run --csv`")
    parser.add_argument("-o", "--output", default="busbw.png", help="the PNG to write (default: busbw.png)")
    parser.add_argument("--title", default="allreduce bus bandwidth", help="the plot's title")
    args = parser.parse_args()

    series = read_series(args.csv)
    files_per_algo = collections.Counter(algo for algo, _ in series)
    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = set()
    for (algo, stem), points in sorted(series.items()):
        label = algo if files_per_algo[algo] == 1 else f"{algo} ({stem})"
        xs, ys = zip(*points)
        sizes.update(xs)
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=45, ha="right")
    ax.set_xlabel("size per device")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(args.title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
