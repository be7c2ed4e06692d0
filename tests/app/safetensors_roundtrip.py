#!/usr/bin/env python3
"""The `safetensors` package from PyPI against WideLab's safetensors export.

Trains a tiny mixture-of-experts run with the real widelab-cli, exports it twice
(the default safetensors and --format pt), and reads the safetensors file with
`safetensors.numpy.load_file` and `safe_open`: every tensor must hold the bytes,
dtype and shape that PyTorch's own reader finds in the pickle (read by the
reference Python, which has torch, and handed over as JSON), and the metadata's
"config" must parse to the run document written beside the weights, which
records the weights' SHA-256.

usage: safetensors_roundtrip.py WIDELAB_CLI TORCH_PYTHON
Exit status 77 (CTest's skip) when this Python has no safetensors or numpy, or
TORCH_PYTHON cannot import torch.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as error:
    print(f"SKIP: this Python ({sys.executable}) cannot import safetensors and numpy ({error}); "
          "install them (.ci/run shows how) and set WIDELAB_TENSORBOARD_PYTHON")
    sys.exit(77)

CLI, TORCH_PYTHON = sys.argv[1], sys.argv[2]
TASK = {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 64, "validation_size": 16}
TRAIN = {"steps": 3, "batch_size": 8, "log_every": 1, "eval_every": 3, "checkpoint_every": 3, "threads": 1}
MODEL = {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
         "num_classes": 10, "experts": 4, "top_k": 2, "capacity_factor": 1.2}

# Run by TORCH_PYTHON: the pickle's tensors as {name: [dtype, shape, base64 of the bytes]}.
DUMP_PICKLE = """
import base64, json, sys, torch
try:
    state = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
except TypeError:
    state = torch.load(sys.argv[1], map_location="cpu")
print(json.dumps({name: [str(t.dtype), list(t.shape), base64.b64encode(t.contiguous().numpy().tobytes()).decode()]
                  for name, t in state.items()}))
"""
NUMPY_DTYPES = {"torch.float32": numpy.float32, "torch.float64": numpy.float64, "torch.int64": numpy.int64,
                "torch.int32": numpy.int32, "torch.bool": numpy.bool_, "torch.uint8": numpy.uint8,
                "torch.float16": numpy.float16}


def cli(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"widelab-cli {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def main():
    if subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIP: {TORCH_PYTHON} cannot import torch (the pickle's reader)")
        sys.exit(77)
    failures = []
    with tempfile.TemporaryDirectory() as root:
        config, run = os.path.join(root, "config.json"), os.path.join(root, "run")
        with open(config, "w", encoding="utf-8") as file:
            json.dump({"model": MODEL, "task": TASK, "train": TRAIN}, file)
        cli("train", config, "--out", run)
        weights, pickled = os.path.join(root, "model.safetensors"), os.path.join(root, "model-pickle.pt")
        cli("export", run, "--out", weights)
        cli("export", run, "--out", pickled, "--format", "pt")
        dump = subprocess.run([TORCH_PYTHON, "-c", DUMP_PICKLE, pickled], capture_output=True, text=True)
        if dump.returncode != 0:
            sys.exit(f"reading {pickled} with torch failed:\n{dump.stderr}")
        expected = json.loads(dump.stdout)

        tensors = load_file(weights)
        if sorted(tensors) != sorted(expected):
            failures.append(f"names: safetensors {sorted(tensors)}, pickle {sorted(expected)}")
        for name, (dtype, shape, data) in expected.items():
            array = tensors.get(name)
            if array is None:
                continue
            if array.dtype != NUMPY_DTYPES[dtype] or list(array.shape) != shape:
                failures.append(f"{name}: safetensors {array.dtype} {list(array.shape)}, pickle {dtype} {shape}")
            elif numpy.ascontiguousarray(array).tobytes() != base64.b64decode(data):
                failures.append(f"{name}: the values differ from the pickle's")
        with safe_open(weights, framework="numpy") as file:
            metadata = file.metadata()
            if sorted(file.keys()) != sorted(expected):
                failures.append("safe_open lists other names than load_file")
        with open(os.path.join(root, "model.json"), encoding="utf-8") as file:
            document = json.load(file)
        # model.json adds the export's record of its files' digests to the run document.
        recorded = document.pop("export", {}).get("files", {})
        with open(weights, "rb") as file:
            if recorded.get(os.path.basename(weights)) != hashlib.sha256(file.read()).hexdigest():
                failures.append("model.json does not record the weights' SHA-256")
        if metadata.get("format") != "pt":
            failures.append(f"metadata format: {metadata.get('format')!r}, expected 'pt'")
        if json.loads(metadata.get("config", "null")) != document:
            failures.append("metadata config is not the run document written beside the weights")
        if metadata.get("step") != str(TRAIN["steps"]):
            failures.append(f"metadata step: {metadata.get('step')!r}, expected '{TRAIN['steps']}'")
        print(f"{len(tensors)} tensors read with safetensors {__import__('safetensors').__version__}")
    if failures:
        sys.exit("safetensors_roundtrip failed:\n  " + "\n  ".join(failures))
    print("safetensors_roundtrip: every tensor equals the pickle's; the metadata holds the run document")


if __name__ == "__main__":
    main()
