#!/usr/bin/env python3
"""The widelab Python package (python/) against widelab-cli, family by family.

For every case: a preset (or document) shrunk to a tiny model is trained for 2
steps with `widelab-cli train`, exported with `widelab-cli export`, inspected with
`widelab-cli inspect --json`, and loaded with `widelab.load`; the package's
prediction (softmax of its logits), every attention map and every expert choice must
equal the CLI's, and its tokens the ones the CLI shows. The run is exported a second
time as safetensors: its tensors must equal the pickle's, its metadata's config the
run document, and the package must load it alone (no run_dir, no model.json: the
tokenizer, image and labels files beside it) and compute the same.

Usage:
    python3 tests/python/test_package.py --cli build/app/cli/widelab-cli [--only SUBSTRING] [--keep DIR]

PYTHONPATH must reach python/ (ctest sets it), or the package be installed.

Tolerance: 1e-5, absolute, on probabilities (prediction, logit lens, attention
weights). Both sides compute in float32 with the same operations; they differ only
in the order of additions (the package computes sparse patterns over the whole
[T, T] grid where WideLab gathers blocks, and sums experts' outputs expert by expert),
which moves a probability by a few float32 ulps (about 1e-7 for these sizes). A
wrong rule (a mask, a scale, a gate, a dropped token) moves them by 1e-3 or more.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import zlib

import torch

import widelab
from widelab.loading import read_state
from widelab.safetensors_reader import read_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESETS = os.path.join(ROOT, "resources", "presets")
TOLERANCE = 1e-5

LISTOPS_TEXT = "[MAX 2 9 [MIN 4 7 ] 0 [SM 3 1 ] 8 [MED 5 6 2 ] [MAX 1 [MIN 3 4 ] ] ]"  # 26 tokens
# Longer than the runs' sequence length (40): inspect cuts it, so must the tokenizer.
LISTOPS_LONG = " ".join([LISTOPS_TEXT] * 2)

# Our own text for the file tasks (language model and classification).
CORPUS_LINES = [
    "The wide model reads every token at once and the deep model reads them in turns.",
    "A router sends each token to two experts; an expert that is full drops the rest.",
    "Paths run side by side, each with its own weights, and a learned sum joins them.",
    "Shared attention saves parameters, while each block keeps its own layer norms.",
    "Images are cut into patches, and every patch becomes one token of the sequence.",
    "Don't worry: café, naïve and über are words too, and so are 42 and 7b!",
]

TINY_TRAIN = {"batch_size": 4, "eval_every": 2, "eval_batches": 1, "log_every": 1, "warmup_steps": 1,
              "checkpoint_every": 2, "threads": 1, "device": "cpu", "probes": []}
TINY_LISTOPS = {"kind": "listops", "train_size": 32, "validation_size": 8, "test_size": 8,
                "min_length": 8, "max_length": 40}
TINY_SHAPES = {"kind": "shapes", "train_size": 32, "validation_size": 8, "test_size": 8}


def shrink(preset, keep_depth=False, **model):
    """A preset's document with a tiny model: d_model 16, 4-wide heads, ffn 32, max_len 40."""
    with open(os.path.join(PRESETS, preset + ".json")) as f:
        doc = json.load(f)
    m = doc["model"]
    m.update(d_model=16, ffn_dim=32, head_dim=4)
    if not keep_depth:
        m["layers"] = min(m.get("layers", 6), 2)
        m["heads"] = min(m.get("heads", 8), 4)
    if m.get("input") == "image":
        m.update(image_size=16, patch_size=4, max_len=16)
    else:
        m["max_len"] = 40
    if m.get("embedding_dim"):
        m["embedding_dim"] = 8
    for key in ("routing_groups",):
        m.pop(key, None)
    m.update(model)
    doc["task"] = dict(TINY_SHAPES if m.get("input") == "image" else TINY_LISTOPS)
    doc["train"] = dict(TINY_TRAIN)
    return doc


