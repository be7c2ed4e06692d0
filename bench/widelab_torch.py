#!/usr/bin/python3
"""The WideLab model families in PyTorch, for throughput comparisons.

The model a PyTorch user would write from docs/model.md in 2026, the way
nanoGPT and torchtitan write theirs: attention through
F.scaled_dot_product_attention (torch 2.x), the experts' weights stacked
[E, D, M] and multiplied in one call each (torch._grouped_mm over the
(token, choice) pairs sorted by expert where the torch and the GPU have it,
else torch.bmm over an [E, C, D] capacity buffer), no boolean-mask indexing,
and AdamW fused on CUDA. It has the
same architecture and parameter count as WideLab's C++ model (checked with
--params against `widelab-cli params`), but it is not a correctness reference
(tests/reference/ is): initialisation differs, and padding masks are not
supported (the benchmark feeds full sequences). tests/python/
test_bench_baseline.py checks that it computes what the hand-written side does.

--hand-written is the earlier baseline, kept so that figures before
2026-12-03 stay comparable: the scores written out and soft-maxed by hand, one
module per expert run in a loop over the tokens a mask picks, AdamW unfused.

A translation model (model.head "translation") is the dense one-path
encoder-decoder only (TranslationTorch; other settings are refused, saying
which): trained and run as `widelab-cli bench` does, the target being the
source itself, and with --mode decode decoded greedily as `widelab-cli bench
--mode decode` does (run_decode: 50 and 200 target tokens, per-layer key/value
caches concatenated each step against recomputing the prefix, best of --steps).

Usage:
    python3 bench/widelab_torch.py CONFIG [--mode train|infer] [--batch B] [--seq T]
                                   [--steps N] [--warmup W] [--threads N]
                                   [--device cpu|cuda|cuda:N] [--bf16]
                                   [--compile [default|max-autotune-no-cudagraphs|reduce-overhead]]
                                   [--hand-written | --experts grouped|batched] [--json]
    python3 bench/widelab_torch.py CONFIG --mode decode [--batch B] [--seq S] [--steps N]
                                   [--threads N] [--device D] [--hand-written] [--json]
    python3 bench/widelab_torch.py CONFIG --params [--seq T]

--bf16 runs forward and loss under torch.autocast to bfloat16, the router in
fp32 as WideLab does; --compile runs the model through torch.compile (PyTorch 2)
in the mode given (reduce-overhead replays CUDA graphs; on the CPU it is the
default mode), compiling during the warm-up steps, which the timed steps
exclude. The output names the side (eager, or compile's mode), the attention,
the experts' products and the optimizer. On CUDA every
timed step lies between two torch.cuda.synchronize() calls, and peak memory is
the caching allocator's (max_memory_allocated/reserved); on the CPU both are the
process's peak resident set, as `widelab-cli bench` reports it.

CONFIG is a JSON file or a preset name; it is resolved (defaults filled in) by
`widelab-cli check`, so both sides read the configuration the same way. Set
WIDELAB_CLI to the widelab-cli binary (default: build/app/cli/widelab-cli).

Notation: B batch, T sequence, D d_model, H heads, A head_dim, M ffn_dim,
E experts, K top_k, n paths, L layers, V vocab_size, S = B*T tokens.
"""

import argparse
import inspect
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CLI = os.path.join(HERE, "..", "build", "app", "cli", "widelab-cli")


def resolve_config(name_or_path, cli=None):
    """The resolved `model` section, as `widelab-cli check` prints it."""
    cli = cli or os.environ.get("WIDELAB_CLI", DEFAULT_CLI)
    done = subprocess.run([cli, "check", name_or_path], capture_output=True, text=True)
    if done.returncode != 0:
        document = translation_stand_in(name_or_path, cli, done.stderr)
    else:
        document = json.loads(done.stdout)
    return document["model"], document.get("name", name_or_path)


def translation_stand_in(name_or_path, cli, error):
    """`check` validates a translation model's task too: its data file must
    exist, which `bench` does not need (bench/configs/ holds the model alone).
    Such a model is checked with a stand-in task, one pair in a temporary file,
    so that the model section is still resolved by widelab-cli itself."""
    path = name_or_path
    if not os.path.isfile(path):  # a preset name
        path = os.path.join(HERE, "..", "resources", "presets", name_or_path + ".json")
    try:
        with open(path) as f:
            document = json.load(f)
    except (OSError, ValueError):
        document = None
    if not document or document.get("model", {}).get("head") != "translation":
        sys.exit(f"widelab-cli check {name_or_path} failed:\n{error}")
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        pairs = os.path.join(folder, "pairs.tsv")
        with open(pairs, "w") as f:
            f.write("in the beginning\ten el principio\n")
        task = {key: value for key, value in document.get("task", {}).items() if key != "target_path"}
        document["task"] = dict(task, kind="translation", path=pairs, tokenizer="bpe")
        stand_in = os.path.join(folder, "model.json")
        with open(stand_in, "w") as f:
            json.dump(document, f)
        done = subprocess.run([cli, "check", stand_in], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"widelab-cli check {name_or_path} failed:\n{error}with a stand-in task too:\n{done.stderr}")
    return json.loads(done.stdout)


ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
SDPA = "F.scaled_dot_product_attention"
HAND_WRITTEN = "hand-written softmax"


def attend(q, k, v, causal, dropout, sdpa=HAS_SDPA):
    """Softmax attention of q [B, H, T, A] over k, v [B, H, S, A]: one fused
    call where torch has it (2.x), as a PyTorch user writes it today, or the
    scores written out by hand (the baseline of figures before 2026-12-03).
    Causal only when T == S (the full-sequence pass; a cached step needs none)."""
    if sdpa:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, H, T, S]
    if causal:
        T = q.shape[-2]
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = scores.softmax(dim=-1)
    if dropout > 0:
        weights = F.dropout(weights, dropout)
    return weights @ v


