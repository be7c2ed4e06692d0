#!/usr/bin/env python3
"""Self-test of the independent PyTorch reference (reference_model.py), no C++
needed: its attention against torch's MultiheadAttention, its routing and
mixture of experts against hand-worked values, its multi-path and causal
variants against their plain equivalents, its gradients against finite
differences, and its command line end to end; the encoder-decoder
(reference_decoder.py): its cross-attention against torch's, its decoder against
a language model when cross-attention is silenced, causality, masks, sharing and
routing calls.

Usage:
    python3 reference_selftest.py      (ctest reference_selftest)
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

import reference_model
from reference_model import *  # noqa: F401,F403 (the functions under test, main included)
import reference_decoder

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


def random_case(cfg, B=2, T=5, seed=0, lengths=None, dtype=torch.float32,
                target_length=4, target_lengths=None):
    """Random parameters and inputs; translation: a target of target_length tokens
    (lengths target_lengths) as well."""
    gen = torch.Generator().manual_seed(seed)
    case = {}
    for name, shape in expected_parameter_shapes(cfg).items():
        leaf = name.rsplit(".", 1)[1]
        if leaf == "alpha":
            t = torch.full(shape, path_weight_value(cfg))
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
    elif cfg["head"] == "language_model":
        case["input.targets"] = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
    else:
        T2 = target_length
        case["input.target_ids"] = torch.randint(0, cfg["vocab_size"], (B, T2), generator=gen)
        target_lengths = target_lengths or [T2] * B
        case["input.target_mask"] = (torch.arange(T2).unsqueeze(0)
                                     < torch.tensor(target_lengths).unsqueeze(1))
        case["input.targets"] = torch.randint(0, cfg["vocab_size"], (B, T2), generator=gen)
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


def _test_balance_counting_every_choice_hand_value():
    # WideNet Eq. 4 with a K-hot h: E = 3, K = 2; probabilities (4, 2, 1)/7 choose 0, 1 and
    # (1, 2, 4)/7 choose 2, 1: m = (1/2, 1, 1/2), P = (5, 4, 5)/14, balance = 3 * 9/14.
    tokens = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    router = torch.tensor([[math.log(2)], [0.0], [-math.log(2)]], dtype=torch.float64)
    routing, every = route_tokens(tokens, router, 2, 0.0, "position", False, balance_count="topk")
    assert sorted(routing.expert[0].tolist()) == [0, 1] and sorted(routing.expert[1].tolist()) == [1, 2]
    assert abs(every.item() - 27 / 14) < 1e-12, every.item()
    _, top1 = route_tokens(tokens, router, 2, 0.0, "position", False)
    assert abs(top1.item() - 15 / 14) < 1e-12, top1.item()


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
    target = None
    if cfg["head"] == "translation":
        target = (case["input.target_ids"], case["input.target_mask"])
    return model.forward(case["input.ids"], case["input.mask"].clone(), target)


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
    original = reference_model.moe_forward

    def spy(tokens, routing, *args):
        used.append(routing)
        return original(tokens, routing, *args)

    reference_model.moe_forward = spy  # where WideLabReference looks it up
    try:
        _, _, routes, _ = model.forward(case["input.ids"], case["input.mask"].clone())
    finally:
        reference_model.moe_forward = original
    assert len(routes) == 1 and len(used) == 2 and used[0] is used[1] is routes[0]
    assert not routes[0].kept.all()  # capacity 0.5 drops something


def _gradcheck(loss_fn, inputs):
    """Autograd's gradients of a float64 loss against central differences. Fast
    mode compares the Jacobian's product with random directions (one difference
    per input tensor) rather than every entry (one per parameter): a wrong
    gradient still fails for almost every direction, and the decoder's check
    takes seconds instead of 200 s."""
    return torch.autograd.gradcheck(loss_fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4,
                                    fast_mode=True)


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
        assert _gradcheck(loss_fn, inputs)


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


def _test_path_weight_values():
    for rule, n, value in (("inverse_sqrt_2n", 2, 0.5), ("inverse_n", 4, 0.25),
                           ("inverse_sqrt_n", 4, 0.5), ("inverse_n", 3, 1 / 3)):
        cfg = default_config(paths=n, path_weight=rule)
        assert abs(path_weight_value(cfg) - value) < 1e-12, (rule, n)
    assert abs(path_weight_value(default_config(paths=3)) - 1 / math.sqrt(6)) < 1e-12
    cfg = default_config(head="translation", paths=3, path_extra_features=True,
                         path_weight="inverse_n", decoder_layers=1)
    out = run_case(cfg, "eval", random_case(cfg, seed=20))
    initial = {k[8:]: v for k, v in out.items() if k.startswith("initial.")}
    # encoder: 2 blocks x (att, ffn); decoder: 1 block x (att, cross, ffn); alpha and beta each
    assert len(initial) == 2 * (2 * 2 + 3), sorted(initial)
    assert torch.equal(initial["decoder.path_cross.0.alpha"], torch.full([6], 1 / 3))
    assert torch.equal(initial["path_ffn.1.beta"], torch.ones(1))


def _translation_config(**overrides):
    return default_config(**dict({"head": "translation", "decoder_layers": 3, "routing_groups": 2,
                                  "eval_capacity_factor": 0.0}, **overrides))


def _test_translation_parameter_names():
    cfg = _translation_config(paths=2, path_norm=True, experts=1)
    shapes = expected_parameter_shapes(cfg)
    D, n, HA = 8, 2, 8
    assert "lm_head.weight" not in shapes and "classifier.weight" not in shapes
    assert "embed.cls" not in shapes and shapes["embed.position.weight"] == [8, D]
    assert shapes["decoder.cross.2.q.weight"] == [n * HA, D]
    assert shapes["decoder.cross.2.kv.bias"] == [2 * n * HA]
    assert shapes["decoder.cross.0.out_weight"] == [n, D, HA]
    assert shapes["decoder.attention.2.qkv.weight"] == [3 * n * HA, D]
    assert shapes["decoder.path_cross.1.norm_weight"] == [n, D]
    assert shapes["decoder.final_ln.bias"] == [D] and "decoder.cross.3.q.bias" not in shapes
    assert "attention.2.qkv.weight" not in shapes  # the encoder has its own 2 layers
    for name in shapes:                             # no parameter outside the documented families
        assert name.split(".")[0] in ("embed", "attention", "ffn", "ln_att", "ln_ffn", "path_att",
                                      "path_ffn", "final_ln", "decoder"), name
    shared = _translation_config(experts=3, top_k=2, share_attention=True, share_ffn=True,
                                 share_layernorm=True, share_router=False, paths=1,
                                 learnable_path_weights=True)
    names = expected_parameter_shapes(shared)
    count = lambda family: len({n.split(".")[2] for n in names if n.startswith(f"decoder.{family}.")})
    assert [count(f) for f in ("attention", "cross", "ffn", "ln_att", "ln_cross", "ln_ffn",
                               "path_att", "path_cross", "path_ffn", "router")] == [1] * 9 + [3]
    assert {n.split(".")[1] for n in names if n.startswith("router.")} == {"0", "1"}
    assert is_trainable(shared, "decoder.path_cross.0.alpha")
    assert not is_trainable(cfg, "decoder.path_cross.0.alpha")


def _test_cross_attention_matches_torch():
    """One path: q rows from the decoder, k|v rows from the memory, as torch's MHA
    with separate projections and the source padding mask."""
    torch.manual_seed(21)
    B, T2, S, D, H, A = 2, 4, 6, 8, 2, 4   # torch's MHA needs H*A = D
    HA = H * A
    cfg = default_config(d_model=D, heads=H, head_dim=A)
    params = {"c.q.weight": torch.randn(HA, D), "c.q.bias": torch.randn(HA),
              "c.kv.weight": torch.randn(2 * HA, D), "c.kv.bias": torch.randn(2 * HA),
              "c.out_weight": torch.randn(1, D, HA), "c.out_bias": torch.randn(1, D)}
    x, memory = torch.randn(B, T2, D), torch.randn(B, S, D)
    source_mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    (ours,) = reference_decoder.cross_attention_paths(cfg, x, memory, source_mask, "c", params)
    w_in = torch.cat([params["c.q.weight"], params["c.kv.weight"]])
    b_in = torch.cat([params["c.q.bias"], params["c.kv.bias"]])
    expected, _ = F.multi_head_attention_forward(
        x.transpose(0, 1), memory.transpose(0, 1), memory.transpose(0, 1), HA, H, w_in, b_in,
        None, None, False, 0.0, params["c.out_weight"][0], params["c.out_bias"][0],
        training=False, key_padding_mask=~source_mask, need_weights=False,
        use_separate_proj_weight=True, q_proj_weight=w_in[:HA], k_proj_weight=w_in[HA:2 * HA],
        v_proj_weight=w_in[2 * HA:])
    assert close(ours, expected.transpose(0, 1)), (ours - expected.transpose(0, 1)).abs().max()
    # two paths: path p's rows are (p*H + h)*A + a for q, ((s*n + p)*H + h)*A + a for k|v
    n = 2
    params2 = {"c.q.weight": torch.randn(n * HA, D), "c.q.bias": torch.randn(n * HA),
               "c.kv.weight": torch.randn(2 * n * HA, D), "c.kv.bias": torch.randn(2 * n * HA),
               "c.out_weight": torch.randn(n, D, HA), "c.out_bias": torch.randn(n, D)}
    outs = reference_decoder.cross_attention_paths(dict(cfg, paths=n), x, memory, source_mask,
                                                   "c", params2)
    for p in range(n):
        one = {"c.q.weight": params2["c.q.weight"][p * HA:(p + 1) * HA],
               "c.q.bias": params2["c.q.bias"][p * HA:(p + 1) * HA],
               "c.kv.weight": params2["c.kv.weight"][[*range(p * HA, (p + 1) * HA),
                                                      *range((n + p) * HA, (n + p + 1) * HA)]],
               "c.kv.bias": params2["c.kv.bias"][[*range(p * HA, (p + 1) * HA),
                                                  *range((n + p) * HA, (n + p + 1) * HA)]],
               "c.out_weight": params2["c.out_weight"][p:p + 1],
               "c.out_bias": params2["c.out_bias"][p:p + 1]}
        (single,) = reference_decoder.cross_attention_paths(cfg, x, memory, source_mask, "c", one)
        assert close(outs[p], single), p


def _test_decoder_without_cross_is_tied_language_model():
    """Cross-attention silenced (out weights and bias 0, plain residual): the decoder
    is a causal language model of the decoder's blocks with lm_head = embed.token.weight."""
    for overrides in ({}, {"experts": 3, "top_k": 2, "share_ffn": True},
                      {"share_attention": True, "share_layernorm": True}):
        cfg = _translation_config(**overrides)
        case = random_case(cfg, B=2, T=5, seed=22, lengths=[5, 2], target_length=6,
                           target_lengths=[6, 3])
        for i in range(3):
            for suffix in ("out_weight", "out_bias"):
                if f"param.decoder.cross.{i}.{suffix}" in case:
                    case[f"param.decoder.cross.{i}.{suffix}"].zero_()
        logits = _run_model(cfg, case)[0]
        lm = default_config(**dict(overrides, head="language_model", layers=3, routing_groups=2,
                                   eval_capacity_factor=0.0))
        lm_case = {"input.ids": case["input.target_ids"], "input.mask": case["input.target_mask"]}
        for name in expected_parameter_shapes(lm):
            if name == "lm_head.weight":
                lm_case["param." + name] = case["param.embed.token.weight"]
            elif name == "lm_head.bias":
                lm_case["param." + name] = torch.zeros(cfg["vocab_size"])
            elif name.startswith("embed."):
                lm_case["param." + name] = case["param." + name]
            else:
                lm_case["param." + name] = case["param.decoder." + name]
        expected = _run_model(lm, lm_case)[0]
        assert close(logits, expected), (overrides, (logits - expected).abs().max())


