"""Local attention (Liu et al., 2018): softmax attention within non-overlapping
blocks of `local_block_size` consecutive positions (the last block may be short).

A query that sees no real key (a padded query in a block of padding) takes the
value of position 0 (weight 1 on key 0), so that every row is a distribution.
"""

import torch

NAME = "local"


def parameter_shapes(cfg, heads, positions):
    return {}


def masked_mix(q, k, v, allowed, key_valid, causal):
    """softmax over the keys `allowed` [G or 1, T, T] (bool) lets each query see,
    less padded keys (and future ones when causal); rows that see nothing put
    weight 1 on key 0."""
    B, G, T, A = q.shape
    see = allowed.unsqueeze(0) & key_valid.view(B, 1, 1, T)           # [B, G|1, T, T]
    if causal:
        see = see & torch.ones(T, T, dtype=torch.bool).tril()
    see = see.expand(B, G, T, T)
    scores = (q @ k.transpose(-2, -1)) / A ** 0.5
    scores = scores.masked_fill(~see, float("-inf"))
    none = ~see.any(-1, keepdim=True)                                 # [B, G, T, 1]
    first = torch.zeros(T, dtype=torch.bool)
    first[0] = True
    scores = torch.where(none & first, torch.zeros_like(scores), scores)
    return torch.softmax(scores, dim=-1) @ v


def mix(cfg, q, k, v, key_valid, causal, params):
    T = q.shape[2]
    b = cfg["local_block_size"]
    block = torch.arange(T) // b
    allowed = (block.view(T, 1) == block.view(1, T)).unsqueeze(0)     # [1, T, T]
    return masked_mix(q, k, v, allowed, key_valid, causal)
