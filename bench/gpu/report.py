#!/usr/bin/python3
"""The GPU suite's results: collected from bench/gpu/run.sh's records, and as
the Markdown tables of docs/gpu.md, with issue 14's targets met or missed.

Usage:
    python3 bench/gpu/report.py collect WORK_DIR --out results.json
    python3 bench/gpu/report.py markdown results.json           # tables on stdout
    python3 bench/gpu/report.py results.json                    # the same

The targets (issue 39, after issue 14's), for bf16 training at d_model 1024
on one GPU, against PyTorch as a user writes it today (bench/widelab_torch.py:
SDPA, stacked experts, fused AdamW):
  - tokens/s at least the best compiled side's (default, reduce-overhead,
    max-autotune-no-cudagraphs), for every family;
  - MFU at least 45 % for the dense deep (6x8) and wide (1x48) models;
  - routing + dispatch + combine under 10 % of the MoE layers' time;
  - WideLab's step as a CUDA graph at least 1.3x its ordinary step;
  - peak memory no more than eager PyTorch's.

MFU is model FLOPs per second (WideLab's analytic count, `widelab-cli params`)
over the dense bf16 peak measured in the same process (the best 8192^2 matmul);
the PyTorch sides are given the same FLOPs and peak.
"""

import argparse
import glob
import json
import math
import os
import sys

# run.sh's sides and their column names.
SIDE_NAMES = {"widelab": "WideLab", "graph": "WideLab as a graph", "eager": "eager", "compile": "compile",
              "compile-ro": "compile reduce-overhead", "compile-mat": "compile max-autotune",
              "hand": "hand-written eager", "widelab-ops": "WideLab, routing by operators"}
COMPILED = ("compile", "compile-ro", "compile-mat")
MFU_TARGET = 0.45
ROUTING_TARGET = 0.10
GRAPH_TARGET = 1.3
MFU_FAMILIES = ("deep-6x8", "wide-1x48")
FAMILY_ORDER = ["deep-6x8", "wide-1x48", "widenet", "vit-moe", "multipath"]  # run.sh's order


# ---------------------------------------------------------------- collect
def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def failed_tests(ctest_log):
    """Names after ctest's "The following tests FAILED:" line."""
    names, listing = [], False
    for line in read_text(ctest_log).splitlines():
        if "The following tests FAILED" in line:
            listing = True
        elif listing and " - " in line:
            names.append(line.split(" - ", 1)[1].strip())
        elif listing and line.strip() and "Errors while running" in line:
            break
    return names


def training_record(work, status_path):
    status = read_json(status_path, {})
    preset = status.get("preset", os.path.basename(status_path).split(".")[0])
    train, evals = [], []
    metrics = os.path.join(work, "train", preset, "metrics.jsonl")
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill
                (train if row.get("type") == "train" else evals if row.get("type") == "eval" else []).append(row)
    record = {"preset": preset, "status": status.get("status", "unknown"), "limit_s": status.get("limit_s"),
              "steps_logged": len(train), "estimated_memory_bytes": status.get("estimated_memory_bytes"),
              "cuda_graph": bool(status.get("cuda_graph", False))}
    if train:
        first, last = train[0], train[-1]
        record["first"] = {"step": first.get("step"), "loss": first.get("loss")}
        record["last"] = {"step": last.get("step"), "loss": last.get("loss"),
                          "tokens_per_second": last.get("tokens_per_second"),
                          "memory_bytes": last.get("memory_bytes"),
                          "memory_peak_bytes": last.get("memory_peak_bytes"),
                          "memory_kind": last.get("memory_kind")}
    if evals:
        record["last_eval"] = {k: evals[-1].get(k) for k in ("step", "split", "loss", "accuracy")}
    return record


