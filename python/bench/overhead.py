#!/usr/bin/env python3
"""The cost of the Python layer per call: a filter step (N <- Binomial(N, 0.8) + Poisson(10), observe
Binomial(N, 0.6) = 30, resample when ESS < P/2: 6 engine calls) through the bindings against the same step through
the C++ API (tally_python_bench, built beside the module), on a CPU graph of P particles; and one cheap call alone,
Graph.constant(7) (fills P values), in both.

Usage: PYTHONPATH=<build>/python python3 python/bench/overhead.py [--build <build>] [--sizes 1 65536] [--repeats 5]
       [--device cpu|cuda]
Prints a Markdown table: seconds per step (and per constant() call) in C++ and in Python, the difference per engine
call, and the ratio.
Each number is the best of --repeats runs, C++ and Python alternated (each run: one warm-up step, then the timed
steps).
"""

import argparse
import pathlib
import subprocess
import time

import tally

CALLS_PER_STEP = 6


def python_seconds(P, steps, calls, device):
    g = tally.Graph(P, 1, device)
    N = g.assume(tally.Poisson(50.0))

    def step(N):
        N = g.binomial(N, 0.8) + g.assume(tally.Poisson(10.0))
        g.observe(g.binomial(N, 0.6), 30)
        g.resample_by_weight(0.5)
        return N

    N = step(N)
    start = time.perf_counter()
    for _ in range(steps):
        N = step(N)
    g.log_weights  # a CUDA graph's work is asynchronous: wait for it (as the C++ side does)
    s = (time.perf_counter() - start) / steps
    start = time.perf_counter()
    for _ in range(calls):
        g.constant(7)
    g.log_weights
    return s, (time.perf_counter() - start) / calls


def cpp_seconds(exe, P, steps, calls, device):
    out = subprocess.run([str(exe), str(P), str(steps), str(calls), device], check=True, capture_output=True,
                         text=True)
    return tuple(float(x) for x in out.stdout.split())


def best(runs):
    return tuple(min(r[i] for r in runs) for i in range(2))


def main():
    here = pathlib.Path(tally.__file__).resolve().parent.parent.parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", type=pathlib.Path, default=here)
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 65536])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = p.parse_args()
    exe = a.build / "python" / "tally_python_bench"
    print(f"device: {a.device} ({tally.device_description() if a.device == 'cuda' else 'one core'})")
    print("| P | what | C++ | Python | Python - C++ per call | Python / C++ |")
    print("|---:|---|---:|---:|---:|---:|")
    for P in a.sizes:
        # (a CUDA graph's step grows slower over hundreds of steps of this filter: 20 steps on both sides)
        steps = (2000 if P == 1 else 2) if a.device == "cpu" else 20
        calls = (100000 if P == 1 else 200) if a.device == "cpu" else 10000
        runs = [(cpp_seconds(exe, P, steps, calls, a.device), python_seconds(P, steps, calls, a.device))
                for _ in range(a.repeats)]  # alternated, so that a busy machine slows both alike
        cpp, py = best([r[0] for r in runs]), best([r[1] for r in runs])
        for what, c, p, n in (("filter step (6 calls)", cpp[0], py[0], CALLS_PER_STEP),
                              ("constant(7)", cpp[1], py[1], 1)):
            print(f"| {P} | {what} | {c:.4g} s | {p:.4g} s | {(p - c) / n * 1e6:+.3f} us | "
                  f"{p / c:.3f} |")


if __name__ == "__main__":
    main()