class SelfAttention(nn.Module):
    """Multi-head self-attention with head_dim independent of d_model."""

    def __init__(self, d_model, heads, head_dim, dropout, causal, sdpa):
        super().__init__()
        self.heads, self.head_dim, self.causal, self.sdpa = heads, head_dim, causal, sdpa
        self.qkv = nn.Linear(d_model, 3 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, d_model)
        self.dropout = dropout

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        dropout = self.dropout if self.training else 0.0
        context = attend(q, k, v, self.causal, dropout, self.sdpa)  # [B, H, T, A]
        return self.out(context.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))


class FeedForward(nn.Sequential):
    def __init__(self, d_model, ffn_dim, activation):
        super().__init__(nn.Linear(d_model, ffn_dim), ACTIVATIONS[activation](), nn.Linear(ffn_dim, d_model))


class Routing:
    """One routing call's decisions, reused by the other blocks of a group:
    per (token, choice) [S, K] the expert, its gate, the slot in that expert's
    buffer and whether the slot is within the capacity."""

    def __init__(self, expert, gates, slot, kept, capacity, balance_loss):
        self.expert, self.gates, self.slot, self.kept = expert, gates, slot, kept
        self.capacity, self.balance_loss = capacity, balance_loss


class LoopedExperts(nn.Module):
    """Top-k experts with capacity (GShard / V-MoE style), experts in a loop,
    each given its tokens by a boolean mask: the baseline of figures before
    2026-12-03 (its nonzero makes the host wait for the device each expert)."""

    name = "per-expert loop"

    def __init__(self, cfg):
        super().__init__()
        self.experts = nn.ModuleList(
            FeedForward(cfg["d_model"], cfg["ffn_dim"], cfg["activation"]) for _ in range(cfg["experts"]))

    def forward(self, x, routing):
        # x: [S, D]
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, choice = torch.nonzero((routing.expert == e) & routing.kept, as_tuple=True)
            if token.numel() == 0:
                continue
            gate = routing.gates[token, choice].unsqueeze(1)
            out.index_add_(0, token, gate * expert(x[token]))
        return out


class StackedExperts(nn.Module):
    """The experts' weights stacked, [E, D, M] and [E, M, D], as MoE layers are
    written today (torchtitan, MegaBlocks): no per-expert modules, no shape
    that depends on the routing, so nothing waits for the device and
    torch.compile sees one graph.

    grouped: the (token, choice) pairs sorted by expert and multiplied by
    torch._grouped_mm, one call per matrix for every expert (the dropped pairs
    sorted after the last expert, outside every group);
    batched: each pair copied to its slot of an [E, C, D] buffer (C the
    capacity; dropped pairs to a spare row) and multiplied by torch.bmm."""

    def __init__(self, cfg, grouped):
        super().__init__()
        E, D, M = cfg["experts"], cfg["d_model"], cfg["ffn_dim"]
        self.grouped = grouped
        self.name = GROUPED if grouped else BATCHED
        self.activation = ACTIVATIONS[cfg["activation"]]()
        # nn.Linear's initialisation, per expert: uniform within 1/sqrt(fan_in).
        self.w1 = nn.Parameter(torch.empty(E, D, M).uniform_(-D ** -0.5, D ** -0.5))
        self.b1 = nn.Parameter(torch.empty(E, 1, M).uniform_(-D ** -0.5, D ** -0.5))
        self.w2 = nn.Parameter(torch.empty(E, M, D).uniform_(-M ** -0.5, M ** -0.5))
        self.b2 = nn.Parameter(torch.empty(E, 1, D).uniform_(-M ** -0.5, M ** -0.5))

    def forward(self, x, routing):
        S, D = x.shape
        E, K = self.w1.shape[0], routing.expert.shape[1]
        token = torch.arange(S, device=x.device).repeat_interleave(K)  # [S*K], token-major as expert.view(-1)
        expert, kept = routing.expert.reshape(-1), routing.kept.reshape(-1)
        gates = routing.gates.reshape(-1, 1).to(x.dtype)
        if self.grouped:
            key = torch.where(kept, expert, E)  # dropped pairs: after the last group
            order = key.argsort(stable=True)
            counts = torch.zeros(E + 1, dtype=torch.int32, device=x.device).scatter_add_(
                0, key, torch.ones_like(key, dtype=torch.int32))
            offsets = counts[:E].cumsum(0, dtype=torch.int32)
            dtype = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled() else x.dtype
            # Rows past the last group are left unwritten by torch._grouped_mm,
            # forward and backward: a where after each product (not a product
            # with a mask) passes neither their values on nor their gradients back.
            row_kept = kept[order].unsqueeze(1)
            rows = torch.where(row_kept, x[token[order]], 0).to(dtype)
            hidden = torch._grouped_mm(rows, self.w1.to(dtype), offs=offsets)
            hidden = self.activation(torch.where(row_kept, hidden + self.b1.to(dtype).squeeze(1)[expert[order]], 0))
            y = torch._grouped_mm(hidden, self.w2.to(dtype), offs=offsets)
            y = torch.where(row_kept, y + self.b2.to(dtype).squeeze(1)[expert[order]], 0)
            return torch.zeros_like(x).index_add_(0, token[order], (y * gates[order].to(y.dtype)).to(x.dtype))
        C = routing.capacity
        position = torch.where(kept, expert * C + routing.slot.reshape(-1), E * C)  # E * C: the spare row
        buffer = x.new_zeros(E * C + 1, D).index_copy(0, position, x[token])
        inputs = buffer[:E * C].view(E, C, D)
        y = torch.baddbmm(self.b2, self.activation(torch.baddbmm(self.b1, inputs, self.w1)), self.w2)
        y = torch.cat([y.reshape(E * C, D), y.new_zeros(1, D)])[position]  # each pair's output, 0 if dropped
        return torch.zeros_like(x).index_add_(0, token, y * gates)


