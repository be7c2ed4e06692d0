#!/usr/bin/python3
"""WideLab built against LibTorch 1.13 (build/) and 2.x (build-pip/), and the 2.x
build with each of its fast paths turned off (WIDELAB_DISABLE), on the CPU.

Runs every variant once per round, alternately, so that a machine that gets
busier or quieter affects them alike, and prints each variant's median tokens/s
over the rounds and its ratio to the 1.13 build.

Usage:
    python3 bench/versions.py CONFIG [CONFIG ...] [--mode train|infer] [--batch B]
                              [--seq T] [--steps N] [--rounds R] [--threads N] [--json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

# The two builds' widelab-cli (WIDELAB_CLI_1 and WIDELAB_CLI_2 to point elsewhere).
CLI_1 = os.environ.get("WIDELAB_CLI_1", os.path.join(ROOT, "build", "app", "cli", "widelab-cli"))
CLI_2 = os.environ.get("WIDELAB_CLI_2", os.path.join(ROOT, "build-pip", "app", "cli", "widelab-cli"))
# name, widelab-cli, what WIDELAB_DISABLE turns off
VARIANTS = [
    ("1.13", CLI_1, ""),
    ("2.x", CLI_2, ""),
    ("2.x without fused attention", CLI_2, "fused_attention"),
    ("2.x without fused AdamW", CLI_2, "fused_adamw"),
]


def bench(cli, disable, config, args):
    command = [cli, "bench", config, "--mode", args.mode, "--batch", str(args.batch), "--seq", str(args.seq),
               "--steps", str(args.steps), "--threads", str(args.threads), "--json"]
    env = dict(os.environ, WIDELAB_DISABLE=disable)
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--mode", default="train", choices=["train", "infer"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for _, cli, _ in VARIANTS:
        if not os.path.exists(cli):
            sys.exit(f"versions.py: {cli} is missing: build both (packaging/build.sh, WIDELAB_LIBTORCH=pip ...)")
    rows = []
    for config in args.configs:
        speeds = {name: [] for name, _, _ in VARIANTS}
        for _ in range(args.rounds):
            for name, cli, disable in VARIANTS:
                speeds[name].append(bench(cli, disable, config, args)["tokens_per_second"])
        base = statistics.median(speeds["1.13"])
        for name, _, _ in VARIANTS:
            median = statistics.median(speeds[name])
            rows.append({"config": config, "variant": name, "tokens_per_second": median,
                         "against_1_13": median / base, "rounds": speeds[name]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.mode}, batch {args.batch} x {args.seq}, {args.threads} threads, median of {args.rounds} rounds")
    print(f"{'config':40} {'variant':30} {'tokens/s':>10} {'vs 1.13':>8}")
    for r in rows:
        print(f"{os.path.basename(r['config']):40} {r['variant']:30} {r['tokens_per_second']:10.0f} "
              f"{r['against_1_13']:8.2f}")


if __name__ == "__main__":
    main()
