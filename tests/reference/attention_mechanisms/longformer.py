"""Longformer attention (Beltagy et al., 2020): each query sees a sliding window
of `longformer_window` keys around it, plus `longformer_global_tokens` global
positions at the start of the sequence (the CLS token when there is one), which
see every key and are seen by every query.

Window of w keys, as in the Long Range Arena's Longformer: w - w//2 to the left
(the query itself included) and w//2 to the right: i - (w - w//2) < j <= i + w//2.
A query that sees no real key takes the value of position 0.
"""

import torch

from . import masked_mix

NAME = "longformer"


def parameter_shapes(cfg, heads, positions):
    return {}


def mix(cfg, q, k, v, key_valid, causal, params):
    T = q.shape[2]
    w = cfg["longformer_window"]
    g = cfg["longformer_global_tokens"]
    right = w // 2
    left = w - right
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    allowed = ((j - i) <= right) & ((i - j) < left)
    allowed = allowed | (i < g) | (j < g)
    return masked_mix(q, k, v, allowed.unsqueeze(0), key_valid, causal)
