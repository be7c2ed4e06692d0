#!/usr/bin/env python3
"""Independent PyTorch reference for the WideLab model (docs/model.md).

Usage:
    python3 reference_model.py CASE.json CASE.pt OUT.pt
    python3 reference_model.py --self-test

CASE.json: {"model": {every key of docs/model.md, resolved}, "mode": "train" | "eval"}
CASE.pt:   dict str -> Tensor with "param.<name>" for every parameter and buffer,
           "input.ids" [B, T] int64, "input.mask" [B, T] bool (optional),
           or, when model.input is "image", "input.pixels" [B, C, H, W] float
           (normalised; no mask),
           "input.targets" [B] (classification) or [B, T] (language_model) int64.
OUT.pt:    dict str -> Tensor: "logits", "balance_loss", "loss", "grad.<name>" for
           every trainable parameter, and "route.<t>.expert|kept|gates" per routing call.

Written from the specification only, for clarity rather than speed. Dropout and
router noise are not implemented: reference cases must set both to 0 when the
mode is "train" (they are inactive in "eval" anyway).

Notation (as in docs/model.md): B batch, T sequence, D d_model, H heads,
A head_dim, M ffn_dim, E experts, K top_k, n paths, L layers, V vocab_size,
S number of routed (real) tokens.
"""

import json
import math
import sys
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import attention_mechanisms

LN_EPS = 1e-5


# ----------------------------------------------------------------------------
# Configuration and parameter layout
# ----------------------------------------------------------------------------

def positions(cfg):
    """The longest sequence the blocks see: max_len, plus the CLS token."""
    return cfg["max_len"] + (1 if has_cls_token(cfg) else 0)


def has_cls_token(cfg):
    return cfg["head"] == "classification" and cfg["pooling"] == "cls"


def is_image(cfg):
    return cfg.get("input", "tokens") == "image"


