#!/usr/bin/env python3
"""TensorBoard's own reader against WideLab's event files (docs/tensorboard.md).

Trains two tiny runs with the real widelab-cli (a mixture of experts, and
multi-path with learnable weights), the first with --tensorboard, exports both
with export-tb, and reads the events back with the `tensorboard` package from
PyPI: every scalar at the step and with the value that metrics.jsonl holds (read
here with json), the LayerNorm, expert-load, weight and gradient histograms, and the probes'
attention maps decoded as PNG to the size docs/tensorboard.md gives.

usage: tensorboard_roundtrip.py WIDELAB_CLI
Exit status 77 (CTest's skip) when this Python has no tensorboard package.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    from tensorboard.backend.event_processing import event_accumulator as ea
except ImportError as error:
    print(f"SKIP: this Python ({sys.executable}) cannot import tensorboard ({error}); "
          "install it (.ci/run shows how) and set WIDELAB_TENSORBOARD_PYTHON")
    sys.exit(77)

CLI = sys.argv[1]
TASK = {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 128, "validation_size": 32}
TRAIN = {"steps": 10, "batch_size": 8, "log_every": 5, "eval_every": 5, "checkpoint_every": 10, "threads": 1}
BASE = {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 3, "head_dim": 8, "ffn_dim": 64, "num_classes": 10}
MOE = dict(BASE, experts=4, top_k=2, capacity_factor=1.2, share_attention=True, share_ffn=True,
           share_layernorm=False)
PATHS = dict(BASE, paths=3, path_norm=True, learnable_path_weights=True, path_extra_features=True)

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def f32(x):
    """A number as TensorBoard's simple_value holds it (a float)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cli(*args, expect=0):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    if done.returncode != expect:
        sys.exit(f"widelab-cli {' '.join(args)}: exit {done.returncode}, expected {expect}\n"
                 f"{done.stdout}\n{done.stderr}")
    return done


def metrics(run):
    with open(os.path.join(run, "metrics.jsonl"), encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def accumulator(folder):
    sizes = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.COMPRESSED_HISTOGRAMS: 0, ea.TENSORS: 0}
    acc = ea.EventAccumulator(folder, size_guidance=sizes)
    acc.Reload()
    return acc


def expected_scalars(lines):
    """{tag: [(step, value)]} as docs/tensorboard.md names them, from the json lines."""
    out = {}

    def put(tag, step, value):
        out.setdefault(tag, []).append((step, float("nan") if value is None else float(value)))

    for line in lines:
        step = line["step"]
        if line["type"] == "train":
            for name in ("loss", "accuracy", "balance_loss", "learning_rate", "gradient_norm", "tokens_per_second",
                         "task_loss"):
                put("train/" + name, step, line[name])
            for name in ("wall_seconds", "step_seconds", "data_seconds", "measurement_seconds"):
                put("time/" + name, step, line[name])
            for name in ("bytes", "reserved_bytes", "peak_bytes", "peak_reserved_bytes"):
                put(f"memory/{line['memory_kind']}/{name}", step, line["memory_" + name])
            for r in line["routing"]:
                block = f"block_{r['block'] + 1}"
                for name in ("router_entropy", "unused_experts", "max_violation", "effective_experts", "z_loss",
                             "dead_fraction", "consistency"):
                    if name in r:
                        put(f"routing/{block}/{name}", step, r[name])
                for k, dropped in enumerate(r["dropped_percent_per_choice"]):
                    put(f"routing/{block}/dropped_percent/choice_{k + 1}", step, dropped)
                for e, load in enumerate(r["load_vs_fair"]):
                    put(f"experts/{block}/load_vs_fair/expert_{e + 1}", step, load)
            if line["layernorm"]["ffn_gamma"]:
                for where, key in (("ffn", "divergence"), ("attention", "attention_divergence")):
                    for name, value in line[key].items():
                        put(f"divergence/{where}/{name}", step, value)
            for p in line["paths"]:
                prefix = f"paths/block_{p['block'] + 1}/{p['sublayer']}/"
                for i, alpha in enumerate(p["alpha"]):
                    put(prefix + (f"alpha/path_{i + 1}" if i < p["paths"] else f"alpha/extra_{i - p['paths'] + 1}"),
                        step, alpha)
                put(prefix + "beta", step, p["beta"])
                put(prefix + "diversity", step, p["diversity"])
        elif line["type"] == "eval":
            split = line["split"]
            put(split + "/loss", step, line["loss"])
            put(split + "/accuracy", step, line["accuracy"])
            if line.get("perplexity", 0) > 0:
                put(split + "/perplexity", step, line["perplexity"])
            put(split + "/examples", step, line["examples"])
    return out


