"""The PyTorch baseline of bench/ (bench/widelab_torch.py) computes what its
hand-written predecessor computed, so that its speed is compared like for like:

- the stacked experts (batched, and grouped where torch has _grouped_mm) give
  the per-expert loop's output and gradients for the same weights and routing,
  dropped pairs included, and a hand-worked case;
- attention through F.scaled_dot_product_attention (torch 2.x) equals the
  scores written out, causal or not;
- the default side picks what the module docstring says, and a grouped side
  that cannot run is refused with the reason;
- `--kernels`'s profile of a step counts each operator's calls and ranks them
  by self time on the CPU, as `widelab-cli bench --kernels` does.

Run by the reference Python (any torch); under torch 2.x the SDPA and grouped
checks run too, and are reported as skipped otherwise.
"""

import math
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import widelab_torch as wt  # noqa: E402

CPU = torch.device("cpu")


def experts_config(experts, d_model, ffn_dim, activation="gelu"):
    return {"experts": experts, "d_model": d_model, "ffn_dim": ffn_dim, "activation": activation}


def stacked_like(loop, grouped):
    """StackedExperts holding the loop's weights (nn.Linear keeps [out, in])."""
    first = loop.experts[0]
    cfg = experts_config(len(loop.experts), first[0].in_features, first[0].out_features)
    stacked = wt.StackedExperts(cfg, grouped)
    with torch.no_grad():
        for e, expert in enumerate(loop.experts):
            stacked.w1[e].copy_(expert[0].weight.t())
            stacked.b1[e, 0].copy_(expert[0].bias)
            stacked.w2[e].copy_(expert[2].weight.t())
            stacked.b2[e, 0].copy_(expert[2].bias)
    return stacked


def routing(expert, gates, capacity):
    """Routing of hand-picked experts: slots counted token-major, as the
    language model's router counts them (the order does not matter here)."""
    expert = torch.tensor(expert)
    S, K = expert.shape
    slot = torch.empty_like(expert)
    seen = {}
    for s in range(S):
        for k in range(K):
            e = int(expert[s, k])
            slot[s, k] = seen.get(e, 0)
            seen[e] = seen.get(e, 0) + 1
    return wt.Routing(expert, torch.tensor(gates), slot, slot < capacity, capacity, torch.zeros(()))


def grouped_available():
    return wt.grouped_mm_refusal(CPU, torch.float32) is None


class StackedExpertsMatchTheLoop(unittest.TestCase):
    # Five tokens, two choices each, three experts. With capacity 2, expert 0
    # serves tokens 0 and 2 (token 3 dropped), expert 1 tokens 0 and 1 (3 and 4
    # dropped), expert 2 tokens 1 and 2 (4 dropped).
    EXPERT = [[0, 1], [1, 2], [0, 2], [1, 0], [2, 1]]
    GATES = [[0.6, 0.4], [0.7, 0.3], [0.5, 0.5], [0.9, 0.1], [0.8, 0.2]]

    def check(self, grouped, capacity):
        torch.manual_seed(1)
        loop = wt.LoopedExperts(experts_config(3, 8, 16))
        stacked = stacked_like(loop, grouped)
        route = routing(self.EXPERT, self.GATES, capacity)
        x = torch.randn(5, 8)
        outputs, gradients = [], []
        for experts in (loop, stacked):
            given = x.clone().requires_grad_()
            out = experts(given, route)
            out.backward(torch.linspace(-1.0, 1.0, out.numel()).view_as(out))
            outputs.append(out.detach())
            gradients.append(given.grad)
        torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(gradients[1], gradients[0], rtol=1e-5, atol=1e-6)
        def gradient(p):
            return torch.zeros_like(p) if p.grad is None else p.grad  # an expert without tokens

        for e, expert in enumerate(loop.experts):
            for mine, theirs in ((stacked.w1.grad[e], gradient(expert[0].weight).t()),
                                 (stacked.b1.grad[e, 0], gradient(expert[0].bias)),
                                 (stacked.w2.grad[e], gradient(expert[2].weight).t()),
                                 (stacked.b2.grad[e, 0], gradient(expert[2].bias))):
                torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
        return outputs[0]

    def test_batched_with_dropped_pairs(self):
        out = self.check(grouped=False, capacity=2)
        # Token 3's both choices are dropped, so its output is zero.
        self.assertEqual(out[3].abs().max().item(), 0.0)

    def test_batched_dropless(self):
        out = self.check(grouped=False, capacity=5)
        self.assertGreater(out[3].abs().max().item(), 0.0)

    @unittest.skipUnless(grouped_available(), "torch has no working torch._grouped_mm on the CPU")
    def test_grouped_with_dropped_pairs(self):
        self.check(grouped=True, capacity=2)

    @unittest.skipUnless(grouped_available(), "torch has no working torch._grouped_mm on the CPU")
    def test_grouped_dropless(self):
        self.check(grouped=True, capacity=5)

    def test_hand_worked(self):
        # D = M = 4 (grouped_mm wants rows of 16 bytes), ReLU, first matrix the identity, second 2I, 3I and 4I for
        # experts 0, 1 and 2, no biases, one slot per expert. Token 0 goes to
        # experts 0 and 1 with gates 0.25 and 0.75: 0.25 * 2x + 0.75 * 3x =
        # 2.75x. Token 1 picks experts 1 and 2 (0.5 each), but expert 1's slot
        # went to token 0, so 0.5 * 4 relu(x) = 2 relu(x) remains.
        cfg = experts_config(3, 4, 4, "relu")
        for grouped in ([False, True] if grouped_available() else [False]):
            stacked = wt.StackedExperts(cfg, grouped)
            with torch.no_grad():
                stacked.w1.copy_(torch.eye(4).expand(3, 4, 4))
                stacked.w2.copy_(torch.stack([2 * torch.eye(4), 3 * torch.eye(4), 4 * torch.eye(4)]))
                stacked.b1.zero_()
                stacked.b2.zero_()
            route = routing([[0, 1], [1, 2]], [[0.25, 0.75], [0.5, 0.5]], capacity=1)
            out = stacked(torch.tensor([[1.0, 2.0, 0.0, 1.0], [4.0, -3.0, 1.0, -1.0]]), route)
            torch.testing.assert_close(out, torch.tensor([[2.75, 5.5, 0.0, 2.75], [8.0, 0.0, 2.0, 0.0]]))