def memory_against_estimate(record):
    """The run's measured peak (the CUDA allocator's, on a GPU) against the
    configuration panel's estimate for it (`widelab-cli params --json`)."""
    last, estimate = record.get("last") or {}, record.get("estimated_memory_bytes")
    peak = last.get("memory_peak_bytes")
    if not peak or not estimate:
        return "–"
    gib = 1024 ** 3
    return f"{peak / gib:.2f} / {estimate / gib:.2f} GiB ({peak / estimate:.2f}x, {last.get('memory_kind', '?')})"


def collect(work):
    stages = [read_json(p) for p in sorted(glob.glob(os.path.join(work, "stages", "*.json")))]
    order = {name: i for i, name in enumerate(("setup", "build", "test", "train", "bench"))}
    stages = sorted((s for s in stages if s), key=lambda s: order.get(s["stage"], 99))

    families = {}
    for path in sorted(glob.glob(os.path.join(work, "bench", "*.status.json"))):
        family, side = os.path.basename(path)[: -len(".status.json")].rsplit(".", 1)
        status = read_json(path, {})
        entry = families.setdefault(family, {"family": family, "config": status.get("config"), "sides": {}})
        entry["config"] = entry["config"] or status.get("config")
        result = read_json(os.path.join(work, "bench", f"{family}.{side}.json"))
        entry["sides"][side] = {"status": status.get("status", "unknown"), "limit_s": status.get("limit_s"),
                                "result": result}

    test_stage = next((s for s in stages if s["stage"] == "test"), None)
    return {
        "meta": dict(read_json(os.path.join(work, "meta.json"), {}),
                     environment=read_text(os.path.join(work, "torch.txt")),
                     packages=read_text(os.path.join(work, "packages.txt")).splitlines()),
        "stages": stages,
        "tests": None if test_stage is None else {
            "status": test_stage["status"], "summary": test_stage["note"],
            "failed": failed_tests(os.path.join(work, "logs", "ctest.log"))},
        "bench": sorted(families.values(), key=lambda e: FAMILY_ORDER.index(e["family"])
                        if e["family"] in FAMILY_ORDER else len(FAMILY_ORDER)),
        "train": [training_record(work, p) for p in sorted(glob.glob(os.path.join(work, "train", "*.status.json")))],
    }


# ---------------------------------------------------------------- figures
def side_result(entry, side):
    return (entry["sides"].get(side) or {}).get("result")


def side_status(entry, side):
    return (entry["sides"].get(side) or {}).get("status", "not run")


def mfu(entry, side):
    """Model FLOP/s over the measured peak; the FLOPs and peak are WideLab's."""
    ours, result = side_result(entry, "widelab"), side_result(entry, side)
    if not ours or not result or not ours.get("peak_flops"):
        return None
    return ours["flops_per_step"] / result["step_seconds_median"] / ours["peak_flops"]


def fmt_tokens(result):
    return f"{result['tokens_per_second']:,.0f}" if result else "–"


def fmt_percent(value):
    return "–" if value is None else f"{100 * value:.1f} %"


def fmt_gib(result):
    return "–" if not result or result.get("peak_allocated_bytes") is None else \
        f"{result['peak_allocated_bytes'] / 2**30:.2f}"


def fmt_estimate(result):
    """The configuration panel's estimate for WideLab's steps, in GiB, and the measured peak over it."""
    if not result or not result.get("memory_estimate_bytes") or not result.get("peak_allocated_bytes"):
        return "–"
    estimate = result["memory_estimate_bytes"]
    if not str(result.get("device", "")).startswith("cuda"):
        return f"{estimate / 2**30:.2f}"  # the CPU's figure is the process's resident set: no ratio
    return f"{estimate / 2**30:.2f} ({result['peak_allocated_bytes'] / estimate:.2f}x)"


def missing(entry, *sides):
    """Why a figure is absent: the first side without a result, and its status."""
    for side in sides:
        if not side_result(entry, side):
            return f"no data ({side}: {side_status(entry, side)})"
    return None


def best_compiled(entry):
    """The fastest compiled side that has a result, or None."""
    measured = [side for side in COMPILED if side_result(entry, side)]
    return max(measured, key=lambda side: side_result(entry, side)["tokens_per_second"], default=None)


