#!/usr/bin/python3
"""PyTorch peer of bench_op_overhead.cpp: the same chains of 10 ops on the same tiny tensors,
timed the same way (thread CPU time, median of repeats), microseconds per op.

Run with Debian's python3-torch: /usr/bin/python3 bench/pytorch_op_overhead.py
"""
import statistics
import sys
import time

import torch

CHAIN = 10


def median_seconds(fn, iters, repeats, warmup):
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        start = time.thread_time_ns()
        for _ in range(iters):
            fn()
        runs.append((time.thread_time_ns() - start) * 1e-9 / iters)
    return statistics.median(runs)


def calibrate(fn, target):
    iters = 1
    while True:
        start = time.thread_time_ns()
        for _ in range(iters):
            fn()
        elapsed = (time.thread_time_ns() - start) * 1e-9
        if elapsed >= target / 4:
            return max(1, int(iters * target / max(elapsed, 1e-9)))
        iters *= 4


def main():
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 15
    torch.manual_seed(0)
    torch.set_num_threads(1)

    def small(*shape):
        return torch.rand(*shape) * 0.5 + 0.5

    cases = [
        ("add", "[4]", small(4), small(4), lambda y, w: torch.add(y, w)),
        ("mul", "[4]", small(4), small(4), lambda y, w: torch.mul(y, w)),
        ("mul scalar", "[4]", small(4), None, lambda y, w: y * 1.01),
        ("tanh", "[4]", small(4), None, lambda y, w: torch.tanh(y)),
        ("matmul", "[2, 2]", small(2, 2), small(2, 2), lambda y, w: torch.matmul(y, w)),
        ("sum", "[4]", small(4), None, lambda y, w: y.sum(-1, keepdim=True)),
    ]
    print(f"PyTorch {torch.__version__} (Python): per-op overhead in microseconds (float32, chains of "
          f"{CHAIN} ops, thread CPU time, median of {repeats} runs)")
    print(f"{'op':<11} {'shape':<7} {'no grad':>9} {'recording':>10} {'fwd+backward':>14} {'backward':>9}")
    for name, shape, x, w, op in cases:
        def chain(start):
            y = start
            for _ in range(CHAIN):
                y = op(y, w)
            return y

        leaf = x.detach().clone().requires_grad_(True)
        seed = torch.ones_like(chain(x))

        def no_grad():
            chain(x)

        def record():
            chain(leaf)

        def both():
            chain(leaf).backward(seed)
            leaf.grad = None

        def timed(fn):
            iters = calibrate(fn, 0.01)
            return median_seconds(fn, iters, repeats, iters) * 1e6 / CHAIN

        t_none, t_record, t_both = timed(no_grad), timed(record), timed(both)
        print(f"{name:<11} {shape:<7} {t_none:>9.3f} {t_record:>10.3f} {t_both:>14.3f} {t_both - t_record:>9.3f}")
    print("(recording: the chain is built then dropped; backward = fwd+backward - recording)")


if __name__ == "__main__":
    main()
