#!/usr/bin/env python3
"""The tutorial's model in Python (docs/tutorial.md): bats in a roost, counted once a week.

N_0 ~ Poisson(40) bats at the start; each week every bat stays with probability 0.9 and Poisson(5) new ones
arrive, N_t = Binomial(N_{t-1}, 0.9) + Poisson(5); the count sees each bat with probability 0.75,
y_t ~ Binomial(N_t, 0.75). First the exact log-evidence and posterior (one particle, strict mode), then a particle
filter whose particles each draw their own N_t, on the CPU or on a GPU.

Usage: PYTHONPATH=build/python /usr/bin/python3 docs/tutorial/model.py [cpu|cuda|automatic] [particles]
"""

import math
import sys

import tally

COUNTS = [31, 28, 33, 30, 36, 34, 29, 32]  # y_0 .. y_7
START, STAY, ARRIVE, SEEN = 40.0, 0.9, 5.0, 0.75


def exact():
    """One particle: every N_t stays marginalized, so each observation is exact and nothing is drawn."""
    g = tally.Graph(1, seed=1, device="cpu")
    g.strict = True  # any sampling would raise tally.InexactError instead
    n = g.assume(tally.Poisson(START))
    g.name(n, "N0")
    log_evidence = 0.0
    for t, y in enumerate(COUNTS):
        if t > 0:
            arrivals = g.assume(tally.Poisson(ARRIVE))
            g.name(arrivals, f"arrivals{t}")
            n = g.binomial(n, STAY) + arrivals  # a thinning plus a convolution, exactly
        o = g.observe(g.binomial(n, SEEN), y)  # log p(y_t | y_0 .. y_{t-1}), conditions N_t on y_t
        log_evidence += o.log_likelihoods[0]
        print(f"week {t}: y = {y:2d}  log p(y_t | past) = {o.log_likelihoods[0]:9.5f}  {o.exactness.describe()}")
    posterior = g.marginal(n)[0]  # the law of N_7 given all eight counts, a tally.Pmf
    print(f"exact log-evidence {log_evidence:.10f}; N_7 | y: mean {posterior.mean():.3f}, "
          f"90% in [{posterior.quantile(0.05)}, {posterior.quantile(0.95)}]")
    return log_evidence


def particle_filter(particles, device):
    """P particles; after each count every particle draws its own N_t from its exact posterior, so the weights
    differ and the population is resampled (the way an engine runs a program that reads its state)."""
    g = tally.Graph(particles, seed=7, device=device)
    n = g.assume(tally.Poisson(START))
    log_evidence = 0.0
    for t, y in enumerate(COUNTS):
        if t > 0:
            n = g.binomial(n, STAY) + g.assume(tally.Poisson(ARRIVE))
        g.observe(g.binomial(n, SEEN), y)  # exact p(y_t | N_{t-1}) in each particle
        g.realize(n)  # each particle draws N_t from its exact posterior
        s = g.summarize(n, [0.05, 0.95])  # weighted mean, ESS and quantiles, where the particles live
        step = g.resample_by_weight()  # always: adds nothing twice to the log-evidence
        log_evidence += step.log_mean_weight
        print(f"week {t}: N_t mean {s.mean:6.2f}  90% [{s.quantiles[0]}, {s.quantiles[1]}]  ESS {s.ess:8.1f}")
    print(f"{particles} particles on {g.device}: log-evidence estimate {log_evidence:.6f}")
    return log_evidence


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    particles = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    z = exact()
    note = tally.device_fallback()  # why a CUDA build runs on the CPU ("" when it does not)
    if note:
        print(f"note: {note}")
    try:
        estimate = particle_filter(particles, device)
    except tally.CudaError as e:  # device="cuda" where no device can be used
        print(f"no GPU here: {e}")
        return 1
    print(f"estimate - exact = {estimate - z:+.6f}")
    return 0 if math.isfinite(estimate) else 1


if __name__ == "__main__":
    sys.exit(main())