def num_patches(cfg):
    """ViT: an image of side S cut into (S / P)^2 patches of P x P pixels."""
    return (cfg["image_size"] // cfg["patch_size"]) ** 2


def patch_embedding(pixels, weight, bias, P):
    """ViT's patch embedding, written out: cut [B, C, S, S] into P x P patches,
    row-major over the grid, flatten each patch (channel, row, column), and map
    it linearly to D. Equivalent to a convolution with kernel = stride = P
    whose weight is [D, C, P, P]."""
    B, C, S, _ = pixels.shape
    G = S // P
    patches = pixels.reshape(B, C, G, P, G, P)            # b c gy py gx px
    patches = patches.permute(0, 2, 4, 1, 3, 5)            # b gy gx c py px
    patches = patches.reshape(B, G * G, C * P * P)         # [B, N, C*P*P], row-major grid
    return patches @ weight.reshape(weight.shape[0], -1).T + bias   # [B, N, D]


def is_plain_sublayer(cfg):
    return (cfg["paths"] == 1 and not cfg["path_norm"]
            and not cfg["learnable_path_weights"] and not cfg["path_extra_features"])


def num_path_features(cfg):
    """m: the n raw path outputs, plus n extra features when enabled."""
    n = cfg["paths"]
    return 2 * n if cfg["path_extra_features"] else n


def validate_config(cfg):
    if cfg["head"] not in ("classification", "language_model"):
        raise ValueError(f"unknown head {cfg['head']!r}")
    if cfg["head"] == "classification" and cfg["pooling"] not in ("cls", "mean"):
        raise ValueError(f"unknown pooling {cfg['pooling']!r}")
    if cfg["activation"] not in ("gelu", "relu", "silu"):
        raise ValueError(f"unknown activation {cfg['activation']!r}")
    if cfg["routing_priority"] not in ("position", "batch"):
        raise ValueError(f"unknown routing_priority {cfg['routing_priority']!r}")
    if cfg["paths"] > 1 and cfg["experts"] > 1:
        raise ValueError("paths > 1 together with experts > 1 is not defined")
    if cfg["path_extra_features"] and cfg["paths"] < 3:
        raise ValueError("path_extra_features needs paths >= 3")
    if cfg["experts"] > 1 and not (1 <= cfg["top_k"] <= cfg["experts"]):
        raise ValueError("top_k must be in [1, experts]")
    if cfg["experts"] > 1 and cfg["routing_groups"] < 1:
        raise ValueError("routing_groups must be >= 1")


def expected_parameter_shapes(cfg):
    """Every parameter and buffer name of docs/model.md with its shape."""
    V, D, L = cfg["vocab_size"], cfg["d_model"], cfg["layers"]
    H, A, M = cfg["heads"], cfg["head_dim"], cfg["ffn_dim"]
    n, E, edim = cfg["paths"], cfg["experts"], cfg["embedding_dim"]
    cls = has_cls_token(cfg)
    shapes = {}

    if is_image(cfg):
        P = cfg["patch_size"]
        shapes["embed.patch.weight"] = [D, cfg["channels"], P, P]
        shapes["embed.patch.bias"] = [D]
        n_positions = num_patches(cfg)
    else:
        shapes["embed.token.weight"] = [V, edim if edim > 0 else D]
        if edim > 0:
            shapes["embed.project.weight"] = [D, edim]
            shapes["embed.project.bias"] = [D]
        n_positions = cfg["max_len"]
    shapes["embed.position.weight"] = [n_positions + (1 if cls else 0), D]
    if cls:
        shapes["embed.cls"] = [D]

    n_att = 1 if cfg["share_attention"] else L
    n_ffn = 1 if cfg["share_ffn"] else L
    n_ln = 1 if cfg["share_layernorm"] else L
    n_router = 1 if cfg["share_router"] else L

    for i in range(n_att):
        shapes[f"attention.{i}.qkv.weight"] = [3 * n * H * A, D]
        shapes[f"attention.{i}.qkv.bias"] = [3 * n * H * A]
        shapes[f"attention.{i}.out_weight"] = [n, D, H * A]
        shapes[f"attention.{i}.out_bias"] = [n, D]
        for g, (name, heads) in enumerate(attention_mechanisms.groups(cfg)):
            mechanism = attention_mechanisms.MECHANISMS[name]
            for suffix, shape in mechanism.parameter_shapes(cfg, len(heads), positions(cfg)).items():
                shapes[f"attention.{i}.mix.{g}.{suffix}"] = list(shape)

    U = E if E > 1 else n
    for i in range(n_ffn):
        shapes[f"ffn.{i}.w_in"] = [U, M, D]
        shapes[f"ffn.{i}.b_in"] = [U, M]
        shapes[f"ffn.{i}.w_out"] = [U, D, M]
        shapes[f"ffn.{i}.b_out"] = [U, D]

    if E > 1:
        for i in range(n_router):
            shapes[f"router.{i}.weight"] = [E, D]

    m = num_path_features(cfg)
    for i in range(n_ln):
        for which in ("ln_att", "ln_ffn"):
            shapes[f"{which}.{i}.weight"] = [D]
            shapes[f"{which}.{i}.bias"] = [D]
        if not is_plain_sublayer(cfg):
            for which in ("path_att", "path_ffn"):
                if cfg["path_norm"]:
                    shapes[f"{which}.{i}.norm_weight"] = [m, D]
                    shapes[f"{which}.{i}.norm_bias"] = [m, D]
                shapes[f"{which}.{i}.alpha"] = [m]
                shapes[f"{which}.{i}.beta"] = [1]

    shapes["final_ln.weight"] = [D]
    shapes["final_ln.bias"] = [D]
    if cfg["head"] == "classification":
        if cfg["pooler"]:
            shapes["pooler.weight"] = [D, D]
            shapes["pooler.bias"] = [D]
        shapes["classifier.weight"] = [cfg["num_classes"], D]
        shapes["classifier.bias"] = [cfg["num_classes"]]
    else:
        shapes["lm_head.weight"] = [V, D]
        shapes["lm_head.bias"] = [V]
    return shapes


def is_trainable(cfg, name):
    """Path alpha/beta are buffers unless learnable_path_weights is on."""
    is_path_weight = name.startswith("path_") and name.rsplit(".", 1)[1] in ("alpha", "beta")
    return cfg["learnable_path_weights"] or not is_path_weight


# ----------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------

def activation(name, x):
    if name == "gelu":
        return F.gelu(x)  # exact (erf) GELU
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    raise ValueError(name)


def layer_norm(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, LN_EPS)


def attention_paths(cfg, x, mask, prefix, params, causal):
    """All heads of all paths; each mechanism mixes its heads; returns the n path
    outputs [B, T, D].

    qkv row r = ((s*n + p)*H + h)*A + a, s in (q, k, v), head index p*H + h.
    """
    B, T, _ = x.shape
    n, H, A = cfg["paths"], cfg["heads"], cfg["head_dim"]
    qkv = x @ params[f"{prefix}.qkv.weight"].T + params[f"{prefix}.qkv.bias"]  # [B, T, 3*n*H*A]
    qkv = qkv.view(B, T, 3, n * H, A)                  # [B, T, s, p*H + h, a]
    q = qkv[:, :, 0].transpose(1, 2)                   # [B, n*H, T, A]
    k = qkv[:, :, 1].transpose(1, 2)
    v = qkv[:, :, 2].transpose(1, 2)

    ctx = torch.zeros_like(q)                          # [B, n*H, T, A]
    for g, (name, heads) in enumerate(attention_mechanisms.groups(cfg)):
        mechanism = attention_mechanisms.MECHANISMS[name]
        own = {suffix: params[f"{prefix}.mix.{g}.{suffix}"]
               for suffix in mechanism.parameter_shapes(cfg, len(heads), positions(cfg))}
        index = torch.tensor(heads)
        ctx[:, index] = mechanism.mix(cfg, q[:, index], k[:, index], v[:, index], mask, causal, own)

    out_weight, out_bias = params[f"{prefix}.out_weight"], params[f"{prefix}.out_bias"]
    outputs = []
    for p in range(n):
        ctx_p = ctx[:, p * H:(p + 1) * H]              # [B, H, T, A]
        ctx_p = ctx_p.transpose(1, 2).reshape(B, T, H * A)  # column h*A + a
        outputs.append(ctx_p @ out_weight[p].T + out_bias[p])
    return outputs


def dense_ffn_paths(x, w_in, b_in, w_out, b_out, act_name):
    """Per path p: act(x @ w_in[p]^T + b_in[p]) @ w_out[p]^T + b_out[p]."""
    outputs = []
    for p in range(w_in.shape[0]):
        hid = activation(act_name, x @ w_in[p].T + b_in[p])
        outputs.append(hid @ w_out[p].T + b_out[p])
    return outputs


# ----------------------------------------------------------------------------
# Mixture of experts
# ----------------------------------------------------------------------------

@dataclass
class Routing:
    expert: torch.Tensor   # [S, K] int64, choice 0 = top-1
    kept: torch.Tensor     # [S, K] bool
    gates: torch.Tensor    # [S, K] combine weights (renormalised if asked), in the graph


def expert_capacity(top_k, capacity_factor, num_tokens, num_experts):
    """cap = ceil(K * C * S / E); C <= 0: cap = S. The product is rounded to 9
    decimals before the ceiling: a decimal C such as 0.56 is not exact in binary,
    and 2 * 0.56 * 25 / 4 evaluates to 7.000000000000001, whose ceiling is 8."""
    if capacity_factor <= 0:
        return num_tokens
    return int(math.ceil(round(top_k * capacity_factor * num_tokens / num_experts, 9)))


def priority_order(top1_prob, routing_priority):
    """Token indices in the order they receive slots within each choice round."""
    S = len(top1_prob)
    if routing_priority == "position":
        return list(range(S))
    # batch priority: highest top-1 probability first; Python's sort is stable,
    # so ties keep position order.
    values = [float(p) for p in top1_prob]
    return sorted(range(S), key=lambda s: -values[s])


def assign_slots(expert, order, num_experts, capacity, token_major=False):
    """Slot assignment with per-expert counters.

    Choice-major (every token's choice 0, then every choice 1, ...), or
    token-major (all choices of a token before the next token), which a
    language model uses so that no later token can take an earlier token's slot.

    expert: [S, K] int64; order: token indices in priority order.
    Returns kept [S, K] bool: True where the assignment's slot is < capacity.
    """
    S, K = expert.shape
    choices = expert.tolist()
    kept = [[False] * K for _ in range(S)]
    used = [0] * num_experts  # slots handed out so far, per expert
    if token_major:
        served = [(s, c) for s in order for c in range(K)]
    else:
        served = [(s, c) for c in range(K) for s in order]
    for s, c in served:
        e = choices[s][c]
        slot = used[e]
        used[e] += 1
        kept[s][c] = slot < capacity
    return torch.tensor(kept, dtype=torch.bool).view(S, K)


def route_tokens(tokens, router_weight, top_k, capacity_factor,
                 routing_priority, renormalize_gates, token_major=False):
    """One routing call on the S real tokens [S, D].

    Returns (Routing, balance loss of this call). The caller must have ruled out
    router noise (training with router_noise_std > 0 is not reproducible here).
    """
    S = tokens.shape[0]
    E = router_weight.shape[0]
    logits = tokens @ router_weight.T                  # [S, E], no bias
    probs = torch.softmax(logits, dim=-1)
    top_probs, expert = torch.topk(probs, top_k, dim=-1)  # [S, K], sorted descending
    gates = top_probs
    if renormalize_gates:
        gates = gates / gates.sum(dim=-1, keepdim=True)

    cap = expert_capacity(top_k, capacity_factor, S, E)
    order = priority_order(top_probs[:, 0].detach(), routing_priority)
    kept = assign_slots(expert, order, E, cap, token_major)

    # WideNet Eq. 3-5: m_e from choice 0 (no gradient), P_e mean probability (gradient).
    m = torch.bincount(expert[:, 0], minlength=E).to(probs.dtype) / S
    P = probs.mean(dim=0)
    balance = E * (m.detach() * P).sum()
    return Routing(expert=expert, kept=kept, gates=gates), balance


def moe_forward(tokens, routing, w_in, b_in, w_out, b_out, act_name):
    """out[s] = sum over kept choices c of gates[s, c] * expert_{expert[s, c]}(x[s]).

    For clarity every expert is evaluated on every token and the unused or
    dropped ones get weight 0.
    """
    S = tokens.shape[0]
    E = w_in.shape[0]
    all_experts = torch.stack([
        activation(act_name, tokens @ w_in[e].T + b_in[e]) @ w_out[e].T + b_out[e]
        for e in range(E)
    ])                                                 # [E, S, D]
    token_index = torch.arange(S)
    out = torch.zeros_like(tokens)
    for c in range(routing.expert.shape[1]):
        y = all_experts[routing.expert[:, c], token_index]          # [S, D]
        weight = torch.where(routing.kept[:, c], routing.gates[:, c],
                             torch.zeros_like(routing.gates[:, c]))
        out = out + weight.unsqueeze(-1) * y
    return out


# ----------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------

class WideLabReference:
    def __init__(self, cfg, params, mode):
        validate_config(cfg)
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', not {mode!r}")
        self.cfg = cfg
        self.p = params  # name -> tensor
        self.mode = mode
        self.capacity_factor = (cfg["capacity_factor"] if mode == "train"
                                else cfg["eval_capacity_factor"])
        if mode == "train" and (cfg["dropout"] != 0 or cfg["router_noise_std"] != 0):
            raise ValueError("train mode needs dropout 0 and router_noise_std 0 "
                             "for a deterministic reference")

    def sublayer(self, h, ln_name, path_name, features):
        """Plain: h + F(LN(h)). Multi-path: beta*h + sum_j alpha_j PathNorm_j(F_j)."""
        cfg, p = self.cfg, self.p
        x = layer_norm(h, p[f"{ln_name}.weight"], p[f"{ln_name}.bias"])
        raw = features(x)                              # list of n tensors [B, T, D]
        if is_plain_sublayer(cfg):
            return h + raw[0]

        n = cfg["paths"]
        feats = list(raw)
        if cfg["path_extra_features"]:
            total = sum(raw)
            feats += [(total - raw[j]) / (n - 1) for j in range(n)]

        alpha = p[f"{path_name}.alpha"]
        beta = p[f"{path_name}.beta"]
        y = beta * h
        for j, f in enumerate(feats):
            if cfg["path_norm"]:
                f = layer_norm(f, p[f"{path_name}.norm_weight"][j],
                               p[f"{path_name}.norm_bias"][j])
            y = y + alpha[j] * f
        return y

    def forward(self, ids, mask):
        """Returns (logits, balance_loss, routes, mask_used_by_blocks).
        ids: token ids [B, T], or for image models pixels [B, C, S, S]."""
        cfg, p = self.cfg, self.p
        L, G = cfg["layers"], cfg["routing_groups"]
        causal = cfg["head"] == "language_model"
        moe = cfg["experts"] > 1

        # Embedding
        if is_image(cfg):
            B = ids.shape[0]
            h = patch_embedding(ids, p["embed.patch.weight"], p["embed.patch.bias"],
                                cfg["patch_size"])      # [B, N, D]
        else:
            B, T = ids.shape
            if T > cfg["max_len"]:
                raise ValueError(f"sequence length {T} > max_len {cfg['max_len']}")
            h = F.embedding(ids, p["embed.token.weight"])   # [B, T, edim or D]
            if cfg["embedding_dim"] > 0:
                h = h @ p["embed.project.weight"].T + p["embed.project.bias"]
        if has_cls_token(cfg):
            cls = p["embed.cls"].view(1, 1, -1).expand(B, 1, -1)
            h = torch.cat([cls, h], dim=1)               # [B, T+1, D]
            mask = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], dim=1)
        T_blocks = h.shape[1]
        h = h + p["embed.position.weight"][:T_blocks]

        balance_loss = h.new_zeros(())
        routes = []                # one Routing per routing call, in block order
        group_routing = None       # routing of the current group's first block
        for i in range(L):
            a = 0 if cfg["share_attention"] else i
            f = 0 if cfg["share_ffn"] else i
            l = 0 if cfg["share_layernorm"] else i
            r = 0 if cfg["share_router"] else i

            def attention_features(x, a=a):
                return attention_paths(cfg, x, mask, f"attention.{a}", p, causal)

            h = self.sublayer(h, f"ln_att.{l}", f"path_att.{l}", attention_features)

            if not moe:
                def ffn_features(x, f=f):
                    return dense_ffn_paths(x, p[f"ffn.{f}.w_in"], p[f"ffn.{f}.b_in"],
                                           p[f"ffn.{f}.w_out"], p[f"ffn.{f}.b_out"],
                                           cfg["activation"])
            else:
                group = (i * G) // L
                first_of_group = i == 0 or ((i - 1) * G) // L != group

                def ffn_features(x, f=f, r=r, first_of_group=first_of_group):
                    nonlocal balance_loss, group_routing
                    tokens = x[mask]                     # [S, D], row-major over [B, T]
                    if first_of_group:
                        routing, balance = route_tokens(
                            tokens, p[f"router.{r}.weight"], cfg["top_k"],
                            self.capacity_factor, cfg["routing_priority"],
                            cfg["renormalize_gates"],
                            token_major=cfg["head"] == "language_model")
                        balance_loss = balance_loss + balance
                        routes.append(routing)
                        group_routing = routing
                    out_tokens = moe_forward(tokens, group_routing,
                                             p[f"ffn.{f}.w_in"], p[f"ffn.{f}.b_in"],
                                             p[f"ffn.{f}.w_out"], p[f"ffn.{f}.b_out"],
                                             cfg["activation"])
                    out = torch.zeros_like(x)            # masked positions: MoE output 0
                    out[mask] = out_tokens
                    return [out]

            h = self.sublayer(h, f"ln_ffn.{l}", f"path_ffn.{l}", ffn_features)

        h = layer_norm(h, p["final_ln.weight"], p["final_ln.bias"])

        if cfg["head"] == "classification":
            if cfg["pooling"] == "cls":
                pooled = h[:, 0]
            else:
                weights = mask.to(h.dtype).unsqueeze(-1)          # [B, T, 1]
                pooled = (h * weights).sum(dim=1) / weights.sum(dim=1)
            if cfg["pooler"]:
                pooled = torch.tanh(pooled @ p["pooler.weight"].T + p["pooler.bias"])
            logits = pooled @ p["classifier.weight"].T + p["classifier.bias"]
        else:
            logits = h @ p["lm_head.weight"].T + p["lm_head.bias"]
        return logits, balance_loss, routes, mask