def text_document(head, tokenizer, task_kind=None, **model):
    """A tiny model on one of the file tasks (written by the test)."""
    m = {"d_model": 16, "ffn_dim": 32, "heads": 2, "head_dim": 4, "layers": 2, "max_len": 32,
         "head": head, "vocab_size": 300 if tokenizer in ("byte", "bpe") else 120}
    if head == "classification":
        m["num_classes"] = 3
    m.update(model)
    kind = task_kind or ("language_model" if head == "language_model" else "classification")
    if kind == "pair_classification":
        m["segments"] = 2
    task = {"kind": kind,
            "tokenizer": tokenizer, "validation_fraction": 0.2, "test_fraction": 0.1}
    if tokenizer in ("character", "word"):
        task["vocab_limit"] = 100
    if tokenizer == "bpe":
        task["bpe_merges"] = 30
    return {"model": m, "task": task, "train": dict(TINY_TRAIN)}


def cases():
    """(name, document, probe) for every family; probe is text, or ("image", entry)."""
    c = []
    c.append(("dense 6x8", shrink("transformer-6x8", keep_depth=True), LISTOPS_TEXT))
    c.append(("dense 1x48, text cut to the sequence length", shrink("transformer-1x48", keep_depth=True),
              LISTOPS_LONG))
    for name in ("linear", "performer", "linformer", "local", "longformer", "bigbird", "sparse", "sinkhorn",
                 "synthesizer", "mixed"):
        extra = {"performer_features": 16}
        if name == "longformer":
            extra.update(longformer_window=6)
        if name == "bigbird":
            extra.update(bigbird_block_size=4, bigbird_random_blocks=2)
        if name == "mixed":
            extra.update(heads=8, bigbird_block_size=4, longformer_window=6, local_block_size=8)
        c.append(("attention " + name, shrink("attention-%s-6x8" % name, **extra), LISTOPS_TEXT))
    c.append(("attention longformer, CLS global", shrink("attention-longformer-6x8", longformer_window=5,
                                                          longformer_global_tokens=1), LISTOPS_TEXT))
    c.append(("attention sparse strided", shrink("attention-sparse-6x8", sparse_pattern="strided",
                                                 sparse_block_size=6), LISTOPS_TEXT))
    c.append(("attention sinkhorn, 3 iterations", shrink("attention-sinkhorn-6x8", sinkhorn_iterations=3,
                                                         sinkhorn_temperature=0.5, pooling="cls"), LISTOPS_TEXT))
    c.append(("attention synthesizer dense", shrink("attention-synthesizer-6x8", synthesizer_variant="dense"),
              LISTOPS_TEXT))
    c.append(("attention synthesizer random", shrink("attention-synthesizer-6x8", synthesizer_variant="random"),
              LISTOPS_TEXT))
    c.append(("MoE (vit-moe)", shrink("vit-moe"), LISTOPS_TEXT))
    c.append(("MoE, drops, batch priority, renormalised gates, routing groups",
              shrink("vit-moe", layers=3, experts=4, top_k=2, eval_capacity_factor=0.56, routing_priority="batch",
                     renormalize_gates=True, routing_groups=2, share_router=False), LISTOPS_TEXT))
    c.append(("MoE top-1, no dropping", shrink("vit-moe", top_k=1, eval_capacity_factor=0.0, activation="relu"),
              LISTOPS_TEXT))
    c.append(("WideNet", shrink("widenet", eval_capacity_factor=0.8), LISTOPS_TEXT))
    c.append(("ALBERT", shrink("albert"), LISTOPS_TEXT))
    c.append(("multi-path 6x2", shrink("multipath-6x2", activation="silu"), LISTOPS_TEXT))
    c.append(("multi-path 3x4, extra features, shared LayerNorms",
              shrink("multipath-3x4-features", share_layernorm=True, learnable_path_weights=False),
              LISTOPS_TEXT))
    c.append(("multi-path, mixed attention", shrink("multipath-6x2", attention="mixed",
                                                    attention_mix=["linear", "full"]), LISTOPS_TEXT))
    c.append(("ViT-MoE image", shrink("vit-moe-image", eval_capacity_factor=0.7), ("image", "png")))
    c.append(("ViT-MoE image, validation example", shrink("vit-moe-image"), ("image", "validation:1")))
    c.append(("WideNet ViT (mean pooling), grey", shrink("vit-widenet", channels=1), ("image", "png")))
    c.append(("language model, byte", text_document("language_model", "byte"), "A router sends tokens!"))
    c.append(("language model, bpe", text_document("language_model", "bpe"),
              "The wide router sends each token, café 42!"))
    c.append(("classification, bpe", text_document("classification", "bpe"), "Paths run side by side. Ünknown"))
    c.append(("language model, word, MoE (token-major)",
              text_document("language_model", "word", experts=4, top_k=2, eval_capacity_factor=0.6),
              "Don't worry: the zebra café drops 42 tokens, naïve über!"))
    for name in ("linear", "performer", "local", "longformer", "bigbird", "sparse", "synthesizer"):
        extra = {"attention": name, "performer_features": 16, "local_block_size": 5, "longformer_window": 5,
                 "bigbird_block_size": 4, "bigbird_random_blocks": 1, "sparse_block_size": 5, "sparse_summary": 2,
                 "synthesizer_variant": "dense"}
        c.append(("language model, byte, " + name, text_document("language_model", "byte", **extra),
                  "Paths run side by side."))
    c.append(("classification, character, mean pooling, pooler",
              text_document("classification", "character", pooling="mean", pooler=True),
              "Shared attention? Ünknown ✓"))
    # Text pairs: the second text is cut first on a tie, the longer first otherwise (28 + 11 bytes
    # and 2 separators are more than the 32 ids of the sequence, less the CLS).
    c.append(("pairs, byte, segments", text_document("classification", "byte", task_kind="pair_classification"),
              "A wide model reads at once. || Deep: turns!"))
    c.append(("pairs, word, mean pooling", text_document("classification", "word", task_kind="pair_classification",
                                                         pooling="mean"), "Paths run side by side || ünknown wide"))
    c.append(("classification, word, factorised embedding",
              text_document("classification", "word", embedding_dim=8), "A wide model reads, unseenword!"))
    return c