class Router(nn.Module):
    def __init__(self, d_model, experts):
        super().__init__()
        self.gate = nn.Linear(d_model, experts, bias=False)

    def forward(self, x, cfg, training):
        # The router decides in fp32 even under autocast, as WideLab's does.
        with torch.autocast(device_type=x.device.type, enabled=False):
            return self.route(x.float(), cfg, training)

    def route(self, x, cfg, training):
        S, E, K = x.shape[0], cfg["experts"], cfg["top_k"]
        logits = self.gate(x)
        if training and cfg["router_noise_std"] > 0:
            logits = logits + torch.randn_like(logits) * cfg["router_noise_std"]
        probs = logits.softmax(dim=-1)
        gates, expert = probs.topk(K, dim=-1)  # [S, K]
        if cfg["renormalize_gates"]:
            gates = gates / gates.sum(dim=-1, keepdim=True)

        factor = cfg["capacity_factor"] if training else cfg["eval_capacity_factor"]
        capacity = S if factor <= 0 else max(1, min(S, math.ceil(K * factor * S / E)))
        # Slot of each (token, choice) in its expert: a running count in serving order.
        order = torch.arange(S, device=x.device)
        if cfg["routing_priority"] == "batch":
            order = torch.sort(probs.max(dim=-1).values, descending=True, stable=True).indices
        served = expert[order]  # [S, K] in priority order
        token_major = cfg["head"] == "language_model"
        queue = served.reshape(-1) if token_major else served.t().reshape(-1)
        one_hot = F.one_hot(queue, E)
        slot_in_queue = ((one_hot.cumsum(dim=0) - 1) * one_hot).sum(dim=1)
        slot_served = slot_in_queue.view(S, K) if token_major else slot_in_queue.view(K, S).t()
        slot = torch.empty_like(slot_served)
        slot[order] = slot_served
        kept = slot < capacity

        top1_share = F.one_hot(expert[:, 0], E).float().mean(dim=0)
        balance_loss = E * (top1_share * probs.mean(dim=0)).sum()
        return Routing(expert, gates, slot, kept, capacity, balance_loss)


class PathCombiner(nn.Module):
    """Y = beta X + sum_j alpha_j PathNorm_j(F_j), with optional leave-one-out features."""

    def __init__(self, cfg):
        super().__init__()
        n, D = cfg["paths"], cfg["d_model"]
        self.extra = cfg["path_extra_features"]
        m = 2 * n if self.extra else n
        self.norms = nn.ModuleList(nn.LayerNorm(D) for _ in range(m)) if cfg["path_norm"] else None
        alpha, beta = torch.full((m,), 1.0 / math.sqrt(2 * n)), torch.ones(1)
        if cfg["learnable_path_weights"]:
            self.alpha, self.beta = nn.Parameter(alpha), nn.Parameter(beta)
        else:
            self.register_buffer("alpha", alpha)
            self.register_buffer("beta", beta)

    def forward(self, x, features):
        if self.extra:
            total = sum(features)
            features = features + [(total - f) / (len(features) - 1) for f in features]
        if self.norms is not None:
            features = [norm(f) for norm, f in zip(self.norms, features)]
        return self.beta * x + sum(a * f for a, f in zip(self.alpha, features))


