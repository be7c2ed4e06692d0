"""widelab.load: a WideLab export (model.safetensors or model.pt, model.json beside it) as
a module and its tokenizer (docs/run-directory.md, "Export").

load applies the checks widelab-cli applies to the same files, and every bad input is a
WideLabError naming the file and the reason:

- an export is one unit: when NAME.json records the export ("export": {"files": {name:
  SHA-256}}), every file it lists must be there with those bytes, the weights among
  them, and only the sidecars it lists are used;
- the weights hold no NaN or infinite value;
- the weights' own copy of the run document (safetensors metadata "config") describes
  the model NAME.json describes;
- labels.json is an array of distinct, non-empty class names, no more than the classes;
- every JSON file has the form WideLab writes.
"""

import hashlib
import io
import os
import re

import torch

from .config import ModelConfig
from .errors import WideLabError
from .files import describe, parse_json, read_bytes
from .images import ImageProcessor
from .model import WideLabModel
from .safetensors_reader import parse_safetensors
from .tokenizer import LISTOPS_TOKENS, Tokenizer

_SHA256 = re.compile(r"[0-9a-fA-F]{64}\Z")
_SIDECARS = ("tokenizer.json", "image.json", "labels.json")


# ---------------------------------------------------------------- the export's files


class _Export:
    """The files of one export: the weights at `path`, NAME.json beside them, and the
    sidecars; with NAME.json's record of the export ("export"), the bytes of every file
    it lists, checked against their SHA-256."""

    def __init__(self, path, run_dir):
        self.path = path
        self.run_dir = run_dir
        self.folder = os.path.dirname(path)
        self.stem = os.path.splitext(os.path.basename(path))[0]
        self.document_path = os.path.splitext(path)[0] + ".json"
        self.record = None     # {file name: sha256}, or None: an export without a record
        self.contents = {}     # {file name: bytes} of the files the record lists, checked

    def beside(self, name):
        return os.path.join(self.folder, name)

    def read_record(self, document):
        """Reads NAME.json's "export": {"files": {name: sha256, ...}} into self.record (None without one)."""
        if "export" not in document:
            return
        record = document["export"]
        where = "%s: \"export\"" % self.document_path
        if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
            raise WideLabError("%s: expected {\"files\": {FILE: its SHA-256, ...}}, found %s"
                               % (where, describe(record)))
        files = {}
        for name, digest in record["files"].items():
            if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
                raise WideLabError("%s: \"%s\" is not the name of a file beside %s"
                                   % (where, name, os.path.basename(self.document_path)))
            if not isinstance(digest, str) or not _SHA256.match(digest):
                raise WideLabError("%s: files.\"%s\": expected the file's SHA-256 (64 hex digits), found %s"
                                   % (where, name, describe(digest)))
            files[name] = digest.lower()
        self.record = files

    def check_record(self):
        """Every file the record lists is there with the bytes it records, the weights among them."""
        record_name = os.path.basename(self.document_path)
        weights = os.path.basename(self.path)
        if weights not in self.record:
            raise WideLabError("%s: %s's record of this export does not list it (it lists %s): the weights are not "
                               "the ones %s describes; export again"
                               % (self.path, record_name, ", ".join(sorted(self.record)) or "no file", record_name))
        for name, expected in sorted(self.record.items()):
            path = self.beside(name)
            if not os.path.exists(path):
                raise WideLabError("%s: missing, though %s's record of this export lists it: the export was "
                                   "interrupted or the file was moved away; export again" % (path, record_name))
            data = read_bytes(path)
            found = hashlib.sha256(data).hexdigest()
            if found != expected:
                raise WideLabError("%s: its contents do not match %s's record of this export (sha256 %s... expected, "
                                   "%s... found): the export was interrupted or another export replaced part of it; "
                                   "export again" % (path, record_name, expected[:12], found[:12]))
            self.contents[name] = data

    def read(self, path):
        """The bytes of a file beside NAME.json, as checked when the record lists it."""
        name = os.path.basename(path)
        return self.contents[name] if name in self.contents else read_bytes(path)

    def sidecar(self, name):
        """(path, bytes) of the run's `name` (tokenizer.json, image.json, labels.json), or None:
        RUN_DIR/name when a run directory is given; else NAME.name or name beside the
        export, only those its record lists when it has one."""
        if self.run_dir is not None:
            path = os.path.join(self.run_dir, name)
            return (path, read_bytes(path)) if os.path.exists(path) else None
        for candidate in ("%s.%s" % (self.stem, name), name):
            if self.record is not None:
                if candidate in self.record:
                    return self.beside(candidate), self.contents[candidate]
            elif os.path.exists(self.beside(candidate)):
                return self.beside(candidate), read_bytes(self.beside(candidate))
        return None

    def missing_sidecar(self, name):
        """Why `name` was not found, for an error message."""
        if self.run_dir is not None:
            return "%s has no %s" % (self.run_dir, name)
        if self.record is not None:
            return "%s's record of this export lists no %s.%s" % (os.path.basename(self.document_path), self.stem, name)
        return "no %s.%s or %s beside the export" % (self.stem, name, name)


