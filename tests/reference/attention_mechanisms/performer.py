"""Performer attention, FAVOR+ (Choromanski et al., 2020, "Rethinking Attention
with Performers").

The softmax kernel exp(q.k / sqrt(A)) is estimated with m positive random
features: with x' = x / A^(1/4) (so that q'.k' = q.k / sqrt(A)),

    phi(x) = exp(-|x'|^2 / 2) / sqrt(m) * [exp(w_1.x'), ..., exp(w_m.x')]

where the rows w_i of the [m, A] matrix W are orthogonal random features
(blocks of A orthonormal rows, each row rescaled to the length of a Gaussian
vector in A dimensions, so that each w_i is marginally N(0, I)). Then

    out_i = sum_j phi(q_i).phi(k_j) v_j / sum_j phi(q_i).phi(k_j)

over the keys j that query i may see (real keys; j <= i when causal).

W is not trained: the model draws it (and redraws it on a schedule) and keeps
it as a buffer, "features" [m, A], shared by the module's heads. This module
only uses it, so it needs no random numbers of its own.

Written clearly with the explicit [T, T] estimate of the attention matrix and
without any numerical shifts; the C++ never forms the matrix.
"""

import torch

NAME = "performer"


def parameter_shapes(cfg, heads, positions):
    return {"features": [cfg["performer_features"], cfg["head_dim"]]}


def positive_features(x, w):
    """x [B, G, T, A], w [m, A] -> phi(x) [B, G, T, m]."""
    A = x.shape[-1]
    m = w.shape[0]
    scaled = x / A ** 0.25
    projections = scaled @ w.transpose(0, 1)                           # [B, G, T, m]
    squared_norm = (scaled * scaled).sum(-1, keepdim=True) / 2.0       # [B, G, T, 1]
    return torch.exp(projections - squared_norm) / m ** 0.5


def mix(cfg, q, k, v, key_valid, causal, params):
    B, G, T, A = q.shape
    w = params["features"].detach()
    estimate = positive_features(q, w) @ positive_features(k, w).transpose(-2, -1)  # [B, G, T, T]
    allowed = key_valid.view(B, 1, 1, T).expand(B, G, T, T)
    if causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    estimate = estimate * allowed.to(estimate.dtype)
    return (estimate @ v) / estimate.sum(-1, keepdim=True)