def _test_translation_causal_and_masks():
    cfg = _translation_config(paths=3, path_norm=True, path_extra_features=True)
    case = random_case(cfg, B=2, T=5, seed=23, lengths=[5, 3], target_length=5,
                       target_lengths=[5, 4])
    base = _run_model(cfg, case)[0]
    assert base.shape == (2, 5, cfg["vocab_size"])
    # later target tokens do not change earlier logits
    later = dict(case, **{"input.target_ids": case["input.target_ids"].clone()})
    later["input.target_ids"][:, 3:] = (later["input.target_ids"][:, 3:] + 1) % cfg["vocab_size"]
    out = _run_model(cfg, later)[0]
    assert close(base[:, :3], out[:, :3]) and not close(base[:, 3:], out[:, 3:])
    # padded source tokens change nothing; a real one changes every position
    padded = dict(case, **{"input.ids": case["input.ids"].clone()})
    padded["input.ids"][1, 3:] = (padded["input.ids"][1, 3:] + 1) % cfg["vocab_size"]
    assert close(base, _run_model(cfg, padded)[0])
    real = dict(case, **{"input.ids": case["input.ids"].clone()})
    real["input.ids"][0, 4] = (real["input.ids"][0, 4] + 1) % cfg["vocab_size"]
    changed = (_run_model(cfg, real)[0] - base).abs().amax(-1)
    assert (changed[0] > 1e-6).all() and (changed[1] < 1e-6).all(), changed