# Each target: a verdict text, "met (...)" or "missed by ... (...)", or why there is none.
def target_throughput(entry):
    best = best_compiled(entry)
    why = missing(entry, "widelab", best or "compile")
    if why:
        return why
    ratio = side_result(entry, "widelab")["tokens_per_second"] / side_result(entry, best)["tokens_per_second"]
    against = f"{ratio:.2f}x {SIDE_NAMES[best]}"
    return f"met ({against})" if ratio >= 1 else f"missed by {100 * (1 - ratio):.0f} % ({against})"


def target_graph(entry):
    why = missing(entry, "widelab", "graph")
    if why:
        return why
    ratio = side_result(entry, "graph")["tokens_per_second"] / side_result(entry, "widelab")["tokens_per_second"]
    return f"met ({ratio:.2f}x)" if ratio >= GRAPH_TARGET else f"missed ({ratio:.2f}x)"


def target_mfu(entry):
    if entry["family"] not in MFU_FAMILIES:
        return "(dense deep and wide only)"
    why = missing(entry, "widelab")
    if why:
        return why
    value = mfu(entry, "widelab")
    if value >= MFU_TARGET:
        return f"met ({100 * value:.1f} %)"
    return f"missed by {100 * (MFU_TARGET - value):.1f} points ({100 * value:.1f} %)"


def target_routing(entry):
    result = side_result(entry, "widelab")
    if not result:
        return missing(entry, "widelab")
    share = result.get("moe_routing_share")
    if share is None:
        return "(mixtures only)"
    # The synchronised pass decides; the profile's device time says how much of it is the host's.
    device = result.get("moe_routing_share_by_kernels")
    also = f"; {100 * device:.1f} % of the device's time" if device is not None else ""
    if share < ROUTING_TARGET:
        return f"met ({100 * share:.1f} %{also})"
    return f"missed by {100 * (share - ROUTING_TARGET):.1f} points ({100 * share:.1f} %{also})"


def target_memory(entry):
    why = missing(entry, "widelab", "eager")
    if why:
        return why
    ratio = side_result(entry, "widelab")["peak_allocated_bytes"] / side_result(entry, "eager")["peak_allocated_bytes"]
    return f"met ({ratio:.2f}x)" if ratio <= 1 else f"missed by {100 * (ratio - 1):.0f} % ({ratio:.2f}x)"


# ---------------------------------------------------------------- markdown
def table(header, rows, numeric=True):
    """A Markdown table; with `numeric`, every column but the first is right-aligned."""
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if numeric and i > 0 else "---" for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_operators(w):
    ops = (w or {}).get("operators_per_step") or {}
    return f"{ops['all']:,} ({ops['innermost']:,})" if ops.get("all") else "–"


def fmt_host_per_operator(w):
    ops = (w or {}).get("operators_per_step") or {}
    if not ops.get("all") or not w.get("queue_seconds_median"):
        return "–"
    return f"{1e6 * w['queue_seconds_median'] / ops['all']:.1f}"


def fmt_kernel_name(name, width=90):
    """A kernel's or operator's name for a Markdown cell: cut to `width`, no pipes."""
    name = name.replace("|", "/")
    return name if len(name) <= width else name[: width - 1] + "…"


