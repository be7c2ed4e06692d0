#!/usr/bin/python3
"""The WideLab model families in plain eager PyTorch, for throughput comparisons.

This is the model a researcher would write with torch.nn from docs/model.md:
modules per path and per expert, loops over paths and experts, masks built
each call. It has the same architecture and parameter count as WideLab's C++
model (checked with --params against `widelab-cli params`), but it is not a
correctness reference (tests/reference/ is): initialisation differs, and
padding masks are not supported (the benchmark feeds full sequences).

Usage:
    python3 bench/widelab_torch.py CONFIG [--mode train|infer] [--batch B] [--seq T]
                                   [--steps N] [--warmup W] [--threads N]
                                   [--device cpu|cuda|cuda:N] [--bf16] [--compile] [--json]
    python3 bench/widelab_torch.py CONFIG --params [--seq T]

--bf16 runs forward and loss under torch.autocast to bfloat16, the router in
fp32 as WideLab does; --compile runs the model through torch.compile (PyTorch 2),
compiling during the warm-up steps, which the timed steps exclude. On CUDA every
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
    text = subprocess.run([cli, "check", name_or_path], check=True, capture_output=True, text=True).stdout
    document = json.loads(text)
    return document["model"], document.get("name", name_or_path)


ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


class SelfAttention(nn.Module):
    """Multi-head self-attention with head_dim independent of d_model."""

    def __init__(self, d_model, heads, head_dim, dropout, causal):
        super().__init__()
        self.heads, self.head_dim, self.causal = heads, head_dim, causal
        self.qkv = nn.Linear(d_model, 3 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # [B, H, T, T]
        if self.causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        context = (weights @ v).transpose(1, 2).reshape(B, T, self.heads * self.head_dim)
        return self.out(context)


class FeedForward(nn.Sequential):
    def __init__(self, d_model, ffn_dim, activation):
        super().__init__(nn.Linear(d_model, ffn_dim), ACTIVATIONS[activation](), nn.Linear(ffn_dim, d_model))


class Routing:
    """One routing call's decisions, reused by the other blocks of a group."""

    def __init__(self, expert, gates, kept, balance_loss):
        self.expert, self.gates, self.kept, self.balance_loss = expert, gates, kept, balance_loss


class MixtureOfExperts(nn.Module):
    """Top-k experts with capacity (GShard / V-MoE style), experts in a loop."""

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
        return Routing(expert, gates, kept, balance_loss)


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
    def __init__(self, cfg):
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
            return nn.ModuleList(SelfAttention(D, cfg["heads"], cfg["head_dim"], cfg["dropout"], causal)
                                 for _ in range(n))

        def ffn():
            if self.moe:
                return MixtureOfExperts(cfg)
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


def run(cfg, mode, batch, seq, steps, warmup, device, bf16=False, compiled=False):
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(0)
    model = WideLabTorch(cfg).to(device)
    train = mode == "train"
    model.train(train)
    parameters = trainable_parameters(model)
    forward = torch.compile(model) if compiled else model
    # Drawn on the CPU, so that every device sees the same tokens.
    ids = torch.randint(cfg["vocab_size"], (batch, seq)).to(device)
    lm = cfg["head"] == "language_model"
    targets = torch.randint(cfg["vocab_size"], (batch, seq)) if lm else torch.randint(cfg["num_classes"], (batch,))
    targets = targets.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

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
    return {"mode": mode, "device": str(device), "dtype": "bf16" if bf16 else "fp32", "compile": compiled,
            "torch": torch.__version__, "batch": batch, "sequence": seq, "steps": steps, "warmup": warmup,
            "threads": torch.get_num_threads(), "parameters": parameters,
            "warmup_seconds": warmup_seconds, "step_seconds": times, "step_seconds_median": median,
            "tokens_per_second": batch * seq / median,
            "peak_allocated_bytes": allocated, "peak_reserved_bytes": reserved, "loss": loss}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--mode", choices=["train", "infer"], default="train")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast for forward and loss")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--params", action="store_true", help="print the trainable parameter count and exit")
    args = parser.parse_args(argv)

    cfg, name = resolve_config(args.config)
    seq = args.seq or min(cfg["max_len"], 256)
    cfg = benchmark_config(cfg, seq)
    if args.params:
        print(trainable_parameters(WideLabTorch(cfg)))
        return 0
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
    torch.set_num_threads(args.threads or os.cpu_count())
    result = run(cfg, args.mode, args.batch, seq, args.steps, args.warmup, device, args.bf16, args.compile)
    result["name"] = name
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        side = "torch.compile" if args.compile else "eager"
        print(f"{name}: {args.mode} on {result['device']} in {result['dtype']} ({side}), batch {args.batch} x {seq} "
              f"tokens, {result['threads']} threads: {1e3 * result['step_seconds_median']:.1f} ms per step, "
              f"{result['tokens_per_second']:,.0f} tokens/s, peak memory {result['peak_allocated_bytes'] / 2**20:,.0f} MiB "
              f"(warm-up {sum(result['warmup_seconds']):.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