class WideLabTorch(nn.Module):
    def __init__(self, cfg, baseline):
        super().__init__()
        self.cfg = cfg
        D, L, n = cfg["d_model"], cfg["layers"], cfg["paths"]
        self.cls_token = cfg["head"] == "classification" and cfg["pooling"] == "cls"
        self.multi_path = n > 1 or cfg["path_norm"] or cfg["learnable_path_weights"]
        self.moe = cfg["experts"] > 1
        causal = cfg["head"] == "language_model"

        e = cfg["embedding_dim"] or D
        self.token = nn.Embedding(cfg["vocab_size"], e)
        self.project = nn.Linear(e, D) if cfg["embedding_dim"] else None
        self.position = nn.Embedding(cfg["max_len"] + (1 if self.cls_token else 0), D)
        self.cls = nn.Parameter(torch.zeros(D)) if self.cls_token else None
        self.dropout = nn.Dropout(cfg["dropout"])

        def attention():
            return nn.ModuleList(SelfAttention(D, cfg["heads"], cfg["head_dim"], cfg["dropout"], causal, baseline.sdpa)
                                 for _ in range(n))

        def ffn():
            if self.moe:
                return baseline.experts_module(cfg)
            return nn.ModuleList(FeedForward(D, cfg["ffn_dim"], cfg["activation"]) for _ in range(n))

        # A shared module is one object used by every block.
        def blocks_of(make, shared):
            first = make()
            return nn.ModuleList([first] if shared else [first] + [make() for _ in range(L - 1)])

        self.attention = blocks_of(attention, cfg["share_attention"])
        self.ffn = blocks_of(ffn, cfg["share_ffn"])
        self.router = blocks_of(lambda: Router(D, cfg["experts"]), cfg["share_router"]) if self.moe else None
        self.ln_att = blocks_of(lambda: nn.LayerNorm(D), cfg["share_layernorm"])
        self.ln_ffn = blocks_of(lambda: nn.LayerNorm(D), cfg["share_layernorm"])
        if self.multi_path:
            self.path_att = blocks_of(lambda: PathCombiner(cfg), cfg["share_layernorm"])
            self.path_ffn = blocks_of(lambda: PathCombiner(cfg), cfg["share_layernorm"])
        self.final_ln = nn.LayerNorm(D)
        self.pooler = nn.Linear(D, D) if cfg["head"] == "classification" and cfg["pooler"] else None
        out = cfg["num_classes"] if cfg["head"] == "classification" else cfg["vocab_size"]
        self.output = nn.Linear(D, out)

    @staticmethod
    def pick(modules, i):
        return modules[i if len(modules) > 1 else 0]

    def sublayer(self, h, raw, combiners, i):
        features = [self.dropout(f) for f in raw]
        if not self.multi_path:
            return h + features[0]
        return self.pick(combiners, i)(h, features)

    def forward(self, ids):
        cfg = self.cfg
        h = self.token(ids)
        if self.project is not None:
            h = self.project(h)
        if self.cls is not None:
            h = torch.cat([self.cls.expand(h.shape[0], 1, -1), h], dim=1)
        B, T, D = h.shape
        h = self.dropout(h + self.position(torch.arange(T, device=h.device)))

        balance_loss = torch.zeros((), device=h.device)
        routing = None
        L, G = cfg["layers"], cfg["routing_groups"]
        for i in range(L):
            x = self.pick(self.ln_att, i)(h)
            h = self.sublayer(h, [path(x) for path in self.pick(self.attention, i)], getattr(self, "path_att", None), i)
            x = self.pick(self.ln_ffn, i)(h)
            if self.moe:
                tokens = x.reshape(B * T, D)
                if i == 0 or (i * G) // L != ((i - 1) * G) // L:  # first block of its group
                    routing = self.pick(self.router, i)(tokens, cfg, self.training)
                    balance_loss = balance_loss + routing.balance_loss
                raw = [self.pick(self.ffn, i)(tokens, routing).view(B, T, D)]
            else:
                raw = [path(x) for path in self.pick(self.ffn, i)]
            h = self.sublayer(h, raw, getattr(self, "path_ffn", None), i)
        h = self.final_ln(h)

        if cfg["head"] == "language_model":
            return self.output(h), balance_loss
        pooled = h[:, 0] if self.cls is not None else h.mean(dim=1)
        if self.pooler is not None:
            pooled = torch.tanh(self.pooler(pooled))
        return self.output(pooled), balance_loss


# --- Encoder-decoder (model.head "translation") -----------------------------
#
# The dense one-path encoder-decoder of docs/model.md "Encoder-decoder", as a
# PyTorch user writes it from tests/reference/reference_decoder.py's math:
# pre-LN blocks, the encoder's final_ln output as the memory, a causal decoder
# self-attention, cross-attention to the memory, the decoder's final_ln, and
# logits tied to the token embedding (h @ embed.token.weight^T, no bias).
# Learned positions are shared by source and target; no embedding scale.
# Attention as the baseline says (F.scaled_dot_product_attention where torch
# has it).

def split_heads(x, heads):
    B, T, _ = x.shape
    return x.view(B, T, heads, -1).transpose(1, 2)  # [B, H, T, A]


def merge_heads(x):
    B, H, T, A = x.shape
    return x.transpose(1, 2).reshape(B, T, H * A)


class CachedSelfAttention(nn.Module):
    """Multi-head self-attention whose keys and values can be carried between
    calls: `past` (k, v) [B, H, t, A] is concatenated with this call's."""

    def __init__(self, d_model, heads, head_dim, dropout, sdpa):
        super().__init__()
        self.heads, self.dropout, self.sdpa = heads, dropout, sdpa
        self.qkv = nn.Linear(d_model, 3 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, d_model)

    def forward(self, x, causal=False, past=None):
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        dropout = self.dropout if self.training else 0.0
        context = attend(q, k, v, causal and past is None, dropout, self.sdpa)
        return self.out(merge_heads(context)), (k, v)


class CrossAttention(nn.Module):
    """Queries from the decoder, keys and values from the encoder's memory;
    `memory_kv` (computed once per source by `keys_values`) skips that part."""

    def __init__(self, d_model, heads, head_dim, dropout, sdpa):
        super().__init__()
        self.heads, self.dropout, self.sdpa = heads, dropout, sdpa
        self.q = nn.Linear(d_model, heads * head_dim)
        self.kv = nn.Linear(d_model, 2 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, d_model)

    def keys_values(self, memory):
        return tuple(split_heads(t, self.heads) for t in self.kv(memory).chunk(2, dim=-1))

    def forward(self, x, memory=None, memory_kv=None):
        k, v = memory_kv if memory_kv is not None else self.keys_values(memory)
        dropout = self.dropout if self.training else 0.0
        context = attend(split_heads(self.q(x), self.heads), k, v, False, dropout, self.sdpa)
        return self.out(merge_heads(context))


class EncoderBlock(nn.Module):
    def __init__(self, cfg, sdpa):
        super().__init__()
        D, p = cfg["d_model"], cfg["dropout"]
        self.ln_att, self.ln_ffn = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attention = CachedSelfAttention(D, cfg["heads"], cfg["head_dim"], p, sdpa)
        self.ffn = FeedForward(D, cfg["ffn_dim"], cfg["activation"])
        self.dropout = nn.Dropout(p)

    def forward(self, h):
        h = h + self.dropout(self.attention(self.ln_att(h))[0])
        return h + self.dropout(self.ffn(self.ln_ffn(h)))