# ---------------------------------------------------------------- weights


def _load_pickle(data, path):
    try:
        try:
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        except TypeError:  # a PyTorch without weights_only
            return torch.load(io.BytesIO(data), map_location="cpu")
    except Exception as error:  # torch raises several types for a damaged file
        raise WideLabError("%s: cannot be read as a WideLab export (%s)" % (path, error)) from None


def parse_state(data, path):
    """The dictionary of tensors of a .pt export's bytes; `path` names it in errors."""
    state = _load_pickle(data, path)
    if not isinstance(state, dict) or not all(isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()):
        raise WideLabError("%s: not a WideLab export (expected a dictionary of named tensors)" % path)
    return state


def read_state(path):
    """The export's dictionary of tensors (torch.load with weights_only=False: WideLab's
    pickle is a typed dictionary that PyTorch >= 2.6 refuses under its default)."""
    return parse_state(read_bytes(path), path)


def check_finite(state, origin):
    """Refuses weights with a NaN or infinite value, naming the first such tensor."""
    bad = []
    for key, tensor in state.items():
        if tensor.is_floating_point() and tensor.numel() and not bool(torch.isfinite(tensor).all()):
            bad.append((key, int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum()), tensor.numel()))
    if bad:
        key, nan, infinite, count = bad[0]
        more = " (and %d more tensor(s))" % (len(bad) - 1) if len(bad) > 1 else ""
        raise WideLabError("%s: %s holds %d NaN and %d infinite value(s) of %d%s: the weights cannot be used (the run "
                           "diverged, or the file is damaged)" % (origin, key, nan, infinite, count, more))


def _anchor_shapes(config):
    """The shapes of the tensors that fix the model's size (docs/model.md, "Parameter names"):
    checked before the model is built, so that a model.json that does not describe the
    weights is refused before it allocates a model of its own size."""
    c = config
    D = c.d_model
    shapes = {"final_ln.weight": [D], "embed.position.weight": [c.positions, D]}
    if c.image_input:
        shapes["embed.patch.weight"] = [D, c.channels, c.patch_size, c.patch_size]
    else:
        shapes["embed.token.weight"] = [c.vocab_size, c.embedding_dim if c.embedding_dim > 0 else D]
    if c.head == "classification":
        shapes["classifier.weight"] = [c.num_classes, D]
    elif c.head == "language_model":
        shapes["lm_head.weight"] = [c.vocab_size, D]
    _block_anchors(shapes, c, "")
    if c.translation:
        side = c.decoder_side()
        _block_anchors(shapes, side, "decoder.")
        width = side.paths * side.heads * side.head_dim
        shapes["decoder.cross.%d.q.weight" % (0 if side.share_attention else side.layers - 1)] = [width, D]
        shapes["decoder.final_ln.weight"] = [D]
    return shapes


def _block_anchors(shapes, c, prefix):
    """The last block's tensors that fix a side's depth, paths, heads, widths and experts."""
    D = c.d_model
    last = c.layers - 1
    shapes["%sattention.%d.qkv.weight" % (prefix, 0 if c.share_attention else last)] = \
        [3 * c.paths * c.heads * c.head_dim, D]
    shapes["%sffn.%d.w_in" % (prefix, 0 if c.share_ffn else last)] = [c.experts if c.is_moe else c.paths, c.ffn_dim, D]
    shapes["%sln_att.%d.weight" % (prefix, 0 if c.share_layernorm else last)] = [D]
    if c.is_moe:
        shapes["%srouter.%d.weight" % (prefix, 0 if c.share_router else last)] = [c.experts, D]


