#!/usr/bin/python3
"""CPU bmm against the same products one mm at a time (docs/performance.md).

768 products [256 x 32] x [32 x 256]: the attention scores of one training
step of transformer-1x48-d256 (batch 16 x 48 heads, sequence 256, head_dim 32).

Usage: [OPENBLAS_NUM_THREADS=1] /usr/bin/python3 bench/bmm_vs_mm.py [THREADS]
"""

import os
import sys
import time

import torch


def milliseconds(work, repeats=2):
    work()
    start = time.perf_counter()
    for _ in range(repeats):
        work()
    return (time.perf_counter() - start) / repeats * 1e3


def main(argv):
    torch.set_num_threads(int(argv[0]) if argv else 2)
    q, k = torch.randn(768, 256, 32), torch.randn(768, 32, 256)
    bmm = milliseconds(lambda: torch.bmm(q, k))
    loop = milliseconds(lambda: [torch.mm(q[i], k[i]) for i in range(q.shape[0])])
    print(f"threads {torch.get_num_threads()}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}: "
          f"bmm {bmm:.0f} ms, loop of mm {loop:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
