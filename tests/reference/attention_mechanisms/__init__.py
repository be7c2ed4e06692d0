"""Reference attention mechanisms (docs/attention.md), one module per mechanism.

Each module defines
    NAME                                   the value of model.attention
    parameter_shapes(cfg, heads, positions) -> {suffix: shape}
        the trainable parameters and buffers of one mechanism module mixing
        `heads` heads (of every path) at most `positions` positions (CLS
        included); stored as "attention.<i>.mix.<g>.<suffix>"
    mix(cfg, q, k, v, key_valid, causal, params) -> context
        q, k, v [B, G, T, A]; key_valid [B, T] bool (True for real tokens);
        causal: query i may only see keys j <= i; params: suffix -> tensor.
        Returns the context [B, G, T, A].

Modules are found by listing this folder: a new mechanism is a new file.
Written from the papers, without looking at the C++.
"""

import importlib
import pkgutil

import torch


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



MECHANISMS = {}
for _info in pkgutil.iter_modules(__path__):
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    MECHANISMS[_module.NAME] = _module


def head_mechanisms(cfg):
    """The mechanism of each head of one path: model.attention for all, or
    model.attention_mix spread over the heads in equal consecutive shares."""
    H = cfg["heads"]
    if cfg.get("attention", "full") != "mixed":
        return [cfg.get("attention", "full")] * H
    mix = cfg["attention_mix"]
    share = H // len(mix)
    return [mix[h // share] for h in range(H)]


def groups(cfg):
    """[(name, head indices among the n*H heads of every path)], one per mechanism
    in the order the mechanisms first appear among the heads."""
    per_head = head_mechanisms(cfg)
    names = []
    for name in per_head:
        if name not in names:
            names.append(name)
    n, H = cfg["paths"], cfg["heads"]
    return [(name, [p * H + h for p in range(n) for h in range(H) if per_head[h] == name])
            for name in names]