def task_loss(cfg, logits, targets, mask):
    if cfg["head"] == "classification":
        return F.cross_entropy(logits, targets)
    return F.cross_entropy(logits[mask], targets[mask])


def warn_ill_defined(cfg, mask):
    """Fully masked attention rows or empty mean pools give NaN; say so."""
    B, T = mask.shape
    if has_cls_token(cfg):
        return
    if cfg["head"] == "language_model":
        if (~mask[:, 0]).any():
            print("warning: a language-model row starts with a masked token: its causal "
                  "attention row has no valid key (NaN)", file=sys.stderr)
    elif (~mask).all(dim=1).any():
        print("warning: a row has no real token: attention and mean pooling give NaN",
              file=sys.stderr)


# ----------------------------------------------------------------------------
# Case runner
# ----------------------------------------------------------------------------

def load_parameters(cfg, case, dtype=torch.float32):
    """Check names and shapes against docs/model.md; return (params, trainable names)."""
    expected = expected_parameter_shapes(cfg)
    given = {k[len("param."):]: v for k, v in case.items() if k.startswith("param.")}
    missing = sorted(set(expected) - set(given))
    extra = sorted(set(given) - set(expected))
    if missing or extra:
        raise ValueError(f"parameter names differ from docs/model.md: missing {missing}, "
                         f"unexpected {extra}")
    params, trainable = {}, []
    for name, shape in expected.items():
        t = given[name]
        if list(t.shape) != shape:
            raise ValueError(f"{name}: shape {list(t.shape)}, expected {shape}")
        t = t.detach().to(dtype).clone().contiguous()
        if is_trainable(cfg, name):
            t.requires_grad_(True)
            trainable.append(name)
        params[name] = t
    return params, trainable