def same_value(got, want):
    return (math.isnan(got) and math.isnan(want)) or got == f32(want)


def check_scalars(acc, lines, where):
    want = expected_scalars(lines)
    tags = set(acc.Tags()["scalars"])
    check(tags == set(want), f"{where}: scalar tags differ: missing {sorted(set(want) - tags)[:8]}, "
                             f"extra {sorted(tags - set(want))[:8]}")
    for tag, points in want.items():
        if tag not in tags:
            continue
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        check([s for s, _ in got] == [s for s, _ in points], f"{where}: {tag}: steps {[s for s, _ in got]}, "
                                                            f"expected {[s for s, _ in points]}")
        for (step, value), (_, expected) in zip(got, points):
            check(same_value(value, expected), f"{where}: {tag} at step {step}: {value}, expected {f32(expected)}")
    return want


def histograms_at(acc, tags, tag, step, where):
    """The histogram events of `tag` at `step`, checked to be one."""
    events = [e for e in acc.Histograms(tag) if e.step == step] if tag in tags else []
    check(len(events) == 1, f"{where}: {tag}: {len(events)} histograms at step {step}")
    return events


def check_histograms(acc, lines, where):
    tags = set(acc.Tags()["histograms"])
    wanted = set()
    for line in (l for l in lines if l["type"] == "train"):
        step = line["step"]
        for name, rows in line["layernorm"].items():
            for b, row in enumerate(rows):
                tag = f"layernorm/block_{b + 1}/{name}"
                wanted.add(tag)
                values = [f32(v) for v in row]
                for e in histograms_at(acc, tags, tag, step, where):
                    h = e.histogram_value
                    check(h.num == len(values) and h.min == min(values) and h.max == max(values)
                          and math.isclose(h.sum, sum(values), rel_tol=1e-12, abs_tol=1e-12)
                          and sum(h.bucket) == len(values),
                          f"{where}: {tag} at step {step}: {h} against {len(values)} values")
        for r in line["routing"]:
            tag = f"experts/block_{r['block'] + 1}/tokens_per_expert"
            wanted.add(tag)
            for e in histograms_at(acc, tags, tag, step, where):
                h = e.histogram_value
                tokens = r["tokens_per_expert"]
                # One bucket per expert: expert e's tokens between e - 0.5 and e + 0.5.
                check(list(h.bucket) == [float(t) for t in tokens], f"{where}: {tag}: buckets {h.bucket}, {tokens}")
                check(list(h.bucket_limit) == [e + 1.5 for e in range(len(tokens))], f"{where}: {tag}: limits")
                check(h.num == sum(tokens), f"{where}: {tag}: num {h.num}, {sum(tokens)} tokens")
        for kind in ("weights", "gradients"):
            for g in line.get(kind, []):
                tag = f"{kind}/{g['group']}"
                wanted.add(tag)
                for e in histograms_at(acc, tags, tag, step, where):
                    h = e.histogram_value
                    # The run's own buckets; equal values (low == high) are one bucket.
                    counts = [float(c) for c in g["counts"]] if g["high"] > g["low"] else [float(sum(g["counts"]))]
                    check(list(h.bucket) == counts and h.num == sum(counts), f"{where}: {tag}: buckets {h.bucket}")
                    check(h.min == g["low"] and h.max == g["high"] and h.bucket_limit[-1] == g["high"],
                          f"{where}: {tag}: from {h.min} to {h.max}, the line says {g['low']} to {g['high']}")
    check(tags == wanted, f"{where}: histogram tags {sorted(tags)}, expected {sorted(wanted)}")
    check(any(t.startswith("gradients/") for t in wanted), f"{where}: no gradient histograms")
    return wanted


