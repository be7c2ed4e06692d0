#!/usr/bin/python3
"""Scaling tables: how WideLab's time and memory grow with one dimension.

Each table varies one setting of a base model, runs `widelab-cli bench` once per
value (one process each, so that its peak resident memory is its own) and
prints a Markdown table: tokens/s, median step time, model GFLOP/s, share of
the matmul peak, peak RSS, and the phases that matter for that dimension.

Usage:
    /usr/bin/python3 bench/scaling.py TABLE [TABLE ...] [--steps N] [--warmup W] [--json] [--save FILE]

TABLE is one of:
    sequence  deep 6x8 (d 256), inference, batch 1, sequence 128 -> 2048
    experts   WideNet (d 256, top-2, capacity 1.2), training, batch 16 x 256, experts 2 -> 64
    paths     multi-path 3 blocks x 8 heads (d 256), training, batch 4 x 256, paths 1 -> 8
    heads     one layer, attention width 768 (heads x head_dim), inference, batch 1 x 1024, heads 8 -> 96
    attention every attention mechanism (`widelab-cli attention --json`): one layer, 4 heads x 32
              (d 128), inference, batch 1, sequence 512 -> 8192; a table of milliseconds per
              mechanism and sequence, and the growth exponent from 512 to 8192 (1: linear,
              2: quadratic), of the whole pass and of its attention phase
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("WIDELAB_CLI", os.path.join(HERE, "..", "build", "app", "cli", "widelab-cli"))
CONFIGS = os.path.join(HERE, "configs")


def resolved(config):
    """A preset or file, resolved by widelab-cli check into a full document."""
    done = subprocess.run([CLI, "check", config], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def table_specs():
    deep = os.path.join(CONFIGS, "transformer-6x8-d256.json")
    multipath = os.path.join(CONFIGS, "multipath-3x4-d256.json")
    return {
        "sequence": dict(base=deep, key="seq", values=[128, 256, 512, 1024, 2048], mode="infer", batch=1,
                         seq=None, model=lambda m, v: m.update(max_len=max(m["max_len"], v)),
                         phases=["attention", "ffn_experts"]),
        "experts": dict(base="widenet", key="experts", values=[2, 4, 8, 16, 32, 64], mode="train", batch=16,
                        seq=256, model=lambda m, v: m.update(experts=v),
                        phases=["ffn_experts", "routing_dispatch_combine"]),
        "paths": dict(base=multipath, key="paths", values=[1, 2, 4, 8], mode="train", batch=4, seq=256,
                      model=lambda m, v: m.update(paths=v), phases=["attention", "ffn_experts", "paths_residual"]),
        "heads": dict(base=deep, key="heads", values=[8, 12, 24, 48, 96], mode="infer", batch=1, seq=1024,
                      model=lambda m, v: m.update(layers=1, routing_groups=1, heads=v, head_dim=768 // v, max_len=1024),
                      phases=["attention"]),
    }


def run_one(config_path, spec, value, args):
    seq = value if spec["key"] == "seq" else spec["seq"]
    command = [CLI, "bench", config_path, "--mode", spec["mode"], "--batch", str(spec["batch"]),
               "--seq", str(seq), "--steps", str(args.steps), "--warmup", str(args.warmup), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(done.stdout)
    # ru_maxrss of children is the largest child so far: exact when values grow,
    # a lower bound otherwise (marked in the table).
    result["peak_rss_mib"] = after / 1024.0
    result["peak_rss_exact"] = after > before
    return result


def table(name, args):
    spec = table_specs()[name]
    document = resolved(spec["base"])
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for value in spec["values"]:
            model = dict(document["model"])
            spec["model"](model, value)
            path = os.path.join(scratch, f"{name}-{value}.json")
            with open(path, "w") as out:
                json.dump({"name": f"{document.get('name', spec['base'])}, {spec['key']} {value}", "model": model}, out)
            rows.append((value, run_one(path, spec, value, args)))
    return spec, rows


def markdown(name, spec, rows):
    phases = spec["phases"]
    print(f"\n### {name}: {spec['mode']}, batch {spec['batch']}" + (f", sequence {spec['seq']}" if spec["seq"] else ""))
    print()
    print(f"| {spec['key']} | tok/s | step ms | GFLOP/s | of peak | peak RSS MiB | "
          + " | ".join(f"{p} ms" for p in phases) + " |")
    print("| ---: " * (6 + len(phases)) + "|")
    for value, r in rows:
        phase = r.get("phase_seconds_per_step", {})
        rss = f"{r['peak_rss_mib']:.0f}" + ("" if r["peak_rss_exact"] else " (>=)")
        print(f"| {value} | {r['tokens_per_second']:.0f} | {1e3 * r['step_seconds_median']:.0f} | "
              f"{r['achieved_flops'] / 1e9:.1f} | {100 * r['peak_ratio']:.1f} % | {rss} | "
              + " | ".join(f"{1e3 * phase.get(p, 0.0):.0f}" for p in phases) + " |")


ATTENTION_SEQUENCES = [512, 1024, 2048, 4096, 8192]


def mechanisms():
    done = subprocess.run([CLI, "attention", "--json"], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["mechanisms"]


def attention_table(args):
    """Every mechanism at every sequence: {name: {T: result}}."""
    base = {"vocab_size": 32, "max_len": ATTENTION_SEQUENCES[-1], "d_model": 128, "layers": 1, "heads": 4,
            "head_dim": 32, "ffn_dim": 512, "dropout": 0.0, "pooling": "cls", "num_classes": 10}
    spec = dict(key="seq", mode="infer", batch=1, seq=None)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for mechanism in mechanisms():
            name = mechanism["name"]
            path = os.path.join(scratch, f"attention-{name}.json")
            with open(path, "w") as out:
                json.dump({"name": f"attention {name}", "model": dict(base, attention=name)}, out)
            results[name] = {T: run_one(path, spec, T, args) for T in ATTENTION_SEQUENCES}
    return results


def attention_markdown(results):
    first, last = ATTENTION_SEQUENCES[0], ATTENTION_SEQUENCES[-1]
    doublings = math.log2(last / first)
    print("\n### attention: inference, batch 1, one layer of 4 heads x 32 (d 128); milliseconds per pass\n")
    print("| mechanism | " + " | ".join(f"T = {T}" for T in ATTENTION_SEQUENCES)
          + f" | growth {first}->{last} | attention phase growth |")
    print("| --- " + "| ---: " * (len(ATTENTION_SEQUENCES) + 2) + "|")
    for name, rows in results.items():
        ms = [1e3 * rows[T]["step_seconds_median"] for T in ATTENTION_SEQUENCES]
        phase = [rows[T].get("phase_seconds_per_step", {}).get("attention", 0.0) for T in ATTENTION_SEQUENCES]
        growth = math.log2(ms[-1] / ms[0]) / doublings
        phase_growth = math.log2(phase[-1] / phase[0]) / doublings if phase[0] > 0 and phase[-1] > 0 else float("nan")
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in ms) + f" | T^{growth:.2f} | T^{phase_growth:.2f} |")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="+", choices=sorted(table_specs()) + ["attention"])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", help="also write the results as JSON to this file (for bench/plot.py)")
    args = parser.parse_args(argv)
    results = {}
    for name in args.tables:
        if name == "attention":
            results[name] = {mechanism: {str(T): r for T, r in rows.items()}
                             for mechanism, rows in attention_table(args).items()}
            if not args.json:
                attention_markdown({m: {int(T): r for T, r in rows.items()} for m, rows in results[name].items()})
            continue
        spec, rows = table(name, args)
        results[name] = {"key": spec["key"], "mode": spec["mode"], "rows": [dict(value=v, **r) for v, r in rows]}
        if not args.json:
            markdown(name, spec, rows)
    if args.json:
        print(json.dumps(results, indent=2))
    if args.save:
        with open(args.save, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
