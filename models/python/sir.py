#!/usr/bin/env python3
"""The main example in Python: an SIR epidemic on the 1978 boarding-school influenza outbreak, filtered by tally.

The same two filters as models/sir.cpp, call for call, so that the same seed and particles give the same
log-evidence as the C++ program (`build/models/sir --runs 1 --compare-days 0 --results` prints it):
- delayed sampling: delta, gamma ~ Beta(2, 2) stay conjugate, new ~ Binomial(tau, delta) and rec ~ Binomial(I,
  gamma) stay marginalized until I(t) - I(t-1) = new - rec is observed, which tally weighs exactly (one skew
  diagonal) before drawing new and rec from their exact joint posterior;
- bootstrap: everything drawn forward, weight 1 when the simulated I(t) equals the data, else 0.
Both draw the contacts tau ~ Binomial(S, 1 - exp(-lambda I / N)) (a chain binomial). The plot (matplotlib) shows
the filtered S and R with their 90% bands and the data.

Usage: PYTHONPATH=build/python /usr/bin/python3 models/python/sir.py [--particles P] [--seed S] [--days D]
       [--device cpu|gpu] [--plot sir_python.png]
"""

import argparse
import math
import sys
import time

import tally

PUPILS = 763
INFECTED0 = 3
IN_BED = [3, 8, 26, 76, 225, 298, 258, 233, 189, 128, 68, 29, 14, 4]
BANDS = [0.05, 0.95]


def infected(t, in_bed):
    """I(t) for t = 0 .. days."""
    return INFECTED0 if t == 0 else in_bed[t - 1]


class Run:
    """One filter's result: the log-evidence, the day every particle died (0: none), daily bands, timing."""

    def __init__(self):
        self.log_evidence = 0.0
        self.failed_day = 0
        self.days = [((PUPILS - INFECTED0,) * 3, (0, 0, 0), 0.0)]  # (S band, R band, ESS) per day
        self.delta_mean = self.gamma_mean = float("nan")
        self.seconds = 0.0


def band(g, x):
    s = g.summarize(x, BANDS)
    return (s.mean, s.quantiles[0], s.quantiles[1])


def end_of_day(out, t, g, S, R):
    """Summarize S and R under the day's weights, resample (systematic) and add the evidence increment."""
    s, r = band(g, S), band(g, R)
    step = g.resample_by_weight(1.0)
    if step.log_mean_weight == -math.inf:
        out.log_evidence, out.failed_day = -math.inf, t
        return False
    out.log_evidence += step.log_mean_weight
    out.days.append((s, r, step.ess))
    return True


def delayed_filter(particles, seed, in_bed, lam=10.0, device="cpu"):
    start = time.perf_counter()
    g = tally.Graph(particles, seed, device)
    delta = g.assume(tally.Beta(2, 2))  # the probability that a contact infects
    gamma = g.assume(tally.Beta(2, 2))  # the daily probability of recovery
    S, I, R = g.constant(PUPILS - INFECTED0), g.constant(INFECTED0), g.constant(0)
    c = lam / PUPILS
    out = Run()
    for t in range(1, len(in_bed) + 1):
        tau = g.binomial(S, tally.hazard_probabilities(g.values(I), c))  # contacts, a chain binomial
        g.realize(tau)
        n = g.binomial(tau, delta)  # new infections
        r = g.binomial(I, gamma)  # recoveries
        d = n - r
        g.observe(d, g.constant(infected(t, in_bed)) - I)  # new and rec drawn given d
        S, I, R = S - n, I + d, R + r
        if not end_of_day(out, t, g, S, R):
            break
    out.seconds = time.perf_counter() - start
    if out.failed_day == 0:
        out.delta_mean = sum(b.mean() for b in g.beta(delta)) / particles
        out.gamma_mean = sum(b.mean() for b in g.beta(gamma)) / particles
    return out


def bootstrap_filter(particles, seed, in_bed, lam=10.0, device="cpu"):
    start = time.perf_counter()
    g = tally.Graph(particles, seed, device)
    delta, gamma = g.assume(tally.Beta(2, 2)), g.assume(tally.Beta(2, 2))
    g.realize(delta)
    g.realize(gamma)
    S, I, R = g.constant(PUPILS - INFECTED0), g.constant(INFECTED0), g.constant(0)
    c = lam / PUPILS
    out = Run()
    for t in range(1, len(in_bed) + 1):
        tau = g.binomial(S, tally.hazard_probabilities(g.values(I), c))
        g.realize(tau)
        n, r = g.binomial(tau, delta), g.binomial(I, gamma)
        g.realize(n)
        g.realize(r)
        S, I, R = S - n, I + (n - r), R + r
        g.observe(I, infected(t, in_bed))
        if not end_of_day(out, t, g, S, R):
            break
    out.seconds = time.perf_counter() - start
    if out.failed_day == 0:
        out.delta_mean = float(g.scalar_value(delta).mean())
        out.gamma_mean = float(g.scalar_value(gamma).mean())
    return out


def plot(run, in_bed, lam, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = list(range(len(run.days)))
    fig, ax = plt.subplots(figsize=(10, 6.2))
    for k, (name, color) in enumerate((("S", "#1f77b4"), ("R", "#2ca02c"))):
        mean = [d[k][0] for d in run.days]
        lo = [d[k][1] for d in run.days]
        hi = [d[k][2] for d in run.days]
        ax.fill_between(days, lo, hi, color=color, alpha=0.25, linewidth=0, label=f"{name}: 90% band")
        ax.plot(days, mean, color=color, linewidth=2, label=f"{name}: filtered mean")
    ax.plot(days, [infected(t, in_bed) for t in days], "o-", color="#d62728", label="I: in bed (data)")
    ax.set_title(f"Boarding-school influenza, 1978 (N = {PUPILS}): SIR filtered by tally (Python), lambda = {lam:g}\n"
                 f"log-evidence {run.log_evidence:.3f}, posterior means delta = {run.delta_mean:.3f}, "
                 f"gamma = {run.gamma_mean:.3f}")
    ax.set_xlabel("day")
    ax.set_ylabel("pupils")
    ax.set_xlim(0, len(in_bed))
    ax.set_ylim(0, PUPILS)
    ax.grid(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--days", type=int, default=14, choices=range(1, 15), metavar="1..14")
    p.add_argument("--lambda", dest="lam", type=float, default=10.0)
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--plot", default="sir_python.png", help="PNG file ('' for none)")
    a = p.parse_args(argv)
    in_bed = IN_BED[: a.days]
    device = "cuda" if a.device == "gpu" else "cpu"
    print(f"SIR, boarding-school influenza 1978: N = {PUPILS}, I(0) = {INFECTED0}, I(1..{a.days}) observed; "
          f"{a.particles} particles on the {a.device}, seed {a.seed}")
    delayed = delayed_filter(a.particles, a.seed, in_bed, a.lam, device)
    bootstrap = bootstrap_filter(a.particles, a.seed, in_bed, a.lam, device)
    for name, run in (("delayed", delayed), ("bootstrap", bootstrap)):
        where = f" (every weight zero on day {run.failed_day})" if run.failed_day else ""
        print(f"  {name:10s} log-evidence {run.log_evidence:.10f}{where}  posterior means delta {run.delta_mean:.4f}, "
              f"gamma {run.gamma_mean:.4f}  ({run.seconds:.3f} s)")
    if a.plot and delayed.failed_day == 0:
        plot(delayed, in_bed, a.lam, a.plot)
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
