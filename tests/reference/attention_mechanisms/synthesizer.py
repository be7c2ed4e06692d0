"""Synthesizer (Tay et al., 2021): attention weights synthesised without
query-key dot products.

    dense:             S = relu(q) W2 + b2      q = x W1 + b1 is the head's own
                                                query projection (W1 shared with
                                                it); W2 [A, positions], b2
                                                [positions] per head, first T
                                                columns
    random:            S = R                    R [positions, positions] per
                                                head, learned, first T x T
    factorized_random: S = R1 R2                R1 [positions, r], R2 [r,
                                                positions] per head
    context = softmax(S + mask) v

The mask hides padded keys, and future keys in a language model. Keys are never
used; the random variants use no query either.
"""

import torch

NAME = "synthesizer"


def parameter_shapes(cfg, heads, positions):
    variant = cfg["synthesizer_variant"]
    P, G = positions, heads
    if variant == "dense":
        return {"dense_weight": [G, cfg["head_dim"], P], "dense_bias": [G, P]}
    if variant == "random":
        return {"random": [G, P, P]}
    if variant == "factorized_random":
        r = cfg["synthesizer_rank"]
        return {"random_left": [G, P, r], "random_right": [G, r, P]}
    raise ValueError(f"unknown synthesizer_variant {variant!r}")


def mix(cfg, q, k, v, key_valid, causal, params):
    B, G, T, A = q.shape
    variant = cfg["synthesizer_variant"]
    if variant == "dense":
        W = params["dense_weight"][:, :, :T]                   # [G, A, T]
        b = params["dense_bias"][:, :T]                        # [G, T]
        scores = torch.relu(q) @ W.unsqueeze(0) + b.view(1, G, 1, T)   # [B, G, T, T]
    elif variant == "random":
        scores = params["random"][:, :T, :T].unsqueeze(0).expand(B, G, T, T)
    else:
        R = params["random_left"][:, :T] @ params["random_right"][:, :, :T]   # [G, T, T]
        scores = R.unsqueeze(0).expand(B, G, T, T)
    scores = scores.masked_fill(~key_valid.view(B, 1, 1, T), float("-inf"))
    if causal:
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