def kernel_profile_section(bench, rows=12):
    """Where one more step spends the device's time (`--kernels`): WideLab's by operator, then
    WideLab's kernels beside those of the fastest PyTorch side that has a profile."""
    out = []
    for e in bench:
        ours = (side_result(e, "widelab") or {}).get("kernel_profile")
        if not ours:
            continue
        out.append(f"\n#### {e['family']}\n")
        if ours.get("unavailable"):
            out.append(f"WideLab's profile: {ours['unavailable']}")
            continue
        total = ours["seconds"]
        span = f" of {1e3 * ours['span_seconds']:.2f} ms" if ours.get("span_seconds") else ""
        out.append(f"WideLab, {1e3 * total:.2f} ms of device time in one step{span}, by the operator that launched it:\n"
                   if ours.get("time") == "device" else
                   f"WideLab, {1e3 * total:.2f} ms of its operators' self time on the host in one step (the "
                   "profiler's own cost included), by operator:\n")
        out.append(table(["operator", "calls", "ms", "share"],
                         [[fmt_kernel_name(o["name"]), o["calls"], f"{1e3 * o['seconds']:.3f}",
                           f"{100 * o['seconds'] / total:.1f} %" if total else "–"]
                          for o in ours["by_operator"][:rows]]))
        if ours.get("by_phase"):
            out.append("\nThe same by the phase whose scope was open when the host reached the operator "
                       "(forward phases; backward whole):\n")
            out.append(table(["phase", "calls", "ms", "share"],
                             [[p["name"], p["calls"], f"{1e3 * p['seconds']:.3f}",
                               f"{100 * p['seconds'] / total:.1f} %" if total else "–"] for p in ours["by_phase"]]))
        profiled = [side for side in COMPILED + ("eager",)
                    if ((side_result(e, side) or {}).get("kernel_profile") or {}).get("by_kernel")]
        other = max(profiled, key=lambda side: side_result(e, side)["tokens_per_second"], default=None)
        theirs = side_result(e, other)["kernel_profile"] if other else {"by_kernel": [], "seconds": 0.0}
        if not ours["by_kernel"] and not theirs["by_kernel"]:
            continue  # operators on the host: no kernels to set side by side
        header = ["WideLab kernel", "calls", "ms"]
        if other:
            their_span = f" of {1e3 * theirs['span_seconds']:.2f}" if theirs.get("span_seconds") else ""
            header += [f"{other} kernel ({1e3 * theirs['seconds']:.2f} ms{their_span})", "calls", "ms"]
        lines = []
        for i in range(min(rows, max(len(ours["by_kernel"]), len(theirs["by_kernel"])))):
            row = []
            for profile in (ours, theirs) if other else (ours,):
                kernels = profile["by_kernel"]
                row += [fmt_kernel_name(kernels[i]["name"], 70), kernels[i]["calls"], f"{1e3 * kernels[i]['seconds']:.3f}"] \
                    if i < len(kernels) else ["", "", ""]
            lines.append(row)
        out.append("\nBy kernel" + (f", beside {other}, the fastest PyTorch side with a profile:\n" if other else ":\n"))
        out.append(table(header, lines, numeric=False))
    if out:
        out.insert(0, "\n### Where the device's time goes (one more step under the profiler)\n")
        out.append("\n`--kernels`: LibTorch's profiler (Kineto, CUPTI) over one more ordinary step; each kernel's and "
                   "copy's device time, summed by the ATen operator that launched it and by kernel name. Sums count "
                   "overlapping streams twice.")
    return out


