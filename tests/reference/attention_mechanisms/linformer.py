"""Linformer (Wang et al., 2020): keys and values projected along the sequence.

    K' = E^T K,  V' = E^T V            E [T, k]: the first T rows of a learned
                                       [positions, k] projection
    context = softmax(q K'^T / sqrt(A)) V'

One E for keys and values and for every head of the module (the Long Range
Arena's setting, which shares one "low-rank kernel"). A padded key's row of E
is zero, so padding reaches neither K' nor V'. Not causal: every projected key
mixes the whole sequence.
"""

import math

import torch

NAME = "linformer"


def parameter_shapes(cfg, heads, positions):
    return {"projection": [positions, cfg["linformer_k"]]}


def mix(cfg, q, k, v, key_valid, causal, params):
    if causal:
        raise ValueError("linformer cannot be causal")
    B, G, T, A = q.shape
    E = params["projection"][:T]                               # [T, k]
    E = E.unsqueeze(0) * key_valid.to(q.dtype).view(B, T, 1)   # [B, T, k], padded rows 0
    E = E.unsqueeze(1)                                         # [B, 1, T, k]
    k_proj = E.transpose(-2, -1) @ k                           # [B, G, k, A]
    v_proj = E.transpose(-2, -1) @ v                           # [B, G, k, A]
    scores = q @ k_proj.transpose(-2, -1) / math.sqrt(A)       # [B, G, T, k]
    return torch.softmax(scores, dim=-1) @ v_proj