@unittest.skipUnless(wt.HAS_SDPA, "torch has no F.scaled_dot_product_attention")
class FusedAttentionMatchesTheScores(unittest.TestCase):
    def test_causal_and_not(self):
        torch.manual_seed(2)
        q, k, v = (torch.randn(2, 3, 6, 4) for _ in range(3))
        for causal in (False, True):
            fused = wt.attend(q, k, v, causal, 0.0, sdpa=True)
            scores = q @ k.transpose(-2, -1) / math.sqrt(4)
            if causal:
                scores = scores.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
            torch.testing.assert_close(fused, scores.softmax(-1) @ v, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(wt.attend(q, k, v, causal, 0.0, sdpa=False), fused, rtol=1e-5, atol=1e-6)


class TheSideIsWhatItSays(unittest.TestCase):
    def test_default_on_the_cpu(self):
        side = wt.Baseline(False, CPU, torch.float32)
        self.assertEqual(side.experts, "batched")
        self.assertEqual(side.sdpa, wt.HAS_SDPA)
        self.assertFalse(side.fused_adamw)  # fused on CUDA only, as nanoGPT does
        self.assertEqual(wt.side_name(side, None), "eager")
        self.assertEqual(wt.side_name(side, "reduce-overhead"), "torch.compile (reduce-overhead)")

    def test_hand_written(self):
        side = wt.Baseline(True, CPU, torch.float32)
        self.assertEqual((side.experts, side.sdpa), ("loop", False))
        described = side.describe({"experts": 4})
        self.assertEqual(described["attention"], wt.HAND_WRITTEN)
        self.assertEqual(described["experts"], wt.LoopedExperts.name)
        self.assertIsNone(side.describe({"experts": 1})["experts"])
        self.assertEqual(wt.side_name(side, None), "hand-written eager")

    def test_grouped_refused_with_the_reason(self):
        if grouped_available():
            self.assertEqual(wt.Baseline(False, CPU, torch.float32, "grouped").experts, "grouped")
            return
        with self.assertRaises(ValueError) as refused:
            wt.Baseline(False, CPU, torch.float32, "grouped")
        self.assertIn("--experts grouped", str(refused.exception))
        self.assertIn("_grouped_mm", str(refused.exception))


class TheKernelProfile(unittest.TestCase):
    def test_counts_and_ranks_the_operators(self):
        big, small = torch.rand(384, 384), torch.ones(16)

        def step():
            for _ in range(3):
                torch.mm(big, big)  # 2 * 384^3 FLOPs each, against additions of 16 values
            for _ in range(2):
                small + 1

        profile = wt.profile_step(step, CPU, 10)
        self.assertEqual(profile["time"], "host self")
        self.assertEqual(profile["by_kernel"], [])
        rows = {row["name"]: row for row in profile["by_operator"]}
        self.assertEqual(rows["aten::mm"]["calls"], 3)
        self.assertEqual(rows["aten::add"]["calls"], 2)
        self.assertEqual(profile["by_operator"][0]["name"], "aten::mm")
        seconds = [row["seconds"] for row in profile["by_operator"]]
        self.assertEqual(seconds, sorted(seconds, reverse=True))
        self.assertLessEqual(sum(seconds), profile["seconds"] * (1 + 1e-9))
        self.assertEqual(len(wt.profile_step(step, CPU, 1)["by_operator"]), 1)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if not a.startswith("--cli")])
