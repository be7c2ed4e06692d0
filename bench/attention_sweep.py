#!/usr/bin/env python3
"""Train every attention mechanism briefly, on ListOps and on images, with widelab-cli.

    python3 bench/attention_sweep.py --cli build/app/cli/widelab-cli --out /tmp/sweep \
        [--steps 200] [--only linear,performer] [--tasks listops,images] [--markdown]

For each mechanism (and `mixed`) it trains the mechanism's ListOps preset
(attention-<name>-6x8) and the deep ViT preset on the generated shapes task
(vit-6x8) with `model.attention` set to the mechanism (windows and blocks
scaled to the picture, IMAGE_KEYS), for --steps steps, then
reads the run's metrics.jsonl: the training loss over the first and the last
tenth of the run, and the last validation accuracy. A mechanism "learns" when
its late loss is below its early loss and its validation accuracy is at least
1.5 times chance (1 / model.num_classes); the table says so per row, and the
exit status is 1 when a run fails or does not learn.

Only the standard library: this is a check of the CLI, run on any machine.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

MECHANISMS = ["full", "linear", "performer", "linformer", "local", "longformer",
              "bigbird", "sparse", "sinkhorn", "synthesizer", "mixed"]
PRESETS = pathlib.Path(__file__).resolve().parent.parent / "resources" / "presets"


def preset(name):
    return json.loads((PRESETS / f"{name}.json").read_text())


def listops_document(mechanism, steps):
    name = "transformer-6x8" if mechanism == "full" else f"attention-{mechanism}-6x8"
    document = preset(name)
    document.setdefault("train", {}).update({"steps": steps, "eval_every": steps, "eval_batches": 4,
                                             "checkpoint_every": steps, "log_every": 5})
    return document


# The Long Range Arena's windows and blocks (hundreds of positions) cover all
# 65 positions of a 32x32 picture in 4x4 patches, where a windowed mechanism
# would be full attention at a higher cost; on images the sweep scales them to
# the picture, so that each mechanism is what it is. CLS (position 0) global.
IMAGE_KEYS = {"local_block_size": 16, "longformer_window": 16, "longformer_global_tokens": 1,
              "bigbird_block_size": 8, "sparse_block_size": 16, "sparse_summary": 4,
              "sinkhorn_block_size": 13}


def image_document(mechanism, steps):
    document = preset("vit-6x8")
    document["model"]["attention"] = mechanism
    document["model"].update({key: value for key, value in IMAGE_KEYS.items()
                              if mechanism == "mixed" or key.startswith(mechanism)})
    if mechanism == "local":
        # Local blocks never exchange: a CLS token would see its own block only
        # (`widelab-cli check` warns); the classifier reads the mean instead.
        document["model"]["pooling"] = "mean"
    if mechanism == "mixed":
        document["model"]["attention_mix"] = preset("attention-mixed-6x8")["model"]["attention_mix"]
    document["train"].update({"steps": steps, "eval_every": steps, "eval_batches": 8,
                              "checkpoint_every": steps, "log_every": 5, "probes": ["validation:0"]})
    return document


def summarise(run_dir):
    """(early loss, late loss, last validation accuracy) of a finished run."""
    losses, accuracy = [], None
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "train":
            losses.append(record["loss"])
        elif record.get("type") == "eval" and record.get("split") == "validation":
            accuracy = record["accuracy"]
    tenth = max(1, len(losses) // 10)
    early = sum(losses[:tenth]) / tenth
    late = sum(losses[-tenth:]) / tenth
    return early, late, accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--only", default=",".join(MECHANISMS))
    parser.add_argument("--tasks", default="listops,images")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    arguments = parser.parse_args()

    out = pathlib.Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    builders = {"listops": listops_document, "images": image_document}
    rows, failed = [], False
    for task in arguments.tasks.split(","):
        for mechanism in arguments.only.split(","):
            document = builders[task](mechanism, arguments.steps)
            config = out / f"{task}-{mechanism}.json"
            config.write_text(json.dumps(document, indent=2))
            run_dir = out / f"{task}-{mechanism}"
            started = time.monotonic()
            result = subprocess.run([arguments.cli, "train", str(config), "--out", str(run_dir), "--force"],
                                    capture_output=True, text=True)
            seconds = time.monotonic() - started
            if result.returncode != 0:
                failed = True
                error = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
                rows.append((task, mechanism, "failed", "", "", "", f"{seconds:.0f}", error))
                print(f"{task:8} {mechanism:12} FAILED: {error}", file=sys.stderr)
                continue
            early, late, accuracy = summarise(run_dir)
            # Learnt: the loss fell, and validation is well above guessing one of the classes.
            chance = 1.0 / document["model"]["num_classes"]
            learns = late < early and accuracy is not None and accuracy >= 1.5 * chance
            failed |= not learns
            rows.append((task, mechanism, "yes" if learns else "NO", f"{early:.3f}", f"{late:.3f}",
                         "" if accuracy is None else f"{accuracy:.3f}", f"{seconds:.0f}", ""))
            print(f"{task:8} {mechanism:12} loss {early:.3f} -> {late:.3f}  validation accuracy "
                  f"{accuracy}  {seconds:.0f} s", file=sys.stderr)

    header = ("task", "mechanism", "learns", "early loss", "late loss", "val. accuracy", "seconds", "error")
    if arguments.markdown:
        print("| " + " | ".join(header[:-1]) + " |")
        print("|" + "---|" * (len(header) - 1))
        for row in rows:
            print("| " + " | ".join(row[:-1]) + (f" ({row[-1]})" if row[-1] else "") + " |")
    else:
        for row in rows:
            print("\t".join(row))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
