// Checks that the installed tally works from outside: Binomial(10, 0.3) convolved with itself is Binomial(20, 0.3).
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "tally/distributions.hpp"  // every public header must compile from the installed tree
#include "tally/gpu/convolve.hpp"

int main() {
  const tally::Pmf x = tally::to_pmf(tally::Binomial(10, 0.3));
  const std::span<const double> w(x.weights().data(), static_cast<std::size_t>(x.size()));
  std::vector<double> r(2 * w.size() - 1);
  tally::gpu::convolve(w, w, r);

  // The weights carry the log scale s: mu(lo + i) = w_i e^s, so sum(r) e^{2s} is the squared mass (1 up to rounding).
  double total = 0.0, first_moment = 0.0;
  for (std::size_t k = 0; k < r.size(); ++k) {
    total += r[k];
    first_moment += static_cast<double>(2 * x.lo() + static_cast<std::int64_t>(k)) * r[k];
  }
  const double mass = total * std::exp(2.0 * x.log_scale());
  const double mean = first_moment / total;
  const bool ok = std::abs(mass - 1.0) < 1e-12 && std::abs(mean - 6.0) < 1e-12;
  std::printf("tally consumer: Binomial(10, 0.3) + Binomial(10, 0.3): mass %.15f, mean %.15f (expected 1, 6): %s\n",
              mass, mean, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
