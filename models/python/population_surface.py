#!/usr/bin/env python3
"""Many models at once in Python: the exact likelihood surface of the population model over a grid of (phi, p).

The model (as models/population_model.hpp): N_0 ~ Poisson(lambda0); each season S_t ~ Binomial(N_{t-1}, phi)
survive, I_t ~ Poisson(iota) immigrate, N_t = S_t + I_t; y_t ~ Binomial(N_t, p) are counted. The data are the C++
examples' (simulated from the same random stream, so the surface is models/population_surface's).

One graph holds a group of one particle per grid point (tally.Groups(G, 1)); the per-group survival and detection
probabilities come from NumPy arrays through tally.each. Nothing is drawn: every group's log-evidence is its exact
log-likelihood, read with resample_groups(0.0). The program checks one grid point against a graph of that point
alone, prints the maximum, and draws the surface with its contours (matplotlib).

Usage: PYTHONPATH=build/python /usr/bin/python3 models/python/population_surface.py [--side 64] [--seasons 20]
       [--device cpu|gpu] [--plot population_surface_python.png]
"""

import argparse
import sys
import time

import numpy as np

import tally

LAMBDA0, PHI, IOTA, P = 50.0, 0.8, 10.0, 0.6  # the data's parameters
DATA_SEED = 7


def simulate(seasons, seed=DATA_SEED):
    """y_0 .. y_{T-1} drawn forward from RandomStream(seed, 0), draw for draw as the C++ examples."""
    rng = tally.RandomStream(seed, 0)
    n = tally.sample(tally.Poisson(LAMBDA0).to_pmf(), rng)
    y = []
    for t in range(seasons):
        if t > 0:
            n = tally.sample(tally.Binomial(n, PHI).to_pmf(), rng) + tally.sample(tally.Poisson(IOTA).to_pmf(), rng)
        y.append(tally.sample(tally.Binomial(n, P).to_pmf(), rng))
    return y


def log_likelihoods(y, phi, p, device):
    """Each (phi_k, p_k)'s exact log-likelihood of y: one graph, a group of one particle per set."""
    g = tally.Graph(tally.Groups(phi.size, 1), 1, device)
    g.strict = True  # a draw would raise: the surface is exact or nothing
    survive, detect = tally.each(tally.Thinning, phi), tally.each(tally.Thinning, p)
    n = g.assume(tally.Poisson(LAMBDA0))
    for t, count in enumerate(y):
        if t > 0:
            n = g.assume(n, survive) + g.assume(tally.Poisson(IOTA))
        g.observe(g.assume(n, detect), count)
    return np.asarray(g.resample_groups(0.0).log_mean_weight)


def one_point(y, phi, p):
    """The same log-likelihood from a one-particle graph of constant parameters (the check)."""
    g = tally.Graph(1, 1, "cpu")
    n = g.assume(tally.Poisson(LAMBDA0))
    for t, count in enumerate(y):
        if t > 0:
            n = g.binomial(n, phi) + g.assume(tally.Poisson(IOTA))
        g.observe(g.binomial(n, p), count)
    return float(g.log_weights[0])


def plot(phi, p, surface, best, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    relative = np.maximum(surface - surface.max(), -60.0)
    fig, ax = plt.subplots(figsize=(8, 6.5))
    image = ax.pcolormesh(phi, p, relative, shading="auto", cmap="viridis")
    lines = ax.contour(phi, p, relative, levels=[-40, -20, -10, -5, -2, -1], colors="black", linewidths=0.8,
                       linestyles="solid")
    ax.clabel(lines, fontsize=8, fmt="%g")
    ax.plot(*best, "w*", markersize=14, label=f"maximum ({best[0]:.3f}, {best[1]:.3f})")
    ax.plot(PHI, P, "r+", markersize=12, label=f"the data's parameters ({PHI}, {P})")
    fig.colorbar(image, ax=ax, label="log-likelihood relative to the maximum")
    ax.set_xlabel("phi (survival)")
    ax.set_ylabel("p (detection)")
    ax.set_title(f"Population model: exact log-likelihood surface ({surface.size} parameter sets, one graph)")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=64, help="grid points along each axis (side^2 groups)")
    parser.add_argument("--seasons", type=int, default=20)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--plot", default="population_surface_python.png", help="PNG file ('' for none)")
    a = parser.parse_args(argv)
    if a.side < 2 or a.seasons < 1:
        parser.error("--side must be at least 2 and --seasons at least 1")
    y = simulate(a.seasons)
    phi_axis, p_axis = np.linspace(0.5, 0.95, a.side), np.linspace(0.3, 0.9, a.side)
    phi, p = np.meshgrid(phi_axis, p_axis)  # p along rows, phi along columns
    print(f"Population model, {a.seasons} seasons (data seed {DATA_SEED}); {phi.size} parameter sets "
          f"(phi in [0.5, 0.95], p in [0.3, 0.9]) as groups of one graph on the {a.device}")
    start = time.perf_counter()
    surface = log_likelihoods(y, phi.ravel(), p.ravel(), "cuda" if a.device == "gpu" else "cpu").reshape(phi.shape)
    seconds = time.perf_counter() - start
    k = int(np.argmax(surface))
    best = (phi.flat[k], p.flat[k])
    check_at = (a.side // 2, a.side // 3)  # a grid point (row, column) checked against its own graph
    alone = one_point(y, phi[check_at], p[check_at])
    print(f"  exact log-likelihoods of {surface.size} sets in {seconds:.3f} s")
    print(f"  maximum {surface.flat[k]:.6f} at phi = {best[0]:.4f}, p = {best[1]:.4f}")
    print(f"  check at phi = {phi[check_at]:.4f}, p = {p[check_at]:.4f}: {surface[check_at]:.10f} in the grouped graph, "
          f"{alone:.10f} alone (relative difference {abs(surface[check_at] - alone) / abs(alone):.1e})")
    if a.plot:
        plot(phi, p, surface, best, a.plot)
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