def _test_translation_routing():
    """Encoder calls first (its real source tokens, no CLS), then the decoder's
    min(G, decoder_layers) calls on the real target tokens, token-major."""
    for layers, Ld, G in ((2, 3, 2), (3, 1, 3), (2, 4, 2)):
        cfg = _translation_config(layers=layers, decoder_layers=Ld, routing_groups=G, experts=4,
                                  top_k=2, share_router=False, eval_capacity_factor=0.6)
        case = random_case(cfg, B=2, T=5, seed=24, lengths=[5, 3], target_length=4,
                           target_lengths=[4, 2])
        out = run_case(cfg, "eval", case)
        calls = len([k for k in out if k.startswith("route.") and k.endswith(".expert")])
        assert calls == G + min(G, Ld), (layers, Ld, G, calls)
        assert out["route.0.expert"].shape == (8, 2)
        assert out[f"route.{G}.expert"].shape == (6, 2)
        for i in range(Ld):
            routes = (i * min(G, Ld)) // Ld != ((i - 1) * min(G, Ld)) // Ld or i == 0
            assert (out[f"grad.decoder.router.{i}.weight"].abs().sum() > 0) == routes, (Ld, G, i)
    # slots: the encoder's choice-major (as a classifier's), the decoder's token-major
    cfg = _translation_config(layers=2, decoder_layers=2, experts=2, top_k=2)
    case = random_case(cfg, seed=25)
    seen = []
    original = reference_model.route_tokens

    def spy(*args, token_major=False, **kwargs):
        seen.append(token_major)
        return original(*args, token_major=token_major, **kwargs)

    reference_model.route_tokens = spy  # where WideLabReference looks it up
    try:
        _run_model(cfg, case)
    finally:
        reference_model.route_tokens = original
    assert seen == [False, False, True, True], seen


