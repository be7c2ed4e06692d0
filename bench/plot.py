#!/usr/bin/python3
"""Plots for docs/performance.md from the benchmark scripts' JSON.

    /usr/bin/python3 bench/compare.py CONFIG... --json > compare.json
    /usr/bin/python3 bench/scaling.py sequence heads experts paths --save scaling.json
    /usr/bin/python3 bench/plot.py [--compare compare.json ...] [--scaling scaling.json] --out DIR

Writes DIR/perf-compare.png (tokens/s of WideLab and eager PyTorch per model)
and DIR/perf-scaling.png (one panel per scaling table). Needs python3-matplotlib.
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def plot_compare(results, path):
    labels = [os.path.splitext(os.path.basename(r["config"]))[0] for r in results]
    ours = [r["widelab_tokens_per_second"] for r in results]
    theirs = [r["torch_tokens_per_second"] for r in results]
    positions = range(len(results))
    figure, axes = plt.subplots(figsize=(9, 4.2))
    width = 0.38
    axes.bar([p - width / 2 for p in positions], ours, width, label="WideLab (widelab-cli bench)", color="#1f77b4")
    axes.bar([p + width / 2 for p in positions], theirs, width, label="eager PyTorch (bench/widelab_torch.py)",
             color="#bbbbbb")
    for p, r in zip(positions, results):
        axes.annotate(f"{r['ratio']:.2f}x", (p, max(r["widelab_tokens_per_second"], r["torch_tokens_per_second"])),
                      ha="center", va="bottom", fontsize=9, xytext=(0, 3), textcoords="offset points")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(labels, rotation=15, ha="right", fontsize=9)
    first = results[0]
    axes.set_ylabel("tokens/s")
    axes.set_title(f"{first['mode']}, batch {first['batch']} x {first['sequence']}, 2 CPU cores "
                   "(higher is better; ratio above each pair)", fontsize=10)
    axes.legend(fontsize=9, loc="upper right")
    axes.margins(y=0.15)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_scaling(tables, path):
    figure, panels = plt.subplots(1, len(tables), figsize=(4 * len(tables), 3.8))
    if len(tables) == 1:
        panels = [panels]
    for axes, (name, table) in zip(panels, tables.items()):
        rows = table["rows"]
        values = [r["value"] for r in rows]
        axes.plot(values, [1e3 * r["step_seconds_median"] for r in rows], "o-", label="step ms")
        twin = axes.twinx()
        twin.plot(values, [r["achieved_flops"] / 1e9 for r in rows], "s--", color="#d62728", label="GFLOP/s")
        axes.set_xscale("log", base=2)
        axes.set_xticks(values)
        axes.set_xticklabels([str(v) for v in values], fontsize=8)
        axes.set_xlabel(table["key"])
        axes.set_ylabel("step ms")
        twin.set_ylabel("model GFLOP/s", color="#d62728")
        twin.set_ylim(bottom=0)
        axes.set_ylim(bottom=0)
        axes.set_title(f"{name} ({table['mode']})", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", nargs="*", default=[])
    parser.add_argument("--scaling")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.compare:
        results = []
        for file in args.compare:
            with open(file) as data:
                results += json.load(data)
        plot_compare(results, os.path.join(args.out, "perf-compare.png"))
    if args.scaling:
        with open(args.scaling) as data:
            plot_scaling(json.load(data), os.path.join(args.out, "perf-scaling.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