def markdown(results):
    meta = results.get("meta", {})
    out = []
    first = next((side_result(e, "widelab") for e in results.get("bench", []) if side_result(e, "widelab")), None)
    smoke = " **(smoke run: tiny models on the CPU, not figures)**" if meta.get("smoke") else ""
    out.append(f"Run of {meta.get('started', '?')} on `{meta.get('device', '?')}`{smoke}, commit "
               f"`{str(meta.get('commit', '?'))[:10]}`, batch {meta.get('batch', '?')} x {meta.get('sequence', '?')} "
               f"tokens, bf16 autocast, training (AdamW).")
    if meta.get("environment"):
        out.append(f"\nEnvironment: `{meta['environment']}`")
    if first:
        nominal = first.get("nominal_peak_flops")
        out.append(f"\nMeasured dense {first.get('peak_dtype', '?')} peak: {first['peak_flops'] / 1e12:.1f} TFLOP/s "
                   f"(best {first.get('peak_size', '?')}^2 matmul in the WideLab process)"
                   + (f"; nominal {nominal / 1e12:.0f} TFLOP/s" if nominal else "") + ".")

    out.append("\n### Stages\n")
    out.append(table(["stage", "status", "seconds", "note"],
                     [[s["stage"], s["status"], f"{s['seconds']:.0f}", s.get("note", "")]
                      for s in results.get("stages", [])], numeric=False))
    tests = results.get("tests")
    if tests:
        out.append(f"\nTests: {tests.get('summary') or tests.get('status')}"
                   + (f"; failed: {', '.join(tests['failed'])}" if tests.get("failed") else ""))

    bench = results.get("bench", [])
    if bench:
        sides = [side for side in SIDE_NAMES if any(e["sides"].get(side) for e in bench)]
        out.append("\n### Throughput (tok/s) and MFU\n")
        out.append(table(["family"] + [SIDE_NAMES[side] for side in sides],
                         [[e["family"]] + [f"{fmt_tokens(side_result(e, side))} ({fmt_percent(mfu(e, side))})"
                                           if side_result(e, side) else side_status(e, side) for side in sides]
                          for e in bench]))
        out.append("\nEach cell: tokens/s (MFU). eager and compile: PyTorch as a user writes it today "
                   "(bench/widelab_torch.py: F.scaled_dot_product_attention, the experts stacked and grouped, "
                   "fused AdamW); hand-written eager: the earlier baseline (attention by hand, experts in a loop).")
        products = [f"{e['family']}: WideLab {side_result(e, 'widelab').get('expert_products') or '?'}"
                    + (f", eager {side_result(e, 'eager').get('experts')}" if side_result(e, "eager") else "")
                    for e in bench if (side_result(e, "widelab") or {}).get("expert_products")]
        if products:
            out.append("\nExpert products: " + "; ".join(products) + ".")
        compiled = [side for side in COMPILED if side in sides]
        out.append("\n### Memory, routing and compile time\n")
        shares = ["widelab"] + (["widelab-ops"] if "widelab-ops" in sides else [])
        rows = []
        for e in bench:
            w, g = side_result(e, "widelab"), side_result(e, "eager")
            share = [(side_result(e, side) or {}).get("moe_routing_share") for side in shares] \
                + [(w or {}).get("moe_routing_share_by_kernels")]
            rows.append([e["family"], fmt_gib(w), fmt_estimate(w), fmt_gib(g)]
                        + [fmt_gib(side_result(e, side)) for side in compiled]
                        + ["–" if s is None else f"{100 * s:.1f} %" for s in share]
                        + [f"{sum(side_result(e, side)['warmup_seconds']):.0f}" if side_result(e, side)
                           else side_status(e, side) for side in compiled])
        out.append(table(["family", "WideLab GiB", "estimate GiB (peak / it)", "eager GiB"]
                         + [f"{SIDE_NAMES[side]} GiB" for side in compiled] + ["routing share"]
                         + (["routing share by operators"] if len(shares) > 1 else [])
                         + ["routing share of device time"]
                         + [f"{SIDE_NAMES[side]} warm-up s" for side in compiled], rows))
        out.append("\nGiB: peak allocated by the CUDA caching allocator (peak resident set on the CPU); "
                   "estimate: the configuration panel's figure for WideLab's steps (core/train/MemoryEstimate.h), "
                   "and WideLab's peak over it. Routing share: routing + dispatch + combine over the MoE layers' forward time, from a "
                   "second, synchronised pass; of device time: the same share of the kernels each phase launched in the profiled "
                   "step (`--kernels`), without the host's launches and the scopes' waits.")

        queued = [(e["family"], side_result(e, "widelab")) for e in bench
                  if (side_result(e, "widelab") or {}).get("queue_seconds_median")]
        if queued:
            out.append("\n### Does the GPU wait for the host?\n")
            out.append(table(["family", "step ms", "host queues the step in ms", "share", "operators (innermost)",
                              "host µs per operator"],
                             [[family, f"{1e3 * w['step_seconds_median']:.1f}", f"{1e3 * w['queue_seconds_median']:.1f}",
                               f"{100 * w['queue_seconds_median'] / w['step_seconds_median']:.0f} %",
                               fmt_operators(w), fmt_host_per_operator(w)]
                              for family, w in queued]))
            out.append("\nThe host's time from the start of a step until it has queued the forward, backward and "
                       "optimizer work (before the loss is read back). Near 100 % of the step, the GPU waits on "
                       "kernel launches (fewer, fused kernels or CUDA graphs help); well under, the GPU sets the pace. "
                       "Operators: the ATen operators one step dispatches, all and innermost (those calling no other; "
                       "each that computes is a kernel launch), counted in a step of their own; host µs per operator "
                       "is the queue time over all of them.")

        graphed = [(e, side_result(e, "widelab"), side_result(e, "graph")) for e in bench
                   if e["sides"].get("graph")]
        if graphed:
            out.append("\n### WideLab's step replayed as a CUDA graph\n")
            out.append(table(["family", "WideLab tok/s", "as a graph tok/s", "graph / WideLab", "graph MFU"],
                             [[e["family"], fmt_tokens(w), fmt_tokens(g) if g else side_status(e, "graph"),
                               f"{g['tokens_per_second'] / w['tokens_per_second']:.2f}x" if w and g else "–",
                               fmt_percent(mfu(e, "graph"))] for e, w, g in graphed]))
            out.append("\n`widelab-cli bench --cuda-graph`: one training step captured after the warm-up and "
                       "replayed, so that no kernel waits on the host's launches (timing only: AdamW's step count "
                       "stays the captured one's).")

        out.extend(kernel_profile_section(bench))

        out.append("\n### Targets\n")
        out.append(table(["family", "tok/s >= best compiled", "MFU >= 45 % (deep, wide)", "routing < 10 % of MoE",
                          "graph >= 1.3x WideLab", "memory <= eager"],
                         [[e["family"], target_throughput(e), target_mfu(e), target_routing(e), target_graph(e),
                           target_memory(e)] for e in bench], numeric=False))

    train = results.get("train", [])
    if train:
        out.append("\n### Training the paper-scale presets\n")
        rows = []
        for t in train:
            first, last = t.get("first"), t.get("last")
            fell = "–"
            if first and last and last["loss"] is not None and first["loss"] is not None:
                fell = "yes" if last["loss"] < first["loss"] else "no"
            ev = t.get("last_eval")
            rows.append([t["preset"] + (" (CUDA graphs)" if t.get("cuda_graph") else ""), t["status"],
                         last["step"] if last else "–",
                         f"{first['loss']:.3f} (step {first['step']})" if first else "–",
                         f"{last['loss']:.3f} (step {last['step']})" if last else "–", fell,
                         f"{ev['loss']:.3f} / {100 * ev['accuracy']:.1f} %" if ev and ev.get("loss") is not None
                         and ev.get("accuracy") is not None else "–",
                         f"{last['tokens_per_second']:,.0f}" if last and last.get("tokens_per_second") else "–",
                         memory_against_estimate(t)])
        out.append(table(["preset", "status", "last step", "first loss", "last loss", "fell", "last eval loss / acc",
                          "tok/s (last)", "peak memory / panel's estimate"], rows))
        out.append("\nTraining runs beside the test build and ctest when a call runs the tests (the stage's note says "
                   "whether it did), so its tokens/s are not benchmark figures; "
                   "a preset that ran out of its time share was stopped with SIGINT (checkpoint saved).")
    return "\n".join(out) + "\n"


def main(argv):
    if argv and argv[0] not in ("collect", "markdown"):
        argv = ["markdown"] + argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("collect", help="records of a run.sh work folder -> results.json")
    c.add_argument("work")
    c.add_argument("--out", required=True)
    m = commands.add_parser("markdown", help="results.json -> Markdown tables")
    m.add_argument("results")
    args = parser.parse_args(argv)
    if args.command == "collect":
        results = collect(args.work)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, args.out)
        return 0
    with open(args.results) as f:
        sys.stdout.write(markdown(json.load(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