class DecoderBlock(nn.Module):
    def __init__(self, cfg, sdpa):
        super().__init__()
        D, p = cfg["d_model"], cfg["dropout"]
        self.ln_att, self.ln_cross, self.ln_ffn = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.attention = CachedSelfAttention(D, cfg["heads"], cfg["head_dim"], p, sdpa)
        self.cross = CrossAttention(D, cfg["heads"], cfg["head_dim"], p, sdpa)
        self.ffn = FeedForward(D, cfg["ffn_dim"], cfg["activation"])
        self.dropout = nn.Dropout(p)

    def forward(self, h, memory=None, cache=None):
        """h [B, T, D]. With `cache` (a dict holding "cross": the memory's keys
        and values, and "self": the keys and values so far or None), h is the
        next position only, and the cache is updated in place."""
        attended, past = self.attention(self.ln_att(h), causal=True, past=cache["self"] if cache else None)
        h = h + self.dropout(attended)
        if cache is not None:
            cache["self"] = past
            h = h + self.dropout(self.cross(self.ln_cross(h), memory_kv=cache["cross"]))
        else:
            h = h + self.dropout(self.cross(self.ln_cross(h), memory))
        return h + self.dropout(self.ffn(self.ln_ffn(h)))


TRANSLATION_BASELINE_KEYS = {  # key: what the eager baseline needs
    "input": "tokens", "experts": 1, "paths": 1, "decoder_paths": 1, "embedding_dim": 0,
    "attention": "full", "attention_mix": [], "path_norm": False, "learnable_path_weights": False,
    "path_extra_features": False, "share_attention": False, "share_ffn": False, "share_layernorm": False,
}


def translation_baseline_refusal(cfg):
    """Why the eager encoder-decoder cannot stand for this configuration, or None."""
    odd = [f"model.{key} is {json.dumps(cfg.get(key))}, not {json.dumps(want)}"
           for key, want in TRANSLATION_BASELINE_KEYS.items() if cfg.get(key, want) != want]
    if not odd:
        return None
    return ("the eager PyTorch encoder-decoder is the dense one-path baseline (full attention, no experts, "
            "paths, path norms or sharing): " + "; ".join(odd))


class TranslationTorch(nn.Module):
    """The encoder-decoder; forward(source, target) -> (logits [B, T', V], 0)."""

    def __init__(self, cfg, baseline):
        super().__init__()
        refusal = translation_baseline_refusal(cfg)
        if refusal:
            raise ValueError(refusal)
        self.cfg = cfg
        D = cfg["d_model"]
        self.token = nn.Embedding(cfg["vocab_size"], D)
        self.position = nn.Embedding(cfg["max_len"], D)
        self.dropout = nn.Dropout(cfg["dropout"])
        self.encoder = nn.ModuleList(EncoderBlock(cfg, baseline.sdpa) for _ in range(cfg["layers"]))
        self.final_ln = nn.LayerNorm(D)
        self.decoder = nn.ModuleList(DecoderBlock(cfg, baseline.sdpa) for _ in range(cfg.get("decoder_layers", cfg["layers"])))
        self.decoder_final_ln = nn.LayerNorm(D)

    def embed(self, ids, start=0):
        positions = torch.arange(start, start + ids.shape[1], device=ids.device)
        return self.dropout(self.token(ids) + self.position(positions))

    def encode(self, source):
        h = self.embed(source)
        for block in self.encoder:
            h = block(h)
        return self.final_ln(h)  # the memory

    def logits(self, h):
        return self.decoder_final_ln(h) @ self.token.weight.t()  # tied, no bias

    def decode(self, target, memory):
        h = self.embed(target)
        for block in self.decoder:
            h = block(h, memory)
        return self.logits(h)

    def forward(self, source, target=None):
        # As `widelab-cli bench --mode train|infer`: the target is the source itself.
        target = source if target is None else target
        return self.decode(target, self.encode(source)), torch.zeros((), device=source.device)

    def start_cache(self, memory):
        """Per decoder block: the memory's cross-attention keys and values, once."""
        return [{"cross": block.cross.keys_values(memory), "self": None} for block in self.decoder]

    def step(self, tokens, position, cache):
        """Logits [B, V] of the next token after `tokens` [B] at `position`."""
        h = self.embed(tokens.unsqueeze(1), position)
        for block, block_cache in zip(self.decoder, cache):
            h = block(h, cache=block_cache)
        return self.logits(h).squeeze(1)

    @torch.no_grad()
    def greedy(self, source, length, start_id=2, end_id=None, cache=True):
        """Greedy translations [B, <= length] of `source` [B, S]: with the cache
        (one position a step) or by running the whole model on the prefix again
        each step (as widelab-cli's recomputing side does, the source included).
        Stops early only when every row has produced `end_id`."""
        B = source.shape[0]
        prefix = torch.full((B, 1), start_id, dtype=torch.long, device=source.device)
        finished = torch.zeros(B, dtype=torch.bool, device=source.device)
        if cache:
            memory_cache = self.start_cache(self.encode(source))
        for t in range(length):
            if cache:
                logits = self.step(prefix[:, t], t, memory_cache)
            else:
                logits = self(source, prefix)[0][:, -1]
            next_token = logits.argmax(dim=-1)
            if end_id is not None:
                finished |= next_token == end_id
                if bool(finished.all()):
                    break
            prefix = torch.cat([prefix, next_token.unsqueeze(1)], dim=1)
        return prefix[:, 1:]


