"""widelab.load: a WideLab export (model.safetensors or model.pt, model.json beside it) as
a module and its tokenizer (docs/run-directory.md, "Export")."""

import json
import os

import torch

from .config import ModelConfig
from .errors import WideLabError
from .images import ImageProcessor
from .model import WideLabModel
from .safetensors_reader import read_safetensors
from .tokenizer import LISTOPS_TOKENS, Tokenizer


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as error:
        raise WideLabError("%s: cannot be read (%s)" % (path, error.strerror or error))
    except ValueError as error:
        raise WideLabError("%s: not valid JSON (%s)" % (path, error))


def _beside(export, run_dir, name):
    """RUN_DIR/name when a run directory is given, else `name` in the export's folder, or
    `<stem>.name` there (model.tokenizer.json beside model.pt); None when none exists."""
    if run_dir is not None:
        path = os.path.join(run_dir, name)
        return path if os.path.exists(path) else None
    folder = os.path.dirname(os.path.abspath(export))
    stem = os.path.splitext(os.path.basename(export))[0]
    for candidate in (os.path.join(folder, "%s.%s" % (stem, name)), os.path.join(folder, name)):
        if os.path.exists(candidate):
            return candidate
    return None


def read_state(path):
    """The export's dictionary of tensors (torch.load with weights_only=False: WideLab's
    pickle is a typed dictionary that PyTorch >= 2.6 refuses under its default)."""
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except TypeError:  # a PyTorch without weights_only
            state = torch.load(path, map_location="cpu")
    except FileNotFoundError:
        raise WideLabError("%s: missing" % path)
    except Exception as error:  # torch raises several types for a damaged file
        raise WideLabError("%s: cannot be read as a WideLab export (%s)" % (path, error))
    if not isinstance(state, dict) or not all(isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()):
        raise WideLabError("%s: not a WideLab export (expected a dictionary of named tensors)" % path)
    return state


def load_state(model, state, origin):
    """Fills `model` with `state`, naming any tensor that is missing, unexpected or misshapen."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append("missing %s" % ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
        if unexpected:
            parts.append("unexpected %s" % ", ".join(unexpected[:5]) + (" ..." if len(unexpected) > 5 else ""))
        raise WideLabError("%s: its tensors do not match the model its model.json describes (%s)"
                           % (origin, "; ".join(parts)))
    for key, tensor in own.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise WideLabError("%s: %s has shape %s, the model.json describes %s"
                               % (origin, key, list(state[key].shape), list(tensor.shape)))
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()})


def sequence_length(document, config):
    """The run's sequence length: task.sequence_length when > 0 (text), else model.max_len."""
    task = document.get("task") or {}
    length = task.get("sequence_length", 0)
    if not config.image_input and isinstance(length, int) and length > 0:
        return length
    return config.max_len


def make_tokenizer(document, config, export, run_dir):
    """The tokenizer a run used: its tokenizer.json when found, else what the task implies
    (ListOps: its fixed vocabulary; byte: the bytes). Image models: an ImageProcessor from
    the run's image.json."""
    if config.image_input:
        stats = _beside(export, run_dir, "image.json")
        if stats is None:
            raise WideLabError("%s: an image model needs its run's image.json (the normalisation); copy "
                               "RUN_DIR/image.json beside the export or pass run_dir=RUN_DIR" % export)
        return ImageProcessor.read(stats, config)
    length = sequence_length(document, config)
    saved = _beside(export, run_dir, "tokenizer.json")
    if saved is not None:
        tokenizer = Tokenizer.read(saved, length)
    else:
        task = document.get("task") or {}
        kind = task.get("kind", "listops")
        choice = task.get("tokenizer", "byte")
        if kind == "listops":
            tokenizer = Tokenizer("fixed", LISTOPS_TOKENS, length)
        elif choice == "byte":
            tokenizer = Tokenizer("byte", (), length)
        else:
            raise WideLabError("%s: the run's %s tokenizer has a vocabulary built from its data: copy "
                               "RUN_DIR/tokenizer.json beside the export or pass run_dir=RUN_DIR" % (export, choice))
    if tokenizer.vocab_size > config.vocab_size:
        raise WideLabError("the tokenizer has %d ids, more than model.vocab_size (%d)"
                           % (tokenizer.vocab_size, config.vocab_size))
    return tokenizer


def read_document(path, metadata):
    """The run document: NAME.json beside the export, else (a safetensors export) the
    copy in its metadata's "config"."""
    document_path = os.path.splitext(path)[0] + ".json"
    if os.path.exists(document_path) or metadata is None:
        document = _read_json(document_path)
        origin = document_path
    else:
        if "config" not in metadata:
            raise WideLabError("%s: %s is missing and the file's metadata holds no \"config\"" % (path, document_path))
        try:
            document = json.loads(metadata["config"])
        except ValueError as error:
            raise WideLabError("%s: the metadata's \"config\" is not valid JSON (%s)" % (path, error))
        origin = "%s (metadata \"config\")" % path
    if not isinstance(document, dict) or "model" not in document:
        raise WideLabError("%s: not a WideLab run document (no \"model\" section)" % origin)
    return document, origin


def load(path, run_dir=None):
    """(model, tokenizer) of a WideLab export.

    path: the export's .safetensors or .pt file (`widelab-cli export RUN_DIR --out
        model.safetensors`); its run document, model.json, lies beside it (the name with
        .json); a safetensors file without it uses the copy in its metadata.
    run_dir: the run directory to read tokenizer.json, image.json and labels.json from;
        without it they are looked for beside the export (as NAME.tokenizer.json or
        tokenizer.json, and so on). ListOps and byte-tokenizer runs need none; character
        and word runs need tokenizer.json, image runs image.json.

    The model is in evaluation mode, on the CPU, in float32; `model.labels` holds the class
    names when labels.json was found."""
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        state, metadata = read_safetensors(path)
    else:
        state, metadata = read_state(path), None
    document, origin = read_document(path, metadata)
    config = ModelConfig(document["model"], origin)
    model = WideLabModel(config)
    load_state(model, state, path)
    model.eval()
    model.document = document
    labels = _beside(path, run_dir, "labels.json")
    model.labels = _read_json(labels) if labels is not None else None
    tokenizer = make_tokenizer(document, config, path, run_dir)
    return model, tokenizer