def run_case(cfg, mode, case, dtype=torch.float32):
    """Returns the OUT dict for one case."""
    params, trainable = load_parameters(cfg, case, dtype)
    if is_image(cfg):
        ids = case["input.pixels"].to(dtype)      # [B, C, S, S]
        S, C = cfg["image_size"], cfg["channels"]
        if list(ids.shape[1:]) != [C, S, S]:
            raise ValueError(f"input.pixels: shape {list(ids.shape)}, expected [B, {C}, {S}, {S}]")
        mask = torch.ones(ids.shape[0], num_patches(cfg), dtype=torch.bool)
    else:
        ids = case["input.ids"].long()
        mask = case.get("input.mask")
        mask = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    targets = case["input.targets"].long()
    warn_ill_defined(cfg, mask)

    model = WideLabReference(cfg, params, mode)
    logits, balance_loss, routes, _ = model.forward(ids, mask)
    loss = task_loss(cfg, logits, targets, mask) + cfg["balance_loss_weight"] * balance_loss
    grads = torch.autograd.grad(loss, [params[n] for n in trainable], allow_unused=True)

    out = {
        "logits": logits,
        "balance_loss": balance_loss,
        "loss": loss,
    }
    for name, g in zip(trainable, grads):
        out[f"grad.{name}"] = torch.zeros_like(params[name]) if g is None else g
    for t, routing in enumerate(routes):
        out[f"route.{t}.expert"] = routing.expert
        out[f"route.{t}.kept"] = routing.kept
        out[f"route.{t}.gates"] = routing.gates
    return {k: v.detach().cpu().contiguous() for k, v in out.items()}


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        spec = json.load(fh)
    case = torch.load(argv[2], weights_only=False)  # written by torch::save (TorchScript pickle)
    # float64: the same case (parameters and pixels cast up), for the exact value
    # that an fp32 result's rounding error is measured against.
    dtype = torch.float64 if spec.get("dtype") == "float64" else torch.float32
    if dtype == torch.float64:
        case = {k: v.double() if v.is_floating_point() else v for k, v in case.items()}
    try:
        out = run_case(spec["model"], spec["mode"], case, dtype)
    except (ValueError, KeyError) as err:
        print(f"reference_model.py: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    torch.save(out, argv[3])
    return 0


# ----------------------------------------------------------------------------
# Self-test (no C++ needed)
# ----------------------------------------------------------------------------

def default_config(**overrides):
    cfg = {
        "vocab_size": 11, "max_len": 8, "d_model": 8, "embedding_dim": 0, "layers": 2,
        "heads": 2, "head_dim": 4, "ffn_dim": 12, "activation": "gelu", "dropout": 0.0,
        "head": "classification", "pooling": "cls", "pooler": False, "num_classes": 3,
        "experts": 1, "top_k": 1, "capacity_factor": 1.2, "eval_capacity_factor": 2.0,
        "router_noise_std": 0.0, "balance_loss_weight": 0.01, "routing_groups": 2,
        "routing_priority": "position", "renormalize_gates": False, "share_router": True,
        "share_attention": False, "share_ffn": False, "share_layernorm": False,
        "paths": 1, "path_norm": False, "learnable_path_weights": False,
        "path_extra_features": False, "attention": "full", "attention_mix": [],
    }
    cfg.update(overrides)
    return cfg


def random_case(cfg, B=2, T=5, seed=0, lengths=None, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    case = {}
    for name, shape in expected_parameter_shapes(cfg).items():
        leaf = name.rsplit(".", 1)[1]
        if leaf == "alpha":
            t = torch.full(shape, 1.0 / math.sqrt(2 * cfg["paths"]))
        elif leaf == "beta":
            t = torch.ones(shape)
        else:
            t = 0.5 * torch.randn(shape, generator=gen)
        case["param." + name] = t.to(dtype)
    case["input.ids"] = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
    lengths = lengths or [T] * B
    case["input.mask"] = torch.arange(T).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    if cfg["head"] == "classification":
        case["input.targets"] = torch.randint(0, cfg["num_classes"], (B,), generator=gen)
    else:
        case["input.targets"] = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
    return case


def close(a, b, tol=1e-5):
    return torch.allclose(a, b, rtol=tol, atol=tol)


def _full_attention(x, mask, w, b, ow, ob, n, H, A, causal):
    """attention_paths with full attention and the given weights."""
    cfg = default_config(paths=n, heads=H, head_dim=A, d_model=x.shape[-1])
    params = {"a.qkv.weight": w, "a.qkv.bias": b, "a.out_weight": ow, "a.out_bias": ob}
    return attention_paths(cfg, x, mask, "a", params, causal)


def _test_attention_matches_torch_mha():
    torch.manual_seed(1)
    B, T, D, H = 2, 6, 8, 2
    A = D // H
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True)
    mha.eval()
    x = torch.randn(B, T, D)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    for causal in (False, True):
        attn_mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        with torch.no_grad():
            expected, _ = mha(x, x, x, key_padding_mask=~mask, attn_mask=attn_mask,
                              need_weights=False)
            (ours,) = _full_attention(x, mask, mha.in_proj_weight, mha.in_proj_bias,
                                      mha.out_proj.weight.unsqueeze(0),
                                      mha.out_proj.bias.unsqueeze(0), 1, H, A, causal)
        assert close(ours, expected), (ours - expected).abs().max()


def _test_attention_functional_mha():
    torch.manual_seed(2)
    B, T, D, H = 3, 5, 6, 3
    A = D // H
    w, b = torch.randn(3 * D, D), torch.randn(3 * D)
    ow, ob = torch.randn(D, D), torch.randn(D)
    x = torch.randn(B, T, D)
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[1, 3:] = False
    xt = x.transpose(0, 1)  # functional form is [T, B, D]
    expected, _ = F.multi_head_attention_forward(
        xt, xt, xt, D, H, w, b, None, None, False, 0.0, ow, ob,
        training=False, key_padding_mask=~mask, need_weights=False)
    (ours,) = _full_attention(x, mask, w, b, ow.unsqueeze(0), ob.unsqueeze(0), 1, H, A, False)
    assert close(ours, expected.transpose(0, 1))


def _test_two_path_attention_is_two_mhas():
    """Rows ((s*n + p)*H + h)*A + a: path p's q/k/v rows are a per-path MHA in_proj."""
    torch.manual_seed(3)
    B, T, D, H, A, n = 2, 5, 6, 2, 3, 2
    w, b = torch.randn(3 * n * H * A, D), torch.randn(3 * n * H * A)
    ow, ob = torch.randn(n, D, H * A), torch.randn(n, D)
    x = torch.randn(B, T, D)
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[0, 4:] = False
    ours = _full_attention(x, mask, w, b, ow, ob, n, H, A, causal=True)
    HA = H * A
    for p in range(n):
        rows = torch.cat([torch.arange((s * n + p) * HA, (s * n + p + 1) * HA) for s in range(3)])
        xt = x.transpose(0, 1)
        expected, _ = F.multi_head_attention_forward(
            xt, xt, xt, HA, H, w[rows], b[rows], None, None, False, 0.0,
            torch.eye(HA), torch.zeros(HA), training=False, key_padding_mask=~mask,
            need_weights=False, attn_mask=torch.ones(T, T, dtype=torch.bool).triu(1),
            use_separate_proj_weight=True, q_proj_weight=w[rows[:HA]],
            k_proj_weight=w[rows[HA:2 * HA]], v_proj_weight=w[rows[2 * HA:]])
        expected = expected.transpose(0, 1) @ ow[p].T + ob[p]
        assert close(ours[p], expected), (p, (ours[p] - expected).abs().max())


def _test_capacity_values():
    assert expert_capacity(2, 1.2, 10, 4) == 6     # 2*1.2*10/4 = 6
    assert expert_capacity(1, 1.0, 7, 2) == 4      # 3.5 -> 4
    assert expert_capacity(2, 1.0, 8, 4) == 4
    assert expert_capacity(2, 0.0, 9, 4) == 9      # C <= 0: never drop
    assert expert_capacity(2, -1.0, 9, 4) == 9
    assert expert_capacity(1, 0.25, 3, 4) == 1     # 0.1875 -> 1


def _test_assign_slots_position():
    # tokens 0..3, E = 2, K = 2, cap = 2
    expert = torch.tensor([[0, 1], [0, 1], [1, 0], [0, 1]])
    # choice 0: t0->e0 s0, t1->e0 s1, t2->e1 s0, t3->e0 s2 (drop)
    # choice 1: t0->e1 s1, t1->e1 s2 (drop), t2->e0 s3 (drop), t3->e1 s3 (drop)
    kept = assign_slots(expert, priority_order(torch.zeros(4), "position"), 2, 2)
    expected = torch.tensor([[True, True], [True, False], [True, False], [False, False]])
    assert torch.equal(kept, expected), kept


def _test_assign_slots_batch_priority():
    expert = torch.tensor([[0, 1], [0, 1], [1, 0], [0, 1]])
    top1 = torch.tensor([0.5, 0.9, 0.6, 0.95])
    order = priority_order(top1, "batch")
    assert order == [3, 1, 2, 0], order
    # choice 0: t3->e0 s0, t1->e0 s1, t2->e1 s0, t0->e0 s2 (drop)
    # choice 1: t3->e1 s1, t1->e1 s2 (drop), t2->e0 s3 (drop), t0->e1 s3 (drop)
    kept = assign_slots(expert, order, 2, 2)
    expected = torch.tensor([[False, False], [True, False], [True, False], [True, True]])
    assert torch.equal(kept, expected), kept
    # ties keep position order
    assert priority_order(torch.tensor([0.5, 0.7, 0.5, 0.7]), "batch") == [1, 3, 0, 2]


def _test_route_drops_in_order():
    """All 5 tokens prefer expert 1; cap = ceil(1*1.0*5/2) = 3, so tokens 3 and 4 drop."""
    tokens = torch.tensor([[0.0, 1.0]] * 5)
    router = torch.tensor([[0.0, 0.0], [0.0, 1.0]])  # logits (0, 1) for every token
    routing, _ = route_tokens(tokens, router, 1, 1.0, "position", False)
    assert routing.expert[:, 0].tolist() == [1] * 5
    assert routing.kept[:, 0].tolist() == [True, True, True, False, False]


def _test_balance_uniform_is_one():
    torch.manual_seed(4)
    for E, K in ((4, 2), (3, 1), (8, 3)):
        tokens = torch.randn(7, 5)
        router = torch.zeros(E, 5, requires_grad=True)   # uniform probabilities
        _, balance = route_tokens(tokens, router, K, 1.2, "position", False)
        assert abs(balance.item() - 1.0) < 1e-6, balance
        balance.backward()
        assert router.grad is not None  # stays in the graph


def _test_balance_hand_value():
    # E = 2; two tokens with probs (0.75, 0.25), one with (0.25, 0.75) (logit gap ln 3)
    # m = (2/3, 1/3); P = (1.75/3, 1.25/3); balance = 2*(2*1.75 + 1.25)/9 = 9.5/9
    tokens = torch.tensor([[1.0], [1.0], [-1.0]], dtype=torch.float64)
    router = torch.tensor([[math.log(3) / 2], [-math.log(3) / 2]], dtype=torch.float64,
                          requires_grad=True)
    routing, balance = route_tokens(tokens, router, 1, 1.0, "position", False)
    assert routing.expert[:, 0].tolist() == [0, 0, 1]
    assert abs(balance.item() - 9.5 / 9) < 1e-12, balance.item()
    # d balance / d router: only P carries gradient. dP_0/dz = p0*p1 = 3/16 per token,
    # with z = logit_0 - logit_1 = ln3 * x. balance = 2*(m0 P0 + m1 (1-P0)), so
    # d/dW0 = 2*(m0 - m1) * mean_s(3/16 * x_s) and d/dW1 = -d/dW0.
    balance.backward()
    g0 = 2 * (2 / 3 - 1 / 3) * (3 / 16) * (1 + 1 - 1) / 3
    assert abs(router.grad[0, 0].item() - g0) < 1e-12, router.grad
    assert abs(router.grad[1, 0].item() + g0) < 1e-12, router.grad


def _test_moe_no_drop_full_topk_is_dense_mixture():
    torch.manual_seed(5)
    S, D, M, E = 6, 4, 5, 3
    tokens = torch.randn(S, D)
    router = torch.randn(E, D)
    w_in, b_in = torch.randn(E, M, D), torch.randn(E, M)
    w_out, b_out = torch.randn(E, D, M), torch.randn(E, D)
    routing, _ = route_tokens(tokens, router, E, 0.0, "position", False)
    assert routing.kept.all()
    out = moe_forward(tokens, routing, w_in, b_in, w_out, b_out, "relu")
    probs = torch.softmax(tokens @ router.T, -1)
    expected = sum(probs[:, e:e + 1] * (F.relu(tokens @ w_in[e].T + b_in[e]) @ w_out[e].T
                                        + b_out[e]) for e in range(E))
    assert close(out, expected)
    # renormalised top-1 gates are all exactly 1
    routing, _ = route_tokens(tokens, router, 1, 0.0, "position", True)
    assert torch.equal(routing.gates, torch.ones(S, 1))


def _test_dropped_token_gets_zero():
    S, D, M, E = 3, 2, 3, 2
    tokens = torch.ones(S, D)
    routing = Routing(expert=torch.tensor([[0], [0], [1]]),
                      kept=torch.tensor([[True], [False], [True]]),
                      gates=torch.tensor([[0.6], [0.7], [0.8]]))
    w_in, b_in = torch.ones(E, M, D), torch.ones(E, M)
    w_out, b_out = torch.ones(E, D, M), torch.ones(E, D)
    out = moe_forward(tokens, routing, w_in, b_in, w_out, b_out, "relu")
    # expert(1,1) = relu(2+1)*3 + 1 = 10 per component
    assert torch.equal(out, torch.tensor([[6.0, 6.0], [0.0, 0.0], [8.0, 8.0]]))


def _run_model(cfg, case, mode="eval"):
    params, _ = load_parameters(cfg, case)
    model = WideLabReference(cfg, params, mode)
    return model.forward(case["input.ids"], case["input.mask"].clone())


def _test_plain_equals_unit_multipath():
    """paths = 1 with learnable weights set to alpha = beta = 1 is the plain sublayer."""
    cfg_plain = default_config()
    case = random_case(cfg_plain, seed=6)
    cfg_mp = default_config(learnable_path_weights=True)
    case_mp = dict(case)
    for i in range(cfg_mp["layers"]):
        for which in ("path_att", "path_ffn"):
            case_mp[f"param.{which}.{i}.alpha"] = torch.ones(1)
            case_mp[f"param.{which}.{i}.beta"] = torch.ones(1)
    a = _run_model(cfg_plain, case)[0]
    b = _run_model(cfg_mp, case_mp)[0]
    assert close(a, b), (a - b).abs().max()


def _test_extra_features_identity():
    """n = 3, beta 1, no norm: alpha (0,0,0,1,1,1) on the extras equals (1,1,1,0,0,0) on raw,
    since sum_j (sum_i F_i - F_j)/(n-1) = sum_i F_i."""
    cfg = default_config(paths=3, path_extra_features=True, layers=1, routing_groups=1)
    case = random_case(cfg, seed=7)
    results = []
    for alpha in ([0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0]):
        c = dict(case)
        c["param.path_att.0.alpha"] = torch.tensor(alpha, dtype=torch.float32)
        c["param.path_ffn.0.alpha"] = torch.tensor(alpha, dtype=torch.float32)
        results.append(_run_model(cfg, c)[0])
    assert close(results[0], results[1]), (results[0] - results[1]).abs().max()


def _test_masked_tokens_do_not_matter():
    for overrides in ({}, {"pooling": "mean"},
                      {"experts": 3, "top_k": 2, "pooling": "mean"},
                      {"paths": 3, "path_norm": True, "path_extra_features": True}):
        cfg = default_config(**overrides)
        case = random_case(cfg, B=3, T=6, seed=8, lengths=[6, 3, 1])
        a = _run_model(cfg, case)[0]
        case2 = dict(case)
        ids = case["input.ids"].clone()
        ids[~case["input.mask"]] = (ids[~case["input.mask"]] + 1) % cfg["vocab_size"]
        case2["input.ids"] = ids
        b = _run_model(cfg, case2)[0]
        assert close(a, b), (overrides, (a - b).abs().max())


def _test_causal_lm():
    cfg = default_config(head="language_model", experts=2, top_k=1, eval_capacity_factor=0.0)
    case = random_case(cfg, B=2, T=6, seed=9)
    a = _run_model(cfg, case)[0]
    case2 = dict(case)
    ids = case["input.ids"].clone()
    ids[:, 4:] = (ids[:, 4:] + 3) % cfg["vocab_size"]
    case2["input.ids"] = ids
    b = _run_model(cfg, case2)[0]
    assert a.shape == (2, 6, cfg["vocab_size"])
    assert close(a[:, :4], b[:, :4]) and not close(a[:, 4:], b[:, 4:])


def _test_routing_groups():
    for L, G, routers in ((3, 1, [0]), (3, 3, [0, 1, 2]), (3, 2, [0, 2]), (4, 2, [0, 2])):
        cfg = default_config(layers=L, routing_groups=G, experts=4, top_k=2,
                             share_router=False)
        case = random_case(cfg, seed=10)
        out = run_case(cfg, "eval", case)
        calls = sorted(k for k in out if k.startswith("route.") and k.endswith(".expert"))
        assert len(calls) == len(routers), (L, G, calls)
        for i in range(L):
            g = out[f"grad.router.{i}.weight"]
            assert (g.abs().sum() > 0) == (i in routers), (L, G, i)
        S = int(case["input.mask"].sum()) + 2  # + one CLS token per row
        assert out["route.0.expert"].shape == (S, 2)


def _test_group_reuse_is_exact():
    """G = 1: block 1 must use block 0's routing, so its MoE output is computed from it."""
    cfg = default_config(layers=2, routing_groups=1, experts=3, top_k=2,
                         eval_capacity_factor=0.5)
    case = random_case(cfg, B=2, T=5, seed=11)
    params, _ = load_parameters(cfg, case)
    model = WideLabReference(cfg, params, "eval")
    used = []
    original = globals()["moe_forward"]

    def spy(tokens, routing, *args):
        used.append(routing)
        return original(tokens, routing, *args)

    globals()["moe_forward"] = spy
    try:
        _, _, routes, _ = model.forward(case["input.ids"], case["input.mask"].clone())
    finally:
        globals()["moe_forward"] = original
    assert len(routes) == 1 and len(used) == 2 and used[0] is used[1] is routes[0]
    assert not routes[0].kept.all()  # capacity 0.5 drops something


def _test_gradients_finite_difference():
    """float64 gradcheck of the whole loss w.r.t. several parameters."""
    cases = [
        default_config(experts=3, top_k=2, capacity_factor=1.0, pooler=True,
                       embedding_dim=5, renormalize_gates=True, routing_priority="batch"),
        default_config(paths=3, path_norm=True, learnable_path_weights=True,
                       path_extra_features=True, activation="silu", pooling="mean",
                       share_attention=True, share_layernorm=True),
        default_config(head="language_model", experts=2, top_k=1, share_ffn=True,
                       activation="relu", routing_groups=1),
    ]
    for cfg in cases:
        case = random_case(cfg, B=2, T=4, seed=12, lengths=[4, 2], dtype=torch.float64)
        names = [n for n in expected_parameter_shapes(cfg) if is_trainable(cfg, n)]
        names = [n for n in names if n.split(".")[0] in
                 ("attention", "ffn", "router", "path_att", "path_ffn", "embed", "pooler")]

        def loss_fn(*tensors):
            c = dict(case)
            for n, t in zip(names, tensors):
                c["param." + n] = t
            params = {k[6:]: v for k, v in c.items() if k.startswith("param.")}
            model = WideLabReference(cfg, params, "train")
            logits, bal, _, mask = model.forward(c["input.ids"], c["input.mask"].clone())
            return (task_loss(cfg, logits, c["input.targets"], c["input.mask"])
                    + cfg["balance_loss_weight"] * bal)

        inputs = [case["param." + n].clone().requires_grad_(True) for n in names]
        assert torch.autograd.gradcheck(loss_fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def _test_end_to_end_files():
    import contextlib
    import io
    import os
    import tempfile
    cfg = default_config(experts=4, top_k=2, capacity_factor=1.0, routing_groups=1)
    case = random_case(cfg, B=2, T=5, seed=13, lengths=[5, 3])
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "case.json"), "w") as fh:
            json.dump({"model": cfg, "mode": "train"}, fh)
        torch.save(case, os.path.join(d, "case.pt"))
        rc = main(["x", os.path.join(d, "case.json"), os.path.join(d, "case.pt"),
                   os.path.join(d, "out.pt")])
        assert rc == 0
        out = torch.load(os.path.join(d, "out.pt"), weights_only=False)
        # train mode with noise is refused
        with open(os.path.join(d, "bad.json"), "w") as fh:
            json.dump({"model": dict(cfg, router_noise_std=0.25), "mode": "train"}, fh)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = main(["x", os.path.join(d, "bad.json"), os.path.join(d, "case.pt"),
                       os.path.join(d, "out2.pt")])
        assert rc == 1 and "router_noise_std" in err.getvalue()
    assert out["logits"].shape == (2, 3) and out["balance_loss"].dim() == 0
    assert out["route.0.expert"].shape == (10, 2)  # 5 + 3 real tokens + 2 CLS
    assert out["route.0.kept"].dtype == torch.bool and "route.1.expert" not in out
    trainable = [n for n in expected_parameter_shapes(cfg) if is_trainable(cfg, n)]
    assert sorted(k[5:] for k in out if k.startswith("grad.")) == sorted(trainable)
    assert all(v.is_contiguous() and not v.requires_grad for v in out.values())
    # loss decomposes as documented
    logits = out["logits"]
    expected = F.cross_entropy(logits, case["input.targets"]) + 0.01 * out["balance_loss"]
    assert close(out["loss"], expected)


