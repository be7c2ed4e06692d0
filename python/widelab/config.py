"""The `model` section of a WideLab run document (docs/model.md, "Configuration").

The export's model.json has every key written out, defaults included, so this
module reads keys and checks them; it fills no defaults of its own except for the
keys of attention mechanisms that an older document may lack.
"""

import copy
import math

from .errors import WideLabError
from .files import describe

# Every key of the model section this package implements, with its type.
# A key the document has and this table lacks belongs to a newer WideLab: it is an
# error (the model could compute something this package does not).
_INTEGER = int
_NUMBER = float
_BOOL = bool
_TEXT = str
_TEXT_LIST = list

_KEYS = {
    "vocab_size": _INTEGER, "max_len": _INTEGER, "input": _TEXT, "image_size": _INTEGER,
    "patch_size": _INTEGER, "channels": _INTEGER, "d_model": _INTEGER, "embedding_dim": _INTEGER,
    "layers": _INTEGER, "heads": _INTEGER, "head_dim": _INTEGER, "ffn_dim": _INTEGER,
    "activation": _TEXT, "dropout": _NUMBER, "attention": _TEXT, "attention_mix": _TEXT_LIST,
    "head": _TEXT, "pooling": _TEXT, "pooler": _BOOL, "num_classes": _INTEGER,
    "experts": _INTEGER, "top_k": _INTEGER, "capacity_factor": _NUMBER,
    "eval_capacity_factor": _NUMBER, "router_noise_std": _NUMBER, "balance_loss_weight": _NUMBER,
    "router_z_loss_weight": _NUMBER, "routing_groups": _INTEGER, "routing_priority": _TEXT,
    "renormalize_gates": _BOOL, "share_router": _BOOL, "share_attention": _BOOL,
    "share_ffn": _BOOL, "share_layernorm": _BOOL, "paths": _INTEGER, "path_norm": _BOOL,
    "learnable_path_weights": _BOOL, "path_extra_features": _BOOL,
}

# Keys added after the first exports, with the value their absence means (None:
# decoder_layers, which then equals layers).
_LATER_KEYS = {
    "decoder_layers": (_INTEGER, None), "decoder_paths": (_INTEGER, None), "balance_count": (_TEXT, "top1"),
    "path_weight": (_TEXT, "inverse_sqrt_2n"), "segments": (_INTEGER, 0),
}

# The attention mechanisms' own keys and their defaults (docs/attention/*.md).
_MECHANISM_KEYS = {
    "performer_features": (_INTEGER, 256), "performer_redraw_every": (_INTEGER, 1),
    "linformer_k": (_INTEGER, 16), "local_block_size": (_INTEGER, 50),
    "longformer_window": (_INTEGER, 512), "longformer_global_tokens": (_INTEGER, 0),
    "bigbird_block_size": (_INTEGER, 64), "bigbird_random_blocks": (_INTEGER, 3),
    "sparse_pattern": (_TEXT, "fixed"), "sparse_block_size": (_INTEGER, 128),
    "sparse_summary": (_INTEGER, 32), "sinkhorn_block_size": (_INTEGER, 50),
    "sinkhorn_iterations": (_INTEGER, 0), "sinkhorn_temperature": (_NUMBER, 1.0),
    "synthesizer_variant": (_TEXT, "factorized_random"), "synthesizer_rank": (_INTEGER, 32),
}

# The schema's ranges (core/config/ConfigSchema.cpp, `widelab-cli keys --json`): WideLab
# refuses a document with a value outside them, and so does the package.
_RANGES = {
    "vocab_size": (2, 10000000), "max_len": (1, 1048576), "image_size": (1, 4096), "patch_size": (1, 4096),
    "channels": (1, 3), "d_model": (1, 65536), "embedding_dim": (0, 65536), "layers": (1, 1024),
    "heads": (1, 4096), "head_dim": (1, 65536), "ffn_dim": (1, 1048576), "dropout": (0.0, 0.99),
    "performer_features": (1, 65536), "performer_redraw_every": (0, 1000000000), "linformer_k": (1, 65536),
    "local_block_size": (1, 65536), "longformer_window": (1, 65536), "longformer_global_tokens": (0, 65536),
    "bigbird_block_size": (1, 65536), "bigbird_random_blocks": (0, 64), "sparse_block_size": (1, 65536),
    "sparse_summary": (1, 65536), "sinkhorn_block_size": (1, 65536), "sinkhorn_iterations": (0, 100),
    "sinkhorn_temperature": (0.01, 100.0), "synthesizer_rank": (1, 65536), "num_classes": (2, 10000000),
    "experts": (1, 4096), "top_k": (1, 4096), "capacity_factor": (-1e9, 1e9), "eval_capacity_factor": (-1e9, 1e9),
    "router_noise_std": (0.0, 1000.0), "balance_loss_weight": (0.0, 1000.0), "router_z_loss_weight": (0.0, 1000.0),
    "routing_groups": (1, 1024), "paths": (1, 64), "decoder_layers": (1, 1024), "decoder_paths": (1, 64),
    "segments": (0, 8),
}

