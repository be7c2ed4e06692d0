"""Sparse Sinkhorn attention (Tay et al., 2020a): sorted block attention.

The sequence is cut into N = ceil(T / b) blocks of b positions (the last one
completed with padding). For each head:

    summary_j = sum of the real keys of block j                 [A]
    logits[i, :] = summary_i W + c, first N entries              W [A, Nmax], c [Nmax]
    S = Sinkhorn(logits / tau): n rounds of (rows, columns)
        normalisation in log space, then a row softmax           [N, N], rows sum to 1
    sorted keys of block i:   K~_i[m] = sum_j S[i, j] K_j[m]     (padded keys and
    sorted values of block i: V~_i[m] = sum_j S[i, j] V_j[m]      values zeroed first)

A query in block i attends, with one softmax, to the b keys of its own block
(padded ones hidden) and to the b sorted keys of block i:

    p = softmax([q K_i^T, q K~_i^T] / sqrt(A))
    context = p_local V_i + p_sorted V~_i

Not causal (a block's sorting row uses its whole summary).
"""

import math

import torch

NAME = "sinkhorn"


def num_blocks(T, b):
    return (T + b - 1) // b


def parameter_shapes(cfg, heads, positions):
    n_max = num_blocks(positions, cfg["sinkhorn_block_size"])
    return {"sort_weight": [heads, cfg["head_dim"], n_max], "sort_bias": [heads, n_max]}


def sinkhorn(logits, iterations):
    """Row-stochastic (and, with iterations, near doubly stochastic) [.., N, N]."""
    la = logits
    for _ in range(iterations):
        la = la - torch.logsumexp(la, dim=-1, keepdim=True)
        la = la - torch.logsumexp(la, dim=-2, keepdim=True)
    return torch.softmax(la, dim=-1)


def mix(cfg, q, k, v, key_valid, causal, params):
    if causal:
        raise ValueError("sinkhorn cannot be causal here")
    B, G, T, A = q.shape
    b = cfg["sinkhorn_block_size"]
    N = num_blocks(T, b)
    pad = N * b - T
    valid = torch.cat([key_valid, torch.zeros(B, pad, dtype=torch.bool)], dim=1)   # [B, N*b]

    def blocks(x):
        x = torch.cat([x, x.new_zeros(B, G, pad, A)], dim=2)
        return x.view(B, G, N, b, A)

    keep = valid.to(q.dtype).view(B, 1, N, b, 1)
    qb, kb, vb = blocks(q), blocks(k) * keep, blocks(v) * keep   # [B, G, N, b, A]

    summary = kb.sum(dim=3)                                       # [B, G, N, A]
    W = params["sort_weight"][:, :, :N]                           # [G, A, N]
    c = params["sort_bias"][:, :N]                                # [G, N]
    logits = summary @ W.unsqueeze(0) + c.view(1, G, 1, N)        # [B, G, N(i), N(j)]
    S = sinkhorn(logits / cfg["sinkhorn_temperature"], cfg["sinkhorn_iterations"])

    # sorted block i, position m: sum over j of S[i, j] * block j, position m
    k_sorted = torch.einsum("bgij,bgjma->bgima", S, kb)
    v_sorted = torch.einsum("bgij,bgjma->bgima", S, vb)

    scale = 1.0 / math.sqrt(A)
    local = torch.einsum("bgnta,bgnsa->bgnts", qb, kb) * scale    # [B, G, N, b, b]
    local = local.masked_fill(~valid.view(B, 1, N, 1, b), float("-inf"))
    sorted_scores = torch.einsum("bgnta,bgnsa->bgnts", qb, k_sorted) * scale
    p = torch.softmax(torch.cat([local, sorted_scores], dim=-1), dim=-1)
    out = p[..., :b] @ vb + p[..., b:] @ v_sorted                 # [B, G, N, b, A]
    return out.reshape(B, G, N * b, A)[:, :, :T]
