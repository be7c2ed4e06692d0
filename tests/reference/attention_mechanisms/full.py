"""Full softmax attention (Vaswani et al., 2017)."""

import math

import torch

NAME = "full"


def parameter_shapes(cfg, heads, positions):
    return {}


def mix(cfg, q, k, v, key_valid, causal, params):
    B, G, T, A = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(A)          # [B, G, T(query), T(key)]
    scores = scores.masked_fill(~key_valid.view(B, 1, 1, T), float("-inf"))
    if causal:
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
