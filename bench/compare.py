#!/usr/bin/python3
"""WideLab (widelab-cli bench) against the eager PyTorch model (widelab_torch.py).

Runs the two sides alternately, one process per side per round, so that a
machine that gets busier or quieter during the run affects both alike, and
prints each side's median tokens/s over the rounds and their ratio.

Usage:
    python3 bench/compare.py CONFIG [CONFIG ...] [--mode train|infer] [--batch B]
                             [--seq T] [--steps N] [--warmup W] [--rounds R]
                             [--threads N] [--side SIDE]... [--bf16] [--json]
    python3 bench/compare.py CONFIG [CONFIG ...] --mode decode [--batch B] [--seq S]
                             [--steps N] [--rounds R] [--threads N] [--json]

Each CONFIG is a JSON file or a preset name. Both sides build the model with
max_len raised to --seq, use AdamW (lr 1e-4) when training, and the same
number of threads. A translation model trains (and infers) on its source as
its target, as `widelab-cli bench` does; tokens/s counts B x T once.

--mode decode (translation models): each side decodes --batch random sources of
--seq tokens greedily to 50 and to 200 target tokens, with cached keys and
values and by recomputing the prefix, best of --steps each (the first is the
warm-up; --warmup does not apply), as `widelab-cli bench --mode decode` does;
the tokens/s of each side are the median over the rounds of those bests. widelab-cli sets OMP_WAIT_POLICY=PASSIVE and
OPENBLAS_THREAD_TIMEOUT=16 for itself when the environment has neither (core/runtime/Runtime.h); the Python side runs
with the environment as given, as a researcher's script would.

--bf16 (train and infer) runs every side under bf16 autocast, the router in
fp32: on a CPU with AMX (or AVX-512 BF16) the products then run several times
faster than fp32's, and a user after speed there writes `torch.autocast`.

--side (train and infer; repeatable) names a PyTorch side: the command that
runs Python, then widelab_torch.py's own options, e.g.
    --side "/usr/bin/python3 --hand-written"                 # 1.13, the earlier baseline
    --side "env PYTHONPATH=.deps/torch-2.11.0 python3"       # 2.11 eager, SDPA
    --side "env PYTHONPATH=.deps/torch-2.11.0 python3 --compile"
Everything before the first option is the command; widelab_torch.py, CONFIG
and the common options follow it, then the side's options. Every side runs
once a round, after WideLab, and is named in the table by its torch version
and what it runs. Without --side: this Python, eager.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("WIDELAB_CLI", os.path.join(HERE, "..", "build", "app", "cli", "widelab-cli"))
PYTHON_MODEL = os.path.join(HERE, "widelab_torch.py")


def run_json(command):
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def common_options(args):
    options = ["--mode", args.mode, "--batch", str(args.batch), "--steps", str(args.steps),
               "--threads", str(args.threads), "--json"]
    if args.mode != "decode":  # decode: best of --steps, the first one warming up
        options += ["--warmup", str(args.warmup)]
    if args.seq:
        options += ["--seq", str(args.seq)]
    if getattr(args, "bf16", False):
        options += ["--bf16"]
    return options


def compare_decode(config, args):
    """Both sides' greedy decoding, alternating by round; per target length the
    median over the rounds of each side's best-of-N tokens/s, and their ratios."""
    options = common_options(args)
    widelab, torch_side = [], []
    for _ in range(args.rounds):
        widelab.append(run_json([CLI, "bench", config] + options))
        torch_side.append(run_json([sys.executable, PYTHON_MODEL, config] + options))
    rows = []
    for i, row in enumerate(widelab[-1]["rows"]):
        def median(runs, key):
            return statistics.median(r["rows"][i][key] for r in runs)
        ours = {key: median(widelab, key + "_tokens_per_second") for key in ("cached", "recomputed")}
        theirs = {key: median(torch_side, key + "_tokens_per_second") for key in ("cached", "recomputed")}
        if torch_side[-1]["rows"][i]["target_tokens"] != row["target_tokens"]:
            raise RuntimeError("the two sides decoded to different lengths")
        rows.append({"target_tokens": row["target_tokens"],
                     "widelab_cached_tokens_per_second": ours["cached"],
                     "torch_cached_tokens_per_second": theirs["cached"],
                     "cached_ratio": ours["cached"] / theirs["cached"],
                     "widelab_recomputed_tokens_per_second": ours["recomputed"],
                     "torch_recomputed_tokens_per_second": theirs["recomputed"],
                     "recomputed_ratio": ours["recomputed"] / theirs["recomputed"],
                     "widelab_speedup": median(widelab, "speedup"),
                     "torch_speedup": median(torch_side, "speedup")})
    return {
        "config": config,
        "name": torch_side[-1]["name"],
        "mode": "decode",
        "batch": widelab[-1]["batch"],
        "source_tokens": widelab[-1]["source_tokens"],
        "threads": widelab[-1]["threads"],
        "repeats": args.steps,
        "rounds": args.rounds,
        "torch": torch_side[-1]["torch"],
        "torch_attention": torch_side[-1]["attention"],
        "torch_parameters": torch_side[-1]["parameters"],
        "rows": rows,
        "widelab_runs": widelab,
        "torch_runs": torch_side,
    }


