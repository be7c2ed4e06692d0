#!/usr/bin/env python3
"""Independent PyTorch reference for WideLab's LAMB optimizer (core/train/Lamb.h).

Usage:
    python3 optim_reference.py CASE.json CASE.pt OUT.pt
    python3 optim_reference.py --self-test

CASE.json: {"steps": N, "params": [{"lr", "betas": [b1, b2], "eps", "weight_decay",
            "bias_correction"} for each parameter tensor]}
CASE.pt:   dict str -> Tensor: "param.<i>" the initial value of parameter i,
           "grad.<t>.<i>" its gradient at step t = 0 .. N-1.
OUT.pt:    dict str -> Tensor: "param.<t>.<i>" parameter i after step t, and
           "exp_avg.<i>", "exp_avg_sq.<i>" its moments after the last step; all float64.

Written from the paper only (You et al. 2019, "Large Batch Optimization for Deep
Learning: Training BERT in 76 minutes", Algorithm 2, phi = identity, one layer per
tensor, trust ratio 1 when a norm is zero), in float64, one parameter at a time.
"""

import json
import math
import sys

import torch


def lamb_direction(w, g, m, v, t, hp):
    """The moments after step t >= 1 and the update u before the trust ratio; returns (u, m, v)."""
    b1, b2 = hp["betas"]
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * g * g
    if hp["bias_correction"]:
        m_hat = m / (1.0 - b1 ** t)
        v_hat = v / (1.0 - b2 ** t)
    else:
        m_hat, v_hat = m, v
    u = m_hat / (torch.sqrt(v_hat) + hp["eps"]) + hp["weight_decay"] * w
    return u, m, v


def lamb_step(w, g, m, v, t, hp):
    """One LAMB update of parameter w (float64) at step t >= 1; returns (w, m, v)."""
    u, m, v = lamb_direction(w, g, m, v, t, hp)
    w_norm = math.sqrt(float((w * w).sum()))
    u_norm = math.sqrt(float((u * u).sum()))
    r = w_norm / u_norm if w_norm > 0.0 and u_norm > 0.0 else 1.0
    return w - hp["lr"] * r * u, m, v


def run_case(spec, case):
    count = len(spec["params"])
    weights = [case[f"param.{i}"].to(torch.float64).clone() for i in range(count)]
    ms = [torch.zeros_like(w) for w in weights]
    vs = [torch.zeros_like(w) for w in weights]
    out = {}
    for step in range(spec["steps"]):
        for i, hp in enumerate(spec["params"]):
            g = case[f"grad.{step}.{i}"].to(torch.float64)
            weights[i], ms[i], vs[i] = lamb_step(weights[i], g, ms[i], vs[i], step + 1, hp)
            out[f"param.{step}.{i}"] = weights[i].clone()
    for i in range(count):
        out[f"exp_avg.{i}"] = ms[i]
        out[f"exp_avg_sq.{i}"] = vs[i]
    return out


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        spec = json.load(fh)
    case = torch.load(argv[2], weights_only=False)  # written by torch::save (TorchScript pickle)
    torch.save(run_case(spec, case), argv[3])
    return 0


def self_test():
    """With the trust ratio forced to 1 LAMB is AdamW: check lamb_direction against torch.optim.AdamW."""
    torch.manual_seed(0)
    hp = {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-6, "weight_decay": 0.1, "bias_correction": True}
    w0 = torch.randn(4, 3, dtype=torch.float64)
    p = w0.clone().requires_grad_(True)
    adamw = torch.optim.AdamW([p], lr=hp["lr"], betas=tuple(hp["betas"]), eps=hp["eps"],
                              weight_decay=hp["weight_decay"])
    w, m, v = w0.clone(), torch.zeros_like(w0), torch.zeros_like(w0)
    for t in range(1, 6):
        g = torch.randn_like(w0)
        p.grad = g.clone()
        adamw.step()
        # AdamW decays before the Adam step: w (1 - lr wd) - lr m_hat / (sqrt(v_hat) + eps) = w - lr u.
        u, m, v = lamb_direction(w, g, m, v, t, hp)
        w = w - hp["lr"] * u
        assert torch.allclose(w, p.detach(), rtol=1e-12, atol=1e-14), (t, w, p)
    # lamb_step on a constructed case: w = [6, 8], g = [1, -2], eps 0, bias corrected:
    # u = sign(g) + 0.5 w = [4, 3], r = 10 / 5 = 2, w = [6, 8] - 0.1 * 2 * [4, 3] = [5.2, 7.4].
    hp = {"lr": 0.1, "betas": [0.9, 0.999], "eps": 0.0, "weight_decay": 0.5, "bias_correction": True}
    w, _, _ = lamb_step(torch.tensor([6.0, 8.0], dtype=torch.float64), torch.tensor([1.0, -2.0], dtype=torch.float64),
                        torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64), 1, hp)
    assert torch.allclose(w, torch.tensor([5.2, 7.4], dtype=torch.float64), rtol=1e-12), w
    # zero weights: the trust ratio falls back to 1, w = -0.1 * sign(g).
    w, _, _ = lamb_step(torch.zeros(2, dtype=torch.float64), torch.tensor([1.0, -2.0], dtype=torch.float64),
                        torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64), 1, hp)
    assert torch.allclose(w, torch.tensor([-0.1, 0.1], dtype=torch.float64), rtol=1e-12), w
    print("self-test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
