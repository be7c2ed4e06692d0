"""The mixing step of every attention mechanism (docs/attention.md, docs/attention/*.md).

Each mechanism is a module whose parameters and buffers are those of
`attention.{i}.mix.{g}` in the export. `mix(q, k, v, ctx)` takes one head group's
queries, keys and values [B, G, T, A] and returns its context [B, G, T, A] and,
when `ctx.want_map`, the [B, G, T, T] weights the context equals `map @ v`.

Sparse patterns (local, Longformer, BigBird, Sparse Transformer) are computed here
over the whole [T, T] grid with the pattern as a mask: the same weights as
WideLab's blocked computation, at quadratic cost.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MASKED = -1.0e9  # added to the score of a key a query must not see (docs/model.md)


class MixContext:
    """What every mechanism may need besides q, k, v.

    key_valid: [B, T] bool (True: a real key) or None when every key is real;
    bias: additive mask broadcastable to [B, 1, T, T] (padding and, causal, the future) or None;
    causal: a language model; dropout: the probability in training, 0 in evaluation;
    want_map: return the attention map too.
    """

    def __init__(self, key_valid, bias, causal, dropout, want_map):
        self.key_valid = key_valid
        self.bias = bias
        self.causal = causal
        self.dropout = dropout
        self.want_map = want_map


def _dropout(x, ctx):
    return F.dropout(x, ctx.dropout, True) if ctx.dropout > 0 else x


class Full(nn.Module):
    def mix(self, q, k, v, ctx):
        scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)
        if ctx.bias is not None:
            scores = scores + ctx.bias
        probs = torch.softmax(scores, -1)
        return _dropout(probs, ctx) @ v, probs


def _kernel_attention(phi_q, phi_k, v, causal, eps, floor, want_map):
    """sum_j w_ij v_j / (sum_j w_ij + eps), w_ij = phi(q_i) . phi(k_j) (j <= i when causal)."""
    if causal:
        T = phi_q.shape[2]
        weights = (phi_q @ phi_k.transpose(-2, -1)) * torch.ones(T, T, dtype=phi_q.dtype).tril()
        numerator = weights @ v
        normaliser = weights.sum(-1, keepdim=True)
    else:
        weights = None
        numerator = phi_q @ (phi_k.transpose(-2, -1) @ v)
        normaliser = phi_q @ phi_k.sum(2).unsqueeze(-1)
    normaliser = normaliser + eps
    if floor > 0:
        normaliser = normaliser.clamp_min(floor)
    attention_map = None
    if want_map:
        if weights is None:
            weights = phi_q @ phi_k.transpose(-2, -1)
        attention_map = weights / normaliser
    return numerator / normaliser, attention_map


class Linear(nn.Module):
    EPS = 1e-6

    def mix(self, q, k, v, ctx):
        phi_q = F.elu(q) + 1.0
        phi_k = F.elu(k) + 1.0
        if ctx.key_valid is not None:
            phi_k = phi_k.masked_fill(~ctx.key_valid.view(k.shape[0], 1, k.shape[2], 1), 0.0)
        return _kernel_attention(phi_q, phi_k, v, ctx.causal, self.EPS, 0.0, ctx.want_map)


class Performer(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.register_buffer("features", torch.zeros(options["performer_features"], head_dim))

    def mix(self, q, k, v, ctx):
        B, _, T, A = q.shape
        w = self.features.to(q.dtype)
        m = w.shape[0]
        data_scale = A ** -0.25

        def exponents(x):
            scaled = x * data_scale
            return scaled @ w.t() - scaled.pow(2).sum(-1, keepdim=True) * 0.5

        feature_scale = 1.0 / math.sqrt(m)
        hq = exponents(q)
        phi_q = torch.exp(hq - hq.max(-1, keepdim=True)[0]) * feature_scale
        hk = exponents(k)
        if ctx.key_valid is not None:
            hk = hk.masked_fill(~ctx.key_valid.view(B, 1, T, 1), float("-inf"))
        if ctx.causal:
            shift = (w.pow(2).sum(-1).max() * 0.5).view(1, 1, 1, 1)
        else:
            shift = hk.amax(dim=(2, 3), keepdim=True).clamp_min(-1e30)
        phi_k = torch.exp(hk - shift) * feature_scale
        return _kernel_attention(phi_q, phi_k, v, ctx.causal, 0.0, 1e-30, ctx.want_map)


class Linformer(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.projection = nn.Parameter(torch.zeros(positions, options["linformer_k"]))

    def mix(self, q, k, v, ctx):
        B, _, T, A = q.shape
        E = self.projection[:T]
        if ctx.key_valid is not None:
            E = E.unsqueeze(0) * ctx.key_valid.to(q.dtype).view(B, 1, T, 1)
        Et = E.transpose(-2, -1)
        scores = (q * (1.0 / math.sqrt(A))) @ (Et @ k).transpose(-2, -1)
        probs = torch.softmax(scores, -1)
        dropped = _dropout(probs, ctx)
        return dropped @ (Et @ v), (probs @ Et if ctx.want_map else None)


def _pattern_mix(q, k, v, ctx, allowed, global_queries):
    """Softmax attention restricted to a pattern (docs/attention/local.md and its siblings).

    allowed: [G or 1, T, T] bool, the keys each non-global query's pattern lets it see;
    global_queries: [T] bool, the queries that see every key. A query sees a key when the
    pattern allows it, the key is real, and (causal) the key is not later. A query that
    sees no key takes the value of position 0 (weight 1 on key 0 in the map).
    """
    B, G, T, A = q.shape
    see = allowed.unsqueeze(0) | global_queries.view(1, 1, T, 1)
    if ctx.key_valid is not None:
        see = see & ctx.key_valid.view(B, 1, 1, T)
    if ctx.causal:
        see = see & torch.ones(T, T, dtype=torch.bool).tril()
    see = see.expand(B, G, T, T)
    none = ~see.any(-1, keepdim=True)
    scores = (q * (1.0 / math.sqrt(A))) @ k.transpose(-2, -1)
    scores = scores.masked_fill(~see, float("-inf")).masked_fill(none, 0.0)
    probs = torch.softmax(scores, -1).masked_fill(none, 0.0)
    fallback = none.to(q.dtype)
    context = _dropout(probs, ctx) @ v + fallback * v[:, :, :1]
    attention_map = None
    if ctx.want_map:
        first = torch.zeros(T, dtype=q.dtype)
        first[0] = 1.0
        attention_map = probs + fallback * first
    return context, attention_map


def _blocks(T, b):
    return torch.arange(T) // b


class Local(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.block = options["local_block_size"]

    def mix(self, q, k, v, ctx):
        T = q.shape[2]
        block = _blocks(T, min(self.block, T))
        allowed = (block.view(T, 1) == block.view(1, T)).unsqueeze(0)
        return _pattern_mix(q, k, v, ctx, allowed, torch.zeros(T, dtype=torch.bool))


class Longformer(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.window = options["longformer_window"]
        self.globals = options["longformer_global_tokens"]

    def mix(self, q, k, v, ctx):
        T = q.shape[2]
        right = self.window // 2
        left = self.window - right
        g = min(self.globals, T)
        i = torch.arange(T).view(T, 1)
        j = torch.arange(T).view(1, T)
        allowed = ((j - i <= right) & (i - j < left)) | (j < g)
        return _pattern_mix(q, k, v, ctx, allowed.unsqueeze(0), torch.arange(T) < g)


class BigBird(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.block = options["bigbird_block_size"]
        blocks = (positions + self.block - 1) // self.block
        self.register_buffer("random_blocks",
                             torch.full((heads, blocks, options["bigbird_random_blocks"]), -1, dtype=torch.long))

    def mix(self, q, k, v, ctx):
        G, T = q.shape[1], q.shape[2]
        b = self.block
        nb = (T + b - 1) // b
        n = torch.arange(nb).view(nb, 1)
        fixed = torch.cat([n - 1, n, n + 1, torch.zeros_like(n), torch.full_like(n, nb - 1)], 1)  # [nb, 5]
        random = self.random_blocks[:, :nb]
        if random.shape[1] < nb:
            pad = torch.full((G, nb - random.shape[1], random.shape[2]), -1, dtype=torch.long)
            random = torch.cat([random, pad], 1)
        listed = torch.cat([fixed.unsqueeze(0).expand(G, nb, 5), random], 2)  # [G, nb, 5 + r]
        # [G, nb (query block), nb (key block)]: the key blocks each query block sees
        sees = ((listed.unsqueeze(-1) == torch.arange(nb).view(1, 1, 1, nb)) & (listed.unsqueeze(-1) >= 0)).any(2)
        block = _blocks(T, b)
        allowed = sees[:, block][:, :, block]  # [G, T, T]
        global_queries = (block == 0) | (block == nb - 1)
        return _pattern_mix(q, k, v, ctx, allowed, global_queries)


class Sparse(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.strided = options["sparse_pattern"] == "strided"
        self.block = options["sparse_block_size"]
        self.summary = options["sparse_summary"]

    def mix(self, q, k, v, ctx):
        T = q.shape[2]
        l = self.block
        i = torch.arange(T).view(T, 1)
        j = torch.arange(T).view(1, T)
        if self.strided:
            allowed = ((i - j).abs() < l) | ((i - j) % l == 0)
        else:
            allowed = (i // l == j // l) | (j % l >= l - self.summary)
        return _pattern_mix(q, k, v, ctx, allowed.unsqueeze(0), torch.zeros(T, dtype=torch.bool))


class Sinkhorn(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.block = options["sinkhorn_block_size"]
        self.iterations = options["sinkhorn_iterations"]
        self.temperature = options["sinkhorn_temperature"]
        blocks = (positions + self.block - 1) // self.block
        self.sort_weight = nn.Parameter(torch.zeros(heads, head_dim, blocks))
        self.sort_bias = nn.Parameter(torch.zeros(heads, blocks))

    def mix(self, q, k, v, ctx):
        B, G, T, A = q.shape
        b = self.block
        N = (T + b - 1) // b
        pad = N * b - T
        valid = ctx.key_valid if ctx.key_valid is not None else torch.ones(B, T, dtype=torch.bool)
        valid = torch.cat([valid, torch.zeros(B, pad, dtype=torch.bool)], 1)

        def blocks(x):  # [B, G, T, A] -> [B, G, N, b, A]
            return F.pad(x, (0, 0, 0, pad)).reshape(B, G, N, b, A)

        keep = valid.to(q.dtype).view(B, 1, N, b, 1)
        qb, kb, vb = blocks(q), blocks(k) * keep, blocks(v) * keep
        logits = kb.sum(3) @ self.sort_weight[:, :, :N].unsqueeze(0) + self.sort_bias[:, :N].view(1, G, 1, N)
        log_alpha = logits / self.temperature
        for _ in range(self.iterations):
            log_alpha = log_alpha - torch.logsumexp(log_alpha, -1, keepdim=True)
            log_alpha = log_alpha - torch.logsumexp(log_alpha, -2, keepdim=True)
        S = torch.softmax(log_alpha, -1)  # [B, G, N, N]
        k_sorted = (S @ kb.reshape(B, G, N, b * A)).view(B, G, N, b, A)
        v_sorted = (S @ vb.reshape(B, G, N, b * A)).view(B, G, N, b, A)
        qs = qb * (1.0 / math.sqrt(A))
        local = (qs @ kb.transpose(-2, -1)).masked_fill(~valid.view(B, 1, N, 1, b), float("-inf"))
        sorted_scores = qs @ k_sorted.transpose(-2, -1)
        probs = torch.softmax(torch.cat([local, sorted_scores], -1), -1)
        dropped = _dropout(probs, ctx)
        context = dropped[..., :b] @ vb + dropped[..., b:] @ v_sorted
        context = context.reshape(B, G, N * b, A)[:, :, :T]
        attention_map = None
        if ctx.want_map:
            p_local, p_sorted = probs[..., :b], probs[..., b:]
            eye = torch.eye(N, dtype=q.dtype).view(1, 1, N, 1, N, 1)
            grid = p_sorted.unsqueeze(4) * S.view(B, G, N, 1, N, 1) + eye * p_local.unsqueeze(4)
            grid = grid * valid.to(q.dtype).view(B, 1, 1, 1, N, b)
            attention_map = grid.reshape(B, G, N * b, N * b)[:, :, :T, :T]
        return context, attention_map


class Synthesizer(nn.Module):
    def __init__(self, heads, head_dim, positions, options):
        super().__init__()
        self.variant = options["synthesizer_variant"]
        rank = options["synthesizer_rank"]
        G, P, A = heads, positions, head_dim
        if self.variant == "dense":
            self.dense_weight = nn.Parameter(torch.zeros(G, A, P))
            self.dense_bias = nn.Parameter(torch.zeros(G, P))
        elif self.variant == "random":
            self.random = nn.Parameter(torch.zeros(G, P, P))
        else:
            self.random_left = nn.Parameter(torch.zeros(G, P, rank))
            self.random_right = nn.Parameter(torch.zeros(G, rank, P))

    def mix(self, q, k, v, ctx):
        B, G, T, _ = q.shape
        if self.variant == "dense":
            scores = F.relu(q) @ self.dense_weight[:, :, :T].unsqueeze(0) + self.dense_bias[:, :T].view(1, G, 1, T)
        elif self.variant == "random":
            scores = self.random[:, :T, :T].unsqueeze(0)
        else:
            scores = (self.random_left[:, :T] @ self.random_right[:, :, :T]).unsqueeze(0)
        if ctx.bias is not None:
            scores = scores + ctx.bias
        probs = torch.softmax(scores.expand(B, G, T, T), -1)
        return _dropout(probs, ctx) @ v, probs


def _full(heads, head_dim, positions, options):
    return Full()


def _linear(heads, head_dim, positions, options):
    return Linear()


MECHANISM_MODULES = {
    "full": _full, "linear": _linear, "performer": Performer, "linformer": Linformer,
    "local": Local, "longformer": Longformer, "bigbird": BigBird, "sparse": Sparse,
    "sinkhorn": Sinkhorn, "synthesizer": Synthesizer,
}


def make_mechanism(name, heads, head_dim, positions, options):
    """The module of mechanism `name` for a group of `heads` heads."""
    return MECHANISM_MODULES[name](heads, head_dim, positions, options)