GROUPED = "torch._grouped_mm over the pairs sorted by expert"
BATCHED = "torch.bmm over an [E, C, D] buffer"
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead")


def grouped_mm_refusal(device, dtype):
    """Why torch._grouped_mm cannot multiply the experts here, or None: it is
    tried once on a small case with groups of odd sizes and compared with the
    per-group products. On the CPU it is not used unless asked for: torch's
    CPU version is a fallback, slower than bmm (2.11)."""
    if not hasattr(torch, "_grouped_mm"):
        return f"torch {torch.__version__} has no torch._grouped_mm"
    try:
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(24, 32, generator=generator).to(device, dtype)
        b = torch.randn(3, 32, 16, generator=generator).to(device, dtype)
        offsets = torch.tensor([5, 5, 24], dtype=torch.int32, device=device)
        got = torch._grouped_mm(a, b, offs=offsets).float()
        want = torch.cat([a[:5] @ b[0], a[5:] @ b[2]]).float()
    except RuntimeError as error:
        return f"torch._grouped_mm fails on {device} in {dtype}: {str(error).splitlines()[0]}"
    if not torch.allclose(got, want, rtol=2e-2, atol=2e-1):
        return f"torch._grouped_mm gives wrong products on {device} in {dtype}"
    return None


class Baseline:
    """How this side is written. By default, as a PyTorch user writes a model
    in 2026 (nanoGPT, torchtitan): F.scaled_dot_product_attention where torch
    has it, experts stacked and multiplied in one call (grouped where torch
    and the GPU have torch._grouped_mm, else batched), AdamW fused on CUDA.
    hand_written: the earlier baseline, attention written out, experts in a
    loop, AdamW's default implementation; figures before 2026-12-03 were
    measured against it."""

    def __init__(self, hand_written, device, dtype, experts=None):
        self.hand_written = hand_written
        self.sdpa = HAS_SDPA and not hand_written
        if hand_written:
            self.experts = "loop"
        elif experts == "grouped":
            refusal = grouped_mm_refusal(device, dtype)
            if refusal:
                raise ValueError(f"--experts grouped: {refusal}")
            self.experts = "grouped"
        elif experts is None and device.type == "cuda" and grouped_mm_refusal(device, dtype) is None:
            self.experts = "grouped"
        else:
            self.experts = "batched"
        self.fused_adamw = (not hand_written and device.type == "cuda"
                            and "fused" in inspect.signature(torch.optim.AdamW).parameters)

    def experts_module(self, cfg):
        if self.experts == "loop":
            return LoopedExperts(cfg)
        return StackedExperts(cfg, grouped=self.experts == "grouped")

    def optimizer(self, parameters, lr):
        if self.fused_adamw:
            return torch.optim.AdamW(parameters, lr=lr, fused=True)
        return torch.optim.AdamW(parameters, lr=lr)

    def describe(self, cfg):
        """What this side runs, for the output."""
        experts = {"loop": LoopedExperts.name, "grouped": GROUPED, "batched": BATCHED}[self.experts]
        return {"hand_written": self.hand_written, "attention": SDPA if self.sdpa else HAND_WRITTEN,
                "experts": experts if cfg.get("experts", 1) > 1 else None,
                "optimizer": "AdamW, fused" if self.fused_adamw else "AdamW"}


def build_model(cfg, baseline):
    return (TranslationTorch if cfg["head"] == "translation" else WideLabTorch)(cfg, baseline)


def benchmark_config(cfg, seq):
    """As runBenchmark: max_len raised to the sequence when shorter."""
    return dict(cfg, max_len=max(cfg["max_len"], seq))