def _test_translation_gradients_finite_difference():
    cases = [
        _translation_config(decoder_layers=2, paths=3, path_norm=True, learnable_path_weights=True,
                            path_extra_features=True, path_weight="inverse_n", share_layernorm=True),
        _translation_config(decoder_layers=2, experts=3, top_k=2, capacity_factor=1.0,
                            routing_groups=1, share_attention=True, router_z_loss_weight=0.1),
    ]
    for cfg in cases:
        case = random_case(cfg, B=2, T=4, seed=26, lengths=[4, 2], dtype=torch.float64,
                           target_length=3, target_lengths=[3, 2])
        names = [n for n in expected_parameter_shapes(cfg) if is_trainable(cfg, n)
                 and (n.startswith("decoder.") or n.startswith("embed.") or n.startswith("ffn."))]

        def loss_fn(*tensors):
            c = dict(case)
            for n, t in zip(names, tensors):
                c["param." + n] = t
            params = {k[6:]: v for k, v in c.items() if k.startswith("param.")}
            model = WideLabReference(cfg, params, "train")
            logits, bal, _, _ = model.forward(c["input.ids"], c["input.mask"].clone(),
                                              (c["input.target_ids"], c["input.target_mask"]))
            return (task_loss(cfg, logits, c["input.targets"], c["input.target_mask"])
                    + cfg["balance_loss_weight"] * bal
                    + cfg.get("router_z_loss_weight", 0.0) * model.router_z_loss)

        inputs = [case["param." + n].clone().requires_grad_(True) for n in names]
        assert _gradcheck(loss_fn, inputs)


def _test_translation_end_to_end():
    cfg = _translation_config(experts=2, top_k=1, capacity_factor=1.0, router_z_loss_weight=0.5)
    case = random_case(cfg, B=2, T=5, seed=27, lengths=[5, 3], target_length=4,
                       target_lengths=[4, 3])
    out = run_case(cfg, "train", case)
    assert out["logits"].shape == (2, 4, cfg["vocab_size"])
    mask = case["input.target_mask"]
    expected = (F.cross_entropy(out["logits"][mask], case["input.targets"][mask])
                + 0.01 * out["balance_loss"] + 0.5 * out["router_z_loss"])
    assert close(out["loss"], expected)
    assert out["router_z_loss"] > 0
    # the tied embedding gets gradient from both ends, the decoder's cross-attention too
    assert out["grad.embed.token.weight"].abs().sum() > 0
    assert out["grad.decoder.cross.2.kv.weight"].abs().sum() > 0
    assert out["grad.attention.0.qkv.weight"].abs().sum() > 0


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
    sys.exit(self_test())