def print_decode(results, args):
    header = (f"{'config':<40} {'B x S':>7} {'target':>6} {'cached tok/s WideLab':>21} {'PyTorch':>8} {'ratio':>6}"
              f" {'recomputed tok/s WideLab':>25} {'PyTorch':>8} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    for r in results:
        shape = f"{r['batch']}x{r['source_tokens']}"
        for row in r["rows"]:
            print(f"{r['config']:<40} {shape:>7} {row['target_tokens']:>6} "
                  f"{row['widelab_cached_tokens_per_second']:>21,.1f} {row['torch_cached_tokens_per_second']:>8,.1f} "
                  f"{row['cached_ratio']:>5.2f}x {row['widelab_recomputed_tokens_per_second']:>25,.1f} "
                  f"{row['torch_recomputed_tokens_per_second']:>8,.1f} {row['recomputed_ratio']:>5.2f}x")
    first = results[0]
    print(f"greedy decoding, no end token; each side's best of {args.steps} per round, median of {args.rounds} "
          f"alternating rounds; {first['threads']} threads; PyTorch {first['torch']} eager, attention: "
          f"{first['torch_attention']}")


def side_command(side, config, options):
    """The command of one --side: its Python command, the script, CONFIG, the
    common options, then the side's own options."""
    words = shlex.split(side)
    first_option = next((i for i, word in enumerate(words) if word.startswith("--")), len(words))
    if first_option == 0:
        raise SystemExit(f"--side {side!r}: it starts with an option; give the Python command first")
    return words[:first_option] + [PYTHON_MODEL, config] + options + words[first_option:]


def side_label(run):
    """A PyTorch side as the table names it, from what the run reports."""
    return f"PyTorch {run['torch'].split('+')[0]} {run.get('side', 'eager')}"


def side_target(run, mode):
    """The ratio WideLab aims at against a side: 1.2x a compiled one, 1.5x
    eager PyTorch as written today (issue 39, training and inference), and
    against the hand-written baseline issue 6's 1.5x training, 2x inference."""
    if run.get("compile"):
        return 1.2
    if run.get("hand_written", True) and mode == "infer":
        return 2.0
    return 1.5


def compare(config, args):
    options = common_options(args)
    sides = args.side or [shlex.quote(sys.executable)]
    widelab, torch_sides = [], [[] for _ in sides]
    for _ in range(args.rounds):
        widelab.append(run_json([CLI, "bench", config] + options))
        for side, runs in zip(sides, torch_sides):
            runs.append(run_json(side_command(side, config, options)))
    ours = statistics.median(r["tokens_per_second"] for r in widelab)
    compared = []
    for side, runs in zip(sides, torch_sides):
        theirs = statistics.median(r["tokens_per_second"] for r in runs)
        compared.append({"side": side, "label": side_label(runs[-1]), "tokens_per_second": theirs,
                         "ratio": ours / theirs, "target": side_target(runs[-1], args.mode),
                         "step_ms": 1e3 * statistics.median(r["step_seconds_median"] for r in runs),
                         "runs": runs})
    torch_side = torch_sides[0]
    theirs = compared[0]["tokens_per_second"]
    last = widelab[-1]
    return {
        "config": config,
        "name": last["name"],
        "mode": args.mode,
        "batch": last["batch"],
        "sequence": last["sequence"],
        "rounds": args.rounds,
        "widelab_tokens_per_second": ours,
        "torch_tokens_per_second": theirs,
        "ratio": ours / theirs,
        "widelab_step_ms": 1e3 * statistics.median(r["step_seconds_median"] for r in widelab),
        "torch_step_ms": 1e3 * statistics.median(r["step_seconds_median"] for r in torch_side),
        "widelab_peak_ratio": statistics.median(r["peak_ratio"] for r in widelab),
        "peak_gflops": statistics.median(r["peak_flops"] for r in widelab) / 1e9,
        "torch_parameters": torch_side[-1]["parameters"],
        "widelab_runs": widelab,
        "torch_runs": torch_side,
        "sides": compared,
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--mode", choices=["train", "infer", "decode"], default="train")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--steps", type=int, default=5, help="timed steps (decode: best of N)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--side", action="append",
                        help="a PyTorch side: its Python command, then widelab_torch.py options (repeatable)")
    parser.add_argument("--bf16", action="store_true",
                        help="train and infer: every side under bf16 autocast (on the CPU too)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.side and args.mode == "decode":
        parser.error("--side: decode compares this Python's eager side only")

    results = [(compare_decode if args.mode == "decode" else compare)(config, args) for config in args.configs]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    if args.mode == "decode":
        print_decode(results, args)
        return 0
    header = (f"{'config':<28} {'mode':<5} {'B x T':>10} {'WideLab tok/s':>14} {'of peak':>8}  "
              f"{'against':<44} {'tok/s':>8} {'ratio':>6}  target")
    print(header)
    print("-" * len(header))
    for r in results:
        shape = f"{r['batch']}x{r['sequence']}"
        first = f"{r['config']:<28} {r['mode']:<5} {shape:>10} {r['widelab_tokens_per_second']:>14,.0f} " \
                f"{100 * r['widelab_peak_ratio']:>7.1f}%  "
        for i, side in enumerate(r["sides"]):
            print((first if i == 0 else " " * len(first)) + f"{side['label']:<44} {side['tokens_per_second']:>8,.0f} "
                  f"{side['ratio']:>5.2f}x  {side['target']:g}x "
                  + ("met" if side["ratio"] >= side["target"] else f"{side['target'] - side['ratio']:.2f} short"))
    print(f"median of {args.rounds} alternating rounds per side; matmul peak "
          f"{statistics.median(r['peak_gflops'] for r in results):.0f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
