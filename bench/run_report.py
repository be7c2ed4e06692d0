#!/usr/bin/python3
"""What a run's metrics.jsonl says about memory and the cost of measuring.

For a run trained with `widelab-cli train` (or the app): resident memory at the
first snapshot, after 10 % of the steps and at the end, its peak, and its growth
from 10 % on (flat means the allocator has settled); the time spent on
measurements (everything a snapshot holds: routing, LayerNorm divergence, path
weights, memory) against the training time of the same steps, and all the
time outside the steps (snapshots, validation, probes, checkpoints); the time
spent reading batches within the steps (what the data source costs: a run on
generated data of the same shape would train this much faster at most);
tokens/s.

Usage: /usr/bin/python3 bench/run_report.py RUN_DIR [--json]
"""

import json
import os
import sys


def report(run):
    train = []
    with open(os.path.join(run, "metrics.jsonl")) as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "train":
                train.append(record)
    if len(train) < 2:
        raise SystemExit(f"{run}: fewer than two train snapshots in metrics.jsonl")
    gib = 2.0 ** 30
    memory = [r["memory_bytes"] / gib for r in train]
    settled = train[len(train) // 10]
    steps = [b["step"] - a["step"] for a, b in zip(train, train[1:])]
    training = sum(r["step_seconds"] * n for r, n in zip(train[1:], steps))
    measuring = sum(r["measurement_seconds"] for r in train[1:])
    reading = sum(r.get("data_seconds", 0.0) * n for r, n in zip(train[1:], steps))  # absent before 2026-12
    wall = train[-1]["wall_seconds"] - train[0]["wall_seconds"]
    return {
        "run": run,
        "snapshots": len(train),
        "steps": train[-1]["step"],
        "memory_first_gib": memory[0],
        "memory_at_10_percent_gib": settled["memory_bytes"] / gib,
        "memory_last_gib": memory[-1],
        "memory_peak_gib": max(memory),
        "growth_after_10_percent": memory[-1] / (settled["memory_bytes"] / gib) - 1.0,
        "training_seconds": training,
        "measurement_seconds": measuring,
        "measurement_share": measuring / training if training > 0 else 0.0,
        "data_seconds": reading,
        "data_share": reading / training if training > 0 else 0.0,
        "wall_seconds": wall,
        "outside_steps_share": (wall - training) / training if training > 0 else 0.0,
        "tokens_per_second_median": sorted(r["tokens_per_second"] for r in train)[len(train) // 2],
    }


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    result = report(argv[0])
    if "--json" in argv:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['run']}: {result['steps']} steps, {result['snapshots']} snapshots, "
          f"{result['tokens_per_second_median']:.0f} tokens/s (median)")
    print(f"memory (RSS): {result['memory_first_gib']:.3f} GiB at the first snapshot, "
          f"{result['memory_at_10_percent_gib']:.3f} at 10 %, {result['memory_last_gib']:.3f} at the end, "
          f"peak {result['memory_peak_gib']:.3f}; {100 * result['growth_after_10_percent']:+.1f} % after 10 %")
    print(f"measurement: {result['measurement_seconds']:.2f} s of {result['training_seconds']:.1f} s training "
          f"({100 * result['measurement_share']:.2f} %)")
    print(f"reading batches: {result['data_seconds']:.2f} s of {result['training_seconds']:.1f} s training "
          f"({100 * result['data_share']:.2f} %)")
    print(f"outside the steps (snapshots, validation, probes, checkpoints): "
          f"{result['wall_seconds'] - result['training_seconds']:.1f} s of {result['wall_seconds']:.1f} s wall "
          f"({100 * result['outside_steps_share']:.2f} % of the training time)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