def png_size(data):
    """Width, height and channels of a PNG, after inflating its pixels (stdlib only)."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "an image is not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        check(zlib.crc32(kind + body) == struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0],
              f"PNG chunk {kind} fails its CRC")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour = header[:4]
    channels = {0: 1, 2: 3}[colour]
    check(depth == 8, "an image is not 8 bits a sample")
    check(len(zlib.decompress(idat)) == height * (1 + width * channels), "the PNG's pixels are not its size")
    return width, height, channels


def probe_name(text):
    """docs/tensorboard.md: the text when it is plain and at most 40 characters, else
    its first 40 characters made plain and ~ with the FNV-1a hash of the whole."""
    raw = text.encode("utf-8")
    plain = "".join(chr(b) if 0x20 <= b < 0x7F and b != ord("/") else "_" for b in raw[:40])
    if plain.encode() == raw and plain:
        return plain
    h = 2166136261
    for b in raw:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return f"{plain}~{h:08x}"


def attention_size(tokens, heads):
    """docs/tensorboard.md: the heads tiled, cells of ceil(128 / n) pixels, 2 pixels apart."""
    pool = -(-tokens // 256)
    cells = -(-tokens // pool)
    side = cells * -(-128 // cells)
    columns = 1
    while columns * columns < heads:
        columns += 1
    rows = -(-heads // columns)
    return columns * side + (columns - 1) * 2, rows * side + (rows - 1) * 2


def check_images(acc, lines, where):
    tags = set(acc.Tags()["images"])
    wanted = set()
    for line in (l for l in lines if l["type"] == "probe"):
        if "image" in line:  # image models: the probe image as the model saw it
            tag = f"probe/{probe_name(line['text'])}/input"
            wanted.add(tag)
            picture = line["image"]
            size = (picture["width"], picture["height"], picture["channels"])
            for e in (e for e in acc.Images(tag) if e.step == line["step"]) if tag in tags else []:
                check(png_size(e.encoded_image_string) == size, f"{where}: {tag}: not {size}")
        for layer, heads in enumerate(line["attention"]):
            tag = f"probe/{probe_name(line['text'])}/attention/layer_{layer + 1}"
            wanted.add(tag)
            events = [e for e in acc.Images(tag) if e.step == line["step"]] if tag in tags else []
            check(len(events) == 1, f"{where}: {tag}: {len(events)} images at step {line['step']}")
            width, height = attention_size(len(line["tokens"]), len(heads))
            for e in events:
                check((e.width, e.height) == (width, height),
                      f"{where}: {tag}: event says {e.width}x{e.height}, expected {width}x{height}")
                check(png_size(e.encoded_image_string) == (width, height, 3),
                      f"{where}: {tag}: PNG of {png_size(e.encoded_image_string)}, expected {width}x{height}x3")
    check(wanted and tags == wanted, f"{where}: image tags {sorted(tags)}, expected {sorted(wanted)}")


def train_and_export(root, name, model, live=False):
    config = os.path.join(root, name + ".json")
    with open(config, "w", encoding="utf-8") as file:
        json.dump({"model": model, "task": TASK, "train": TRAIN}, file)
    run = os.path.join(root, "runs", name)
    extra = ["--tensorboard", os.path.join(root, "live")] if live else []
    cli("train", config, "--out", run, *extra)
    done = cli("export-tb", run, "--out", os.path.join(root, "tb"))
    check("wrote " + os.path.join(root, "tb", name, "events.out.tfevents.") in done.stdout, done.stdout)
    return run, metrics(run)


def main():
    with tempfile.TemporaryDirectory() as root:
        moe_run, moe = train_and_export(root, "moe", MOE, live=True)
        paths_run, paths = train_and_export(root, "paths", PATHS)

        acc = accumulator(os.path.join(root, "tb", "moe"))
        scalars = check_scalars(acc, moe, "moe")
        for tag in ("train/loss", "train/accuracy", "validation/loss", "train/learning_rate", "train/gradient_norm",
                    "train/tokens_per_second", "train/balance_loss", "routing/block_1/max_violation",
                    "routing/block_2/consistency", "experts/block_1/load_vs_fair/expert_4",
                    "divergence/ffn/gamma_all_pairs"):
            check(tag in scalars, f"moe: no {tag} in metrics.jsonl's lines")
        check_histograms(acc, moe, "moe")
        check_images(acc, moe, "moe")

        # Written while training: the same tags, steps and values.
        live = accumulator(os.path.join(root, "live", "moe"))
        check_scalars(live, moe, "moe, written while training")
        check_images(live, moe, "moe, written while training")

        acc = accumulator(os.path.join(root, "tb", "paths"))
        scalars = check_scalars(acc, paths, "paths")
        check("paths/block_2/ffn/alpha/extra_3" in scalars, "paths: no extra-feature weight")
        check_histograms(acc, paths, "paths")
        check_images(acc, paths, "paths")

        # Several runs, one LOGDIR: TensorBoard sees each as a run of its own.
        multiplexer_runs = sorted(os.listdir(os.path.join(root, "tb")))
        check(multiplexer_runs == ["moe", "paths"], f"LOGDIR holds {multiplexer_runs}")
        # Exporting again needs --replace, which leaves one events file.
        again = cli("export-tb", moe_run, "--out", os.path.join(root, "tb"), expect=1)
        check("--replace" in again.stderr, again.stderr)
        cli("export-tb", moe_run, "--out", os.path.join(root, "tb"), "--replace")
        check(len(os.listdir(os.path.join(root, "tb", "moe"))) == 1, "--replace left earlier events")

    if failures:
        print("\n".join(failures[:40]))
        print(f"{len(failures)} check(s) failed")
        return 1
    print("TensorBoard read back every scalar, histogram and image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