def trainable_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory(device):
    """(allocated, reserved) peaks in bytes: the CUDA caching allocator's, or the
    process's peak resident set for both on the CPU (as DeviceMemory.h)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return rss, rss


def profile_step(step, device, top):
    """Where one more step spends its time, as `widelab-cli bench --kernels` reports it: on a GPU the
    device time of the kernels and copies by the operator that launched them and by kernel, on the CPU
    each operator's self time; the `top` entries with most time."""
    from torch.profiler import ProfilerActivity, profile
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    synchronize(device)
    with profile(activities=activities) as prof:
        began = time.perf_counter()
        step()
        synchronize(device)
        span = time.perf_counter() - began

    def device_self(e):
        return e.self_device_time_total if hasattr(e, "self_device_time_total") else e.self_cuda_time_total

    def device_total(e):
        return e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total

    def annotation(e):  # a region marked on the GPU's timeline (the optimizer's step, a compiled graph): no kernel
        return getattr(e, "is_user_annotation", False)

    def ranked(rows):
        rows = sorted(rows, key=lambda row: -row["seconds"])
        return rows[:top]

    operators = []
    for e in prof.key_averages():
        if annotation(e) or (getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA")):
            continue  # the kernels themselves, listed below
        seconds = 1e-6 * (device_self(e) if cuda else e.self_cpu_time_total)
        if seconds > 0 or not cuda:  # on a GPU most operators launch nothing
            operators.append({"name": e.key, "calls": e.count, "seconds": seconds})
    kernels = {}
    if cuda:
        for e in prof.events():
            if str(getattr(e, "device_type", "")).endswith("CUDA") and not annotation(e):
                entry = kernels.setdefault(e.name, {"name": e.name, "calls": 0, "seconds": 0.0})
                entry["calls"] += 1
                entry["seconds"] += 1e-6 * device_total(e)
        if not kernels:  # versions that list kernels only under the operators that launched them
            for e in prof.events():
                for k in getattr(e, "kernels", []):
                    entry = kernels.setdefault(k.name, {"name": k.name, "calls": 0, "seconds": 0.0})
                    entry["calls"] += 1
                    entry["seconds"] += 1e-6 * k.duration
    total = sum(row["seconds"] for row in (kernels.values() if cuda else operators))
    return {"time": "device" if cuda else "host self", "seconds": total, "span_seconds": span,
            "by_operator": ranked(operators), "by_kernel": ranked(kernels.values()), "unavailable": None}


def run(cfg, mode, batch, seq, steps, warmup, device, baseline, bf16=False, compile_mode=None, kernels=0):
    """compile_mode: None (eager) or one of COMPILE_MODES; kernels: profile one more step (profile_step)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(0)
    model = build_model(cfg, baseline).to(device)
    train = mode == "train"
    model.train(train)
    parameters = trainable_parameters(model)
    forward = torch.compile(model, mode=compile_mode) if compile_mode else model
    # Drawn on the CPU, so that every device sees the same tokens.
    ids = torch.randint(cfg["vocab_size"], (batch, seq)).to(device)
    # A translation model predicts a [B, T] target too (its decoder reads the source: bench's protocol).
    lm = cfg["head"] in ("language_model", "translation")
    targets = torch.randint(cfg["vocab_size"], (batch, seq)) if lm else torch.randint(cfg["num_classes"], (batch,))
    targets = targets.to(device)
    optimizer = baseline.optimizer(model.parameters(), lr=1e-4)

    def autocast():
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16)

    def step():
        if not train:
            with torch.no_grad(), autocast():
                logits, _ = forward(ids)
            return logits.float().mean().item()
        optimizer.zero_grad()
        with autocast():
            logits, balance_loss = forward(ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            loss = loss + cfg["balance_loss_weight"] * balance_loss
        loss.backward()
        optimizer.step()
        return loss.item()

    def timed_step():
        synchronize(device)
        start = time.perf_counter()
        loss = step()
        synchronize(device)
        return time.perf_counter() - start, loss

    # With --compile the first warm-up steps compile: they are reported, not timed.
    warmup_seconds = [timed_step()[0] for _ in range(warmup)]
    times, loss = [], float("nan")
    for _ in range(steps):
        seconds, loss = timed_step()
        times.append(seconds)
    median = statistics.median(times)
    allocated, reserved = peak_memory(device)
    kernel_profile = profile_step(step, device, kernels) if kernels > 0 else None
    return {"mode": mode, "device": str(device), "dtype": "bf16" if bf16 else "fp32",
            "compile": compile_mode is not None, "compile_mode": compile_mode, "side": side_name(baseline, compile_mode),
            "torch": torch.__version__, **baseline.describe(cfg),
            "batch": batch, "sequence": seq, "steps": steps, "warmup": warmup,
            "threads": torch.get_num_threads(), "parameters": parameters,
            "warmup_seconds": warmup_seconds, "step_seconds": times, "step_seconds_median": median,
            "tokens_per_second": batch * seq / median,
            "peak_allocated_bytes": allocated, "peak_reserved_bytes": reserved, "loss": loss,
            "kernel_profile": kernel_profile}


def side_name(baseline, compile_mode):
    """The side's label in tables: eager, hand-written eager, or compile's mode."""
    name = f"torch.compile ({compile_mode})" if compile_mode else "eager"
    return "hand-written " + name if baseline.hand_written else name


DECODE_TARGET_TOKENS = (50, 200)  # as runDecodeBenchmark is called by `widelab-cli bench --mode decode`


def run_decode(cfg, batch, source_tokens, repeats, device, baseline, target_tokens=DECODE_TARGET_TOKENS):
    """Greedy decoding tokens/s with the key/value cache against recomputing the
    prefix, in core/benchmark/DecodeBenchmark.cpp's protocol: max_len raised to
    the longest length, the model seeded with 0 and in eval mode, `batch` random
    sources of `source_tokens` ids drawn after it, start id 2, an end id no
    token has (-1) so that every row runs to the full length while each step
    still reads its tokens back, and for each length the cached side's then the
    recomputing side's best of `repeats` (no separate warm-up: the first repeat
    is one). Each timing is the whole greedy call, encoding the source included.
    tokens/s = batch x target tokens / seconds."""
    cfg = dict(cfg, max_len=max([cfg["max_len"], source_tokens, *target_tokens]))
    torch.manual_seed(0)
    model = TranslationTorch(cfg, baseline).to(device)
    model.eval()
    source = torch.randint(cfg["vocab_size"], (batch, source_tokens)).to(device)
    rows = []
    for length in target_tokens:
        best = {}
        for cache in (True, False):
            seconds = math.inf
            for _ in range(repeats):
                synchronize(device)
                start = time.perf_counter()
                model.greedy(source, length, end_id=-1, cache=cache)  # reads every step's tokens
                synchronize(device)
                seconds = min(seconds, time.perf_counter() - start)
            best[cache] = seconds
        rows.append({"target_tokens": length,
                     "cached_tokens_per_second": batch * length / best[True],
                     "recomputed_tokens_per_second": batch * length / best[False],
                     "speedup": best[False] / best[True],
                     "cached_seconds": best[True], "recomputed_seconds": best[False]})
    return {"mode": "decode", "device": str(device), "torch": torch.__version__, **baseline.describe(cfg),
            "batch": batch, "source_tokens": source_tokens, "repeats": repeats, "threads": torch.get_num_threads(),
            "parameters": trainable_parameters(model), "rows": rows}


def main_decode(parser, args, cfg, name):
    """--mode decode: takes what `widelab-cli bench --mode decode` takes, with its defaults."""
    if args.warmup is not None or args.bf16 or args.compile or args.experts:
        parser.error("--mode decode takes --batch, --seq, --steps, --threads, --device, --hand-written and --json "
                     "(as widelab-cli bench --mode decode: best of --steps, the first one warming up)")
    if cfg["head"] != "translation":
        parser.error("--mode decode: the model is not a translation model (model.head \"translation\")")
    refusal = translation_baseline_refusal(cfg)
    if refusal:
        parser.error(refusal)
    batch = args.batch or 8
    source_tokens = args.seq or 50
    repeats = args.steps or 3
    device = torch.device(args.device)
    baseline = Baseline(args.hand_written, device, torch.float32)
    result = run_decode(cfg, batch, source_tokens, repeats, device, baseline)
    result["name"] = name
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{name}: greedy decoding in eager PyTorch {torch.__version__} on {device}, {batch} sources of "
          f"{source_tokens} tokens, {result['threads']} threads, best of {repeats}; attention: {result['attention']}")
    print(f"{'target tokens':>13} {'cached tok/s':>13} {'recomputed tok/s':>17} {'speedup':>8}")
    for row in result["rows"]:
        print(f"{row['target_tokens']:>13} {row['cached_tokens_per_second']:>13.1f} "
              f"{row['recomputed_tokens_per_second']:>17.1f} {row['speedup']:>7.2f}x")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--mode", choices=["train", "infer", "decode"], default="train",
                        help="decode: a translation model's greedy decoding, cached against recomputing")
    parser.add_argument("--batch", type=int, help="default 16 (decode: 8)")
    parser.add_argument("--seq", type=int, help="default min(max_len, 256) (decode: source tokens, 50)")
    parser.add_argument("--steps", type=int, help="timed steps, default 10 (decode: best of N, 3)")
    parser.add_argument("--warmup", type=int, help="default 2 (not for decode)")
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast for forward and loss")
    parser.add_argument("--compile", nargs="?", const="default", choices=COMPILE_MODES, metavar="MODE",
                        help="torch.compile the model (PyTorch 2) in MODE: " + ", ".join(COMPILE_MODES)
                        + " (default when no MODE is given)")
    parser.add_argument("--hand-written", action="store_true",
                        help="the earlier baseline: attention written out, experts in a loop, AdamW unfused")
    parser.add_argument("--experts", choices=["grouped", "batched"],
                        help="how stacked experts multiply (default: grouped on a GPU where torch._grouped_mm "
                             "works, else batched)")
    parser.add_argument("--kernels", type=int, default=0, metavar="N",
                        help="the N operators and kernels one more step spends most time in (device time on a GPU)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--params", action="store_true", help="print the trainable parameter count and exit")
    args = parser.parse_args(argv)

    cfg, name = resolve_config(args.config)
    if cfg["head"] == "translation" and not args.params:
        refusal = translation_baseline_refusal(cfg)
        if refusal:
            parser.error(refusal)
    if args.mode == "decode" and not args.params:
        torch.set_num_threads(args.threads or os.cpu_count())
        return main_decode(parser, args, cfg, name)
    seq = args.seq or min(cfg["max_len"], 256)
    cfg = benchmark_config(cfg, seq)
    if args.params:
        try:
            print(trainable_parameters(build_model(cfg, Baseline(args.hand_written, torch.device("cpu"), torch.float32))))
        except ValueError as refusal:
            parser.error(str(refusal))
        return 0
    args.batch = args.batch or 16
    args.steps = args.steps or 10
    args.warmup = 2 if args.warmup is None else args.warmup
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch {torch.__version__} has no usable CUDA device")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {args.device}: only cpu and cuda are supported")
    if args.compile:
        if not hasattr(torch, "compile"):
            parser.error(f"--compile needs PyTorch 2.0 or newer; this is torch {torch.__version__}")
        if args.warmup < 1:
            parser.error("--compile needs at least one warm-up step, in which it compiles")
    if args.hand_written and args.experts:
        parser.error("--hand-written runs the experts in a loop; --experts picks how stacked experts multiply")
    torch.set_num_threads(args.threads or os.cpu_count())
    try:
        baseline = Baseline(args.hand_written, device, torch.bfloat16 if args.bf16 else torch.float32, args.experts)
    except ValueError as refusal:
        parser.error(str(refusal))
    if args.kernels < 0:
        parser.error("--kernels: expected a count of 1 or more")
    result = run(cfg, args.mode, args.batch, seq, args.steps, args.warmup, device, baseline, args.bf16, args.compile,
                 args.kernels)
    result["name"] = name
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        written = ", ".join(f"{key} {result[key]}" for key in ("attention", "experts", "optimizer") if result[key])
        print(f"{name}: {args.mode} on {result['device']} in {result['dtype']} ({result['side']}: {written}), "
              f"batch {args.batch} x {seq} tokens, {result['threads']} threads: "
              f"{1e3 * result['step_seconds_median']:.1f} ms per step, "
              f"{result['tokens_per_second']:,.0f} tokens/s, peak memory {result['peak_allocated_bytes'] / 2**20:,.0f} MiB "
              f"(warm-up {sum(result['warmup_seconds']):.1f} s)")
        profiled = result["kernel_profile"]
        if profiled:
            for heading, rows in (("operator", profiled["by_operator"]), ("kernel", profiled["by_kernel"])):
                if rows:
                    print(f"\n{profiled['time']} time by {heading}, {1e3 * profiled['seconds']:.2f} ms in all:")
                    for row in rows:
                        print(f"  {1e3 * row['seconds']:9.3f} ms {row['calls']:6d}x  {row['name'][:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