def _test_patch_embedding_is_strided_conv():
    torch.manual_seed(7)
    B, C, S, P, D = 2, 3, 8, 4, 5
    x, w, b = torch.randn(B, C, S, S), torch.randn(D, C, P, P), torch.randn(D)
    conv = F.conv2d(x, w, b, stride=P).flatten(2).transpose(1, 2)   # [B, N, D]
    assert close(patch_embedding(x, w, b, P), conv, 1e-5)
    # patch 1 (row 0, column 1) is the pixels x[:, :, 0:P, P:2P]
    one = (x[:, :, 0:P, P:2 * P].reshape(B, -1) @ w.reshape(D, -1).T) + b
    assert close(patch_embedding(x, w, b, P)[:, 1], one, 1e-5)


def _test_image_case_runs():
    cfg = default_config(input="image", image_size=8, patch_size=4, channels=3, max_len=4,
                         experts=2, top_k=1, pooling="mean")
    case = random_case(cfg, B=2, T=4)
    case.pop("input.ids")
    case.pop("input.mask")
    case["input.pixels"] = torch.randn(2, 3, 8, 8)
    out = run_case(cfg, "train", case)
    assert out["logits"].shape == (2, 3)
    assert out["grad.embed.patch.weight"].abs().sum() > 0


def self_test():
    tests = [(name, fn) for name, fn in globals().items()
             if name.startswith("_test_") and callable(fn)]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
        except Exception as err:  # report every failure, keep going
            failed += 1
            print(f"FAIL {name[6:]}: {type(err).__name__}: {err}")
        else:
            passed += 1
            print(f"ok   {name[6:]}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