# ---------------------------------------------------------------- files the runs need


def write_corpus(folder):
    lines = [CORPUS_LINES[(i * 7) % len(CORPUS_LINES)] for i in range(120)]
    text_path = os.path.join(folder, "corpus.txt")
    with open(text_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    tsv_path = os.path.join(folder, "labelled.tsv")
    with open(tsv_path, "w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            f.write("%s\t%s\n" % (["wide", "deep", "both"][i % 3], line))
    pairs_path = os.path.join(folder, "pairs.tsv")
    with open(pairs_path, "w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            other = lines[(i + 1 + i % 2) % len(lines)]
            f.write("%s\t%s\t%s\n" % (["wide", "deep", "both"][i % 3], line, other))
    return text_path, tsv_path, pairs_path


def write_png(path, width, height, channels):
    """A deterministic test picture as an 8-bit PNG (RGB or grey), no filter."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            values = [(x * 37 + y * 11) % 256, (x * x + 3 * y) % 256, (200 - 5 * x + 7 * y) % 256]
            rows += bytes(values[:channels])

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2 if channels == 3 else 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows)))
                + chunk(b"IEND", b""))


# ---------------------------------------------------------------- one case


def run(cli, *arguments):
    result = subprocess.run([cli] + list(arguments), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise AssertionError("widelab-cli %s failed (%d): %s" % (" ".join(arguments), result.returncode,
                                                                 result.stderr.decode(errors="replace")[-2000:]))
    return result.stdout.decode()


def max_difference(a, b):
    return 0.0 if a.numel() == 0 else float((a - b).abs().max())


def check_case(cli, folder, name, document, probe, files):
    text_path, tsv_path, pairs_path, png_rgb, png_grey = files
    kind = document["task"].get("kind")
    if kind in ("language_model", "classification", "pair_classification"):
        document["task"]["path"] = {"language_model": text_path, "classification": tsv_path,
                                    "pair_classification": pairs_path}[kind]
    config = os.path.join(folder, "config.json")
    with open(config, "w") as f:
        json.dump(document, f)
    run_dir = os.path.join(folder, "run")
    run(cli, "train", config, "--out", run_dir, "--steps", "2", "--threads", "1")
    export = os.path.join(folder, "export", "model.pt")
    os.makedirs(os.path.dirname(export))
    run(cli, "export", run_dir, "--out", export)

    image = isinstance(probe, tuple)
    entry = None
    if image:
        entry = probe[1]
        if entry == "png":
            entry = png_grey if document["model"].get("channels") == 1 else png_rgb
        shown = json.loads(run(cli, "inspect", run_dir, "--image", entry, "--json"))
    else:
        shown = json.loads(run(cli, "inspect", run_dir, "--text", probe, "--json"))

    model, tokenizer = widelab.load(export, run_dir=run_dir)
    report = compare_with_cli(model, tokenizer, shown, probe, image, entry)

    # The same run as safetensors (the default format), its run document only in the
    # metadata: the package finds the tokenizer, image and labels files beside it.
    safetensors = os.path.join(folder, "export-st", "model.safetensors")
    os.makedirs(os.path.dirname(safetensors))
    run(cli, "export", run_dir, "--out", safetensors)
    for sidecar in ("tokenizer.json", "image.json", "labels.json"):
        there = os.path.exists(os.path.join(run_dir, sidecar))
        assert os.path.exists(os.path.join(folder, "export-st", "model." + sidecar)) == there, sidecar
    with open(os.path.join(folder, "export-st", "model.json")) as f:
        written = json.load(f)
    os.remove(os.path.join(folder, "export-st", "model.json"))
    tensors, metadata = read_safetensors(safetensors)
    # model.json adds each export's record of its own files to the run document.
    written.pop("export", None)
    document = {key: value for key, value in model.document.items() if key != "export"}
    assert json.loads(metadata["config"]) == written == document, "the metadata's config is not the run document"
    pickled = read_state(export)
    assert sorted(tensors) == sorted(pickled), "safetensors and pickle hold other names"
    for key, tensor in pickled.items():
        assert tensors[key].dtype == tensor.dtype and torch.equal(tensors[key], tensor), "%s differs" % key
    model, tokenizer = widelab.load(safetensors)
    again = compare_with_cli(model, tokenizer, shown, probe, image, entry)
    assert again["prediction"] == report["prediction"] and again["attention"] == report["attention"], \
        "the safetensors export computes otherwise than the pickle"
    return report


def compare_with_cli(model, tokenizer, shown, probe, image, entry):
    report = {}
    if image:
        if entry.startswith("validation:"):
            # The CLI generated the picture; the package takes its pixels from the inspect output.
            import base64
            im = shown["image"]
            raw = torch.tensor(list(base64.b64decode(im["pixels"])), dtype=torch.uint8)
            pixels = tokenizer.encode(raw.view(im["height"], im["width"], im["channels"]))
        else:
            pixels = tokenizer.encode(entry)
            seen = torch.tensor(list(__import__("base64").b64decode(shown["image"]["pixels"])), dtype=torch.uint8)
            assert torch.equal(tokenizer.pixels(entry).flatten(), seen), "the decoded, fitted picture differs"
        assert tokenizer.tokens() == shown["tokens"], (tokenizer.tokens(), shown["tokens"])
        with torch.no_grad():
            out = model(pixels, lens=True)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the long text's warning; check_facts checks it
            if model.config.segments > 0:
                ids = tokenizer.encode_pair(*probe.split(" || "))
            else:
                ids = tokenizer.encode(probe)
        tokens = (["<cls>"] if model.config.uses_cls_token else []) + tokenizer.tokens(ids)
        assert tokens == shown["tokens"], "tokens: package %s, CLI %s" % (tokens, shown["tokens"])
        if probe == LISTOPS_LONG:
            assert len(ids) == 40 and len(tokenizer.encode_list(probe, truncate=False)) == 52, "not cut at 40"
        with torch.no_grad():
            out = model(ids, lens=True)
        report["tokens"] = len(ids)

    language = model.config.head == "language_model"
    logits = out.logits[0, -1] if language else out.logits[0]
    prediction = torch.softmax(logits, -1)
    report["prediction"] = max_difference(prediction, torch.tensor(shown["prediction"]))
    # The logit lens: the head after every sublayer, as probabilities (only some columns for large outputs).
    columns = shown.get("logit_lens_columns")
    lens = 0.0
    assert len(out.lens) == len(shown["logit_lens"])
    for mine, theirs in zip(out.lens, shown["logit_lens"]):
        p = torch.softmax(mine[0, -1] if language else mine[0], -1)
        if columns:
            p = p[torch.tensor(columns)]
        lens = max(lens, max_difference(p, torch.tensor(theirs["distribution"])))
    report["lens"] = lens
    maps = torch.stack([a[0] for a in out.attention])
    theirs = torch.tensor(shown["attention"])
    assert maps.shape == theirs.shape, "attention shapes: package %s, CLI %s" % (list(maps.shape), list(theirs.shape))
    report["attention"] = max_difference(maps, theirs)
    experts = [e.tolist() for e in out.experts]
    report["experts"] = "equal" if experts == shown["experts"] else "DIFFER"
    report["dropped"] = sum(row.count(-1) for block in shown["experts"] for row in block)
    if experts != shown["experts"]:
        raise AssertionError("expert choices differ:\n package %s\n CLI     %s" % (experts, shown["experts"]))
    for key in ("prediction", "lens", "attention"):
        if not report[key] <= TOLERANCE:
            raise AssertionError("%s differs by %.3g (tolerance %g)" % (key, report[key], TOLERANCE))
    return report


# ---------------------------------------------------------------- checks without the CLI


def check_facts():
    """Facts docs/model.md states, with values worked out by hand."""
    # cap = ceil(K * C * S / E) in doubles with a 1e-9 guard: 2 * 0.56 * 25 / 4 = 7.000000000000001 -> 7.
    assert widelab.expert_capacity(25, 4, 2, 0.56) == 7
    assert widelab.expert_capacity(10, 2, 1, 1.2) == 6   # 1.2 * 10 / 2 = 6.000000000000001 -> 6
    assert widelab.expert_capacity(5, 4, 2, 1.25) == 4   # 3.125 -> 4
    assert widelab.expert_capacity(3, 8, 1, 0.1) == 1    # at least 1
    assert widelab.expert_capacity(3, 2, 2, 9.0) == 3    # at most S
    assert widelab.expert_capacity(7, 2, 2, 0.0) == 7    # C <= 0: never drops
    words = widelab.Tokenizer("word", ["don", "t"])
    assert widelab.tokenizer.split_words("don't!  café\tx2_y\u00a0z") == ["don", "'", "t", "!", "café", "x2", "_",
                                                                          "y\u00a0z"]
    assert words.encode("don't").tolist() == [2, 1, 3]
    assert widelab.Tokenizer("byte").encode("é").tolist() == [2 + 0xC3, 2 + 0xA9]
    assert widelab.tokenizer.split_fixed("[MAX 2\t9\n]") == ["[MAX", "2", "9", "]"]
    listops = widelab.Tokenizer("fixed", widelab.tokenizer.LISTOPS_TOKENS, max_length=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert listops.encode("[MAX 2 9 ] 7").tolist() == [3, 9, 16]  # [MAX is id 3, digit d is id 7 + d
    assert len(caught) == 1 and "cut to the run's sequence length 3" in str(caught[0].message)
    # Pairs: the longer text loses tokens first, the second on a tie; byte b is id 2 + b.
    pairs = widelab.Tokenizer("byte", max_length=8, separator=300)
    a, x = 2 + ord("a"), 2 + ord("x")
    assert pairs.encode_pair("abcdef", "xy").tolist() == [a, a + 1, a + 2, a + 3, 300, x, x + 1, 300]
    pairs.max_length = 7
    assert pairs.encode_pair("abc", "xyz").tolist() == [a, a + 1, a + 2, 300, x, x + 1, 300]
    assert pairs.encode_pair("", "xy").tolist() == [300, x, x + 1, 300]
    assert pairs.tokens([a, 300]) == ["a", "<sep>"]
    for bad in (lambda: widelab.Tokenizer("byte").encode_pair("a", "b"),
                lambda: widelab.Tokenizer("byte", separator=257)):
        try:
            bad()
            raise AssertionError("no error")
        except widelab.WideLabError as error:
            assert "separator" in str(error), str(error)


def check_batch_with_padding(cli_cases_folder):
    """A padded batch gives each sequence what it gets alone (dense model: no capacity)."""
    torch.manual_seed(0)
    config = widelab.ModelConfig(json.load(open(cli_cases_folder))["model"], "model.json")
    model = widelab.WideLabModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    a = torch.tensor([3, 4, 5, 6, 7])
    b = torch.tensor([8, 9, 10])
    batch = torch.stack([a, torch.cat([b, torch.zeros(2, dtype=torch.long)])])
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    together = model(batch, mask=mask).logits
    assert max_difference(together[0], model(a).logits[0]) < 1e-5
    assert max_difference(together[1], model(b).logits[0]) < 1e-5


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=os.environ.get("WIDELAB_CLI"), help="the widelab-cli executable")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--keep", default=None, help="keep the runs in this folder")
    parser.add_argument("--jobs", type=int, default=2, help="cases at a time (default 2)")
    args = parser.parse_args()
    if not args.cli or not os.path.exists(args.cli):
        sys.exit("test_package: give --cli PATH (or WIDELAB_CLI): the widelab-cli to compare with")
    torch.set_num_threads(1)
    print("widelab package %s, torch %s, Python %s" % (widelab.__version__, torch.__version__, sys.version.split()[0]))
    check_facts()
    print("facts: capacity, tokenizer splitting: ok")

    base = args.keep or tempfile.mkdtemp(prefix="widelab-python-")
    os.makedirs(base, exist_ok=True)
    text_path, tsv_path, pairs_path = write_corpus(base)
    png_rgb, png_grey = os.path.join(base, "picture.png"), os.path.join(base, "grey.png")
    write_png(png_rgb, 45, 38, 3)   # wider than tall and larger than 16: cropped, then shrunk
    write_png(png_grey, 11, 13, 1)  # smaller than 16: cropped, then enlarged
    files = (text_path, tsv_path, pairs_path, png_rgb, png_grey)
    selected = [(i, c) for i, c in enumerate(cases()) if args.only in c[0]]

    def one(item):
        index, (name, document, probe) = item
        folder = os.path.join(base, "case-%02d" % index)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        started = time.time()
        try:
            report = check_case(args.cli, folder, name, document, probe, files)
            if index == 0:
                check_batch_with_padding(os.path.join(folder, "export", "model.json"))
            return name, None, "ok    %-62s prediction %.1e  lens %.1e  attention %.1e  experts %s (%d dropped)  %.1f s" % (
                name, report["prediction"], report["lens"], report["attention"], report["experts"],
                report["dropped"], time.time() - started)
        except Exception as error:  # report every case, then fail
            return name, error, "FAIL  %s: %s" % (name, error)

    failures = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for name, error, line in pool.map(one, selected):
            print(line)
            sys.stdout.flush()
            if error is not None:
                failures.append(name)
    done = len(selected)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        sys.exit("%d of %d cases failed: %s" % (len(failures), done, ", ".join(failures)))
    print("all %d cases agree with widelab-cli" % done)


if __name__ == "__main__":
    main()