_CHOICES = {
    "input": ("tokens", "image"),
    "activation": ("gelu", "relu", "silu"),
    "head": ("classification", "language_model", "translation", "masked_lm"),
    "pooling": ("cls", "mean"),
    "routing_priority": ("position", "batch"),
    "balance_count": ("top1", "topk"),
    "path_weight": ("inverse_sqrt_2n", "inverse_n", "inverse_sqrt_n"),
    "sparse_pattern": ("fixed", "strided"),
    "synthesizer_variant": ("dense", "random", "factorized_random"),
}

MECHANISMS = ("full", "linear", "performer", "linformer", "local", "longformer", "bigbird",
              "sparse", "sinkhorn", "synthesizer")
_NOT_CAUSAL = ("linformer", "sinkhorn")


class ModelConfig:
    """The resolved `model` section, with the quantities docs/model.md derives from it.

    Keys are attributes under their JSON names (`config.d_model`, `config.top_k`).
    """

    def __init__(self, section, origin="model.json"):
        self.origin = origin
        if not isinstance(section, dict):
            raise WideLabError("%s: \"model\" must be a JSON object" % origin)
        values = {}
        for key, value in section.items():
            if key in _KEYS:
                kind = _KEYS[key]
            elif key in _LATER_KEYS:
                kind = _LATER_KEYS[key][0]
            elif key in _MECHANISM_KEYS:
                kind = _MECHANISM_KEYS[key][0]
            else:
                raise WideLabError(
                    "%s: model.%s: unknown key; this widelab package does not implement it "
                    "(a newer WideLab wrote the file: update the package)" % (origin, key))
            values[key] = self._typed(key, value, kind)
        for key in _KEYS:
            if key not in values:
                raise WideLabError("%s: model.%s: missing (an export writes every key)" % (origin, key))
        for key, (_, default) in _MECHANISM_KEYS.items():
            values.setdefault(key, default)
        values.setdefault("path_weight", _LATER_KEYS["path_weight"][1])
        values.setdefault("segments", _LATER_KEYS["segments"][1])
        values.setdefault("decoder_layers", values["layers"])
        values.setdefault("decoder_paths", values["paths"])
        for key, value in values.items():
            setattr(self, key, value)
        self._check()

    def _typed(self, key, value, kind):
        where = "%s: model.%s" % (self.origin, key)
        if kind is _BOOL:
            if not isinstance(value, bool):
                raise WideLabError("%s: expected true or false, got %s" % (where, describe(value)))
            return value
        if kind is _INTEGER or kind is _NUMBER:
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if kind is _INTEGER:
                if not number or value != math.floor(value):
                    raise WideLabError("%s: expected an integer, got %s" % (where, describe(value)))
                value = int(value)
            else:
                if not number:
                    raise WideLabError("%s: expected a finite number, got %s" % (where, describe(value)))
                value = float(value)
            low, high = _RANGES.get(key, (None, None))
            if low is not None and not low <= value <= high:
                raise WideLabError("%s: %s is outside %s..%s" % (where, describe(value), low, high))
            return value
        if kind is _TEXT:
            if not isinstance(value, str):
                raise WideLabError("%s: expected a string, got %s" % (where, describe(value)))
            if key in _CHOICES and value not in _CHOICES[key]:
                raise WideLabError("%s: \"%s\" is not one of %s" % (where, value, ", ".join(_CHOICES[key])))
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise WideLabError("%s: expected a list of strings, got %s" % (where, describe(value)))
        return list(value)

    def _check(self):
        def fail(key, reason):
            raise WideLabError("%s: model.%s: %s" % (self.origin, key, reason))

        positive = ("vocab_size", "max_len", "d_model", "layers", "heads", "head_dim", "ffn_dim",
                    "experts", "top_k", "routing_groups", "paths", "num_classes")
        for key in positive:
            if getattr(self, key) < 1:
                fail(key, "must be at least 1, got %d" % getattr(self, key))
        names = MECHANISMS + ("mixed",)
        if self.attention not in names:
            fail("attention", "\"%s\" is not one of %s" % (self.attention, ", ".join(names)))
        if self.attention == "mixed":
            if not self.attention_mix:
                fail("attention_mix", "a mixed model lists its mechanisms")
            for name in self.attention_mix:
                if name not in MECHANISMS:
                    fail("attention_mix", "\"%s\" is not one of %s" % (name, ", ".join(MECHANISMS)))
            if self.heads % len(self.attention_mix) != 0:
                fail("attention_mix", "its %d entries do not divide model.heads (%d)"
                     % (len(self.attention_mix), self.heads))
        if self.top_k > self.experts:
            fail("top_k", "%d exceeds model.experts: %d" % (self.top_k, self.experts))
        if self.routing_groups > self.layers:
            fail("routing_groups", "%d exceeds model.layers: %d" % (self.routing_groups, self.layers))
        if self.image_input:
            if self.patch_size < 1 or self.image_size % self.patch_size != 0:
                fail("image_size", "%d is not a multiple of model.patch_size (%d)" % (self.image_size, self.patch_size))
            if self.channels not in (1, 3):
                fail("channels", "must be 1 or 3, got %d" % self.channels)
            if self.head in ("language_model", "masked_lm"):
                fail("head", "a language model cannot read images")
        if self.head == "language_model":
            for name in self.head_mechanisms():
                if name in _NOT_CAUSAL:
                    fail("attention", "%s attention does not work with a language-model head" % name)
        if self.paths > 1 and self.is_moe:
            fail("paths", "multi-path mixtures of experts are not defined")
        if (self.causal or self.translation) and self.routing_priority == "batch":
            fail("routing_priority", "\"batch\" lets later tokens take earlier tokens' expert slots, which a %s "
                 "must not see; use \"position\"" % ("decoder" if self.translation else "language model"))
        if self.translation:
            if self.image_input:
                fail("head", "\"translation\" reads and writes tokens; use model.input \"tokens\"")
            if self.embedding_dim > 0:
                fail("embedding_dim", "a translation model ties its output to the token embedding, which needs "
                     "embedding_dim 0")
            if self.decoder_paths > 1 and self.is_moe:
                fail("decoder_paths", "multi-path sublayers with a mixture of experts are not supported; use 1")
            if self.path_extra_features and self.decoder_paths == 2:
                fail("decoder_paths", "2 paths have no extra features (path_extra_features needs 3 or more); use 1 "
                     "(a plain decoder) or at least 3")

    # ---- derived quantities (docs/model.md)
    @property
    def image_input(self):
        return self.input == "image"

    @property
    def translation(self):
        """An encoder-decoder (model.head "translation")."""
        return self.head == "translation"

    def decoder_side(self):
        """The configuration a translation model's decoder blocks are built from, as
        WideLab's ModelConfig::decoderSide: decoder_layers blocks of causal full attention
        (head "language_model": token-major routing, no CLS), decoder_paths paths (1: plain
        sublayers, without PathNorm or path weights), min(routing_groups, decoder_layers)
        routing groups; every other key as the model's."""
        side = copy.copy(self)
        side.head = "language_model"
        side.layers = self.decoder_layers
        side.attention = "full"
        side.attention_mix = []
        side.routing_groups = min(self.routing_groups, self.decoder_layers)
        side.paths = self.decoder_paths
        if self.decoder_paths == 1:
            side.path_norm = side.learnable_path_weights = side.path_extra_features = False
        return side

    @property
    def is_moe(self):
        return self.experts > 1

    @property
    def path_weight_value(self):
        """Each path's weight alpha for n paths (model.path_weight), fixed or its start."""
        n = float(self.paths)
        return {"inverse_n": 1.0 / n, "inverse_sqrt_n": 1.0 / math.sqrt(n)}.get(
            self.path_weight, 1.0 / math.sqrt(2.0 * n))

    @property
    def is_multi_path(self):
        return self.paths > 1 or self.path_norm or self.learnable_path_weights or self.path_extra_features

    @property
    def path_features(self):
        return 2 * self.paths if self.path_extra_features else self.paths

    @property
    def uses_cls_token(self):
        return self.head == "classification" and self.pooling == "cls"

    @property
    def patch_grid(self):
        return self.image_size // self.patch_size

    @property
    def sequence_max(self):
        """The longest input in tokens (patches for an image model), without the CLS token."""
        return self.patch_grid ** 2 if self.image_input else self.max_len

    @property
    def positions(self):
        return self.sequence_max + (1 if self.uses_cls_token else 0)

    @property
    def output_size(self):
        return self.num_classes if self.head == "classification" else self.vocab_size

    @property
    def causal(self):
        return self.head == "language_model"

    def routing_group_of(self, block):
        return block * self.routing_groups // self.layers

    def routes_at(self, block):
        return self.is_moe and (block == 0 or self.routing_group_of(block) != self.routing_group_of(block - 1))

    def head_mechanisms(self):
        """The mechanism of each head of a path: equal consecutive shares of attention_mix."""
        if self.attention != "mixed":
            return [self.attention] * self.heads
        share = max(1, self.heads // len(self.attention_mix))
        last = len(self.attention_mix) - 1
        return [self.attention_mix[min(h // share, last)] for h in range(self.heads)]

    def mechanism_groups(self):
        """[(name, [head indices over all paths, p * heads + h])] in order of first appearance."""
        per_head = self.head_mechanisms()
        groups = []
        for name in per_head:
            if any(g[0] == name for g in groups):
                continue
            heads = [p * self.heads + h for p in range(self.paths) for h in range(self.heads) if per_head[h] == name]
            groups.append((name, heads))
        return groups