def _mismatch(origin, missing=(), unexpected=()):
    parts = []
    if missing:
        parts.append("missing %s" % ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    if unexpected:
        parts.append("unexpected %s" % ", ".join(unexpected[:5]) + (" ..." if len(unexpected) > 5 else ""))
    return WideLabError("%s: its tensors do not match the model its model.json describes (%s)"
                        % (origin, "; ".join(parts)))


def build_model(config, state, origin):
    """The model `config` describes, once the tensors that fix its size agree with `state`."""
    for key, shape in _anchor_shapes(config).items():
        if key not in state:
            raise _mismatch(origin, missing=[key])
        if list(state[key].shape) != shape:
            raise WideLabError("%s: %s has shape %s, the model.json describes %s"
                               % (origin, key, list(state[key].shape), shape))
    try:
        return WideLabModel(config)
    except (RuntimeError, MemoryError) as error:  # the allocator's refusal
        raise WideLabError("%s: cannot build the model its model.json describes (%s)" % (origin, error)) from None


def load_state(model, state, origin):
    """Fills `model` with `state`, naming any tensor that is missing, unexpected or misshapen."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise _mismatch(origin, missing, unexpected)
    for key, tensor in own.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise WideLabError("%s: %s has shape %s, the model.json describes %s"
                               % (origin, key, list(state[key].shape), list(tensor.shape)))
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()})


# ---------------------------------------------------------------- the run document


def check_document(document, origin):
    """The parts of a run document the package reads: "model" (config.py checks it) and
    "task"'s kind, tokenizer and sequence_length."""
    if not isinstance(document, dict) or "model" not in document:
        raise WideLabError("%s: not a WideLab run document (no \"model\" section)" % origin)
    task = document.get("task", {})
    if not isinstance(task, dict):
        raise WideLabError("%s: \"task\" must be a JSON object, found %s" % (origin, describe(task)))
    for key in ("kind", "tokenizer"):
        if key in task and not isinstance(task[key], str):
            raise WideLabError("%s: task.%s: expected a string, found %s" % (origin, key, describe(task[key])))
    length = task.get("sequence_length", 0)
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise WideLabError("%s: task.sequence_length: expected an integer >= 0, found %s" % (origin, describe(length)))
    return document


def sequence_length(document, config):
    """The run's sequence length: task.sequence_length when > 0 (text), else model.max_len."""
    task = document.get("task") or {}
    length = task.get("sequence_length", 0)
    if not config.image_input and isinstance(length, int) and length > 0:
        return length
    return config.max_len


def _metadata_document(metadata, path):
    """The run document in a safetensors file's metadata ("config"), or None when it has none."""
    if "config" not in metadata:
        return None
    origin = "%s (metadata \"config\")" % path
    return check_document(parse_json(metadata["config"], origin), origin), origin


def _first_difference(mine, theirs, where):
    """(key, value in mine, value in theirs) of the first place two JSON values differ, or None.
    Numbers compare by value, booleans only with booleans; absent keys are None values."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in list(mine) + [k for k in theirs if k not in mine]:
            if key not in mine or key not in theirs:
                return "%s.%s" % (where, key), mine.get(key, _ABSENT), theirs.get(key, _ABSENT)
            found = _first_difference(mine[key], theirs[key], "%s.%s" % (where, key))
            if found:
                return found
        return None
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        for i, (a, b) in enumerate(zip(mine, theirs)):
            found = _first_difference(a, b, "%s[%d]" % (where, i))
            if found:
                return found
        return None
    same_kind = isinstance(mine, bool) == isinstance(theirs, bool) and \
        isinstance(mine, (int, float)) == isinstance(theirs, (int, float)) and \
        (isinstance(mine, (int, float)) or type(mine) is type(theirs))
    return None if same_kind and mine == theirs else (where, mine, theirs)


_ABSENT = object()


def _check_same_model(document, document_path, embedded, path):
    """The weights' own run document (metadata "config") and NAME.json describe one model."""
    found = _first_difference(embedded["model"], document["model"], "model")
    if found:
        key, in_weights, in_document = found
        name = os.path.basename(document_path)

        def shown(value):
            return "absent" if value is _ABSENT else describe(value)
        raise WideLabError("%s and %s: the weights' own metadata and %s describe different models (%s: %s in the "
                           "weights, %s in %s): the files come from different exports; export again"
                           % (path, document_path, name, key, shown(in_weights), shown(in_document), name))


# ---------------------------------------------------------------- tokenizer, image statistics, labels


def make_tokenizer(document, config, export, run_dir=None):
    """The tokenizer a run used: its tokenizer.json when found, else what the task implies
    (ListOps: its fixed vocabulary; byte: the bytes). Image models: an ImageProcessor from
    the run's image.json.

    export: an _Export, or (as before) the path of the export's weights."""
    if not isinstance(export, _Export):
        export = _Export(os.fspath(export), run_dir)
    if config.image_input:
        stats = export.sidecar("image.json")
        if stats is None:
            raise WideLabError("%s: an image model needs its run's image.json (the normalisation), and %s; copy "
                               "RUN_DIR/image.json beside the export or pass run_dir=RUN_DIR"
                               % (export.path, export.missing_sidecar("image.json")))
        return ImageProcessor.parse(stats[1], config, stats[0])
    length = sequence_length(document, config)
    saved = export.sidecar("tokenizer.json")
    if saved is not None:
        tokenizer = Tokenizer.parse(saved[1], length, saved[0])
    else:
        task = document.get("task") or {}
        kind = task.get("kind", "listops")
        choice = task.get("tokenizer", "byte")
        if kind == "listops":
            tokenizer = Tokenizer("fixed", LISTOPS_TOKENS, length)
        elif choice == "byte":
            tokenizer = Tokenizer("byte", (), length)
        else:
            raise WideLabError("%s: the run's %s tokenizer has a vocabulary built from its data, and %s: copy "
                               "RUN_DIR/tokenizer.json beside the export or pass run_dir=RUN_DIR"
                               % (export.path, choice, export.missing_sidecar("tokenizer.json")))
    if tokenizer.vocab_size > config.vocab_size:
        raise WideLabError("%s: the tokenizer has %d ids, more than model.vocab_size (%d)"
                           % (saved[0] if saved else export.path, tokenizer.vocab_size, config.vocab_size))
    if config.segments > 0:  # a pair model: its last id separates the texts (core/data/PairInput.h)
        tokenizer.set_separator(config.vocab_size - 1, "%s: model.vocab_size leaves no id for the pair separator"
                                % (saved[0] if saved else export.path))
    return tokenizer


def parse_labels(data, origin, config):
    """The class names of a labels.json's bytes: an array of distinct, non-empty strings;
    for a classifier no more than model.num_classes (a run whose data has fewer labels
    than its classes keeps those; inspect shows the other classes by number)."""
    labels = parse_json(data, origin)
    if not isinstance(labels, list):
        raise WideLabError("%s: expected an array of class names" % origin)
    seen = set()
    for i, label in enumerate(labels):
        if not isinstance(label, str) or not label:
            raise WideLabError("%s: class %d is not a non-empty string" % (origin, i))
        if label in seen:
            raise WideLabError("%s: class name \"%s\" appears twice" % (origin, label))
        seen.add(label)
    if config.head == "classification" and len(labels) > config.num_classes:
        raise WideLabError("%s: %d class names, more than the model's %d classes (model.num_classes): the labels "
                           "belong to another run" % (origin, len(labels), config.num_classes))
    return labels


# ---------------------------------------------------------------- load


def load(path, run_dir=None):
    """(model, tokenizer) of a WideLab export.

    path: the export's .safetensors or .pt file (`widelab-cli export RUN_DIR --out
        model.safetensors`); its run document, model.json, lies beside it (the name with
        .json); a safetensors file without it uses the copy in its metadata.
    run_dir: the run directory to read tokenizer.json, image.json and labels.json from;
        without it they are looked for beside the export (as NAME.tokenizer.json or
        tokenizer.json, and so on; only the files model.json's record of the export
        lists, when it has one). ListOps and byte-tokenizer runs need none; character
        and word runs need tokenizer.json, image runs image.json.

    The model is in evaluation mode, on the CPU, in float32; `model.labels` holds the class
    names when labels.json was found. Every bad input is a WideLabError naming the file."""
    path = os.fsdecode(os.fspath(path))
    if run_dir is not None:
        run_dir = os.fsdecode(os.fspath(run_dir))
        if not os.path.isdir(run_dir):
            raise WideLabError("%s: not a run directory (run_dir)" % run_dir)
    export = _Export(path, run_dir)

    # The run document first: its record of the export says which bytes to trust.
    document = config = None
    origin = export.document_path
    if os.path.exists(export.document_path):
        document = check_document(parse_json(read_bytes(export.document_path), origin), origin)
        export.read_record(document)
        config = ModelConfig(document["model"], origin)
        if export.record is not None:
            export.check_record()

    data = export.read(path)
    if path.endswith(".safetensors"):
        state, metadata = parse_safetensors(data, path)
    else:
        state, metadata = parse_state(data, path), {}
    check_finite(state, path)

    embedded = _metadata_document(metadata, path)
    if document is None:
        if embedded is None:
            if path.endswith(".safetensors"):
                raise WideLabError("%s: %s is missing and the file's metadata holds no \"config\""
                                   % (path, export.document_path))
            raise WideLabError("%s: missing (a .pt export needs its run document beside it)" % export.document_path)
        document, origin = embedded
        config = ModelConfig(document["model"], origin)
    elif embedded is not None:
        _check_same_model(document, export.document_path, embedded[0], path)

    model = build_model(config, state, path)
    load_state(model, state, path)
    model.eval()
    model.document = document
    labels = export.sidecar("labels.json")
    model.labels = parse_labels(labels[1], labels[0], config) if labels is not None else None
    tokenizer = make_tokenizer(document, config, export)
    model.tokenizer = tokenizer  # a translation model's translate() uses it
    return model, tokenizer
