// The main example (for now): exact laws of a sum of dice and of a thinned Poisson count, printed as tables.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "tally/distributions/algebra.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/uniform_int.hpp"

using namespace tally;

namespace {

std::string bar(double p, double top) { return std::string(static_cast<std::size_t>(std::lround(40.0 * p / top)), '#'); }

void dice(int count, int sides) {
  std::printf("1) The total of %d fair %d-sided dice: UniformInt(1, %d) convolved with itself\n\n", count, sides, sides);
  const Pmf die = to_pmf(UniformInt(1, sides));
  Pmf total = die;
  for (int i = 1; i < count; ++i) total = sum(total, die);
  const double top = total.probabilities().maxCoeff();
  std::printf("   %6s  %-24s %-13s\n", "total", "P(total = k)", "P(total <= k)");
  for (std::int64_t k = total.lo(); k <= total.hi(); ++k)
    std::printf("   %6lld  %-24.17g %-13.6g %s\n", static_cast<long long>(k), pdf(total, k), cdf(total, k),
                bar(pdf(total, k), top).c_str());
  const double n = count, s = sides;
  std::printf("\n   mean %.15g (exact %.15g), variance %.15g (exact %.15g)\n", mean(total), n * (s + 1) / 2,
              variance(total), n * (s * s - 1) / 12);
  std::printf("   P(all dice show 1) = %.17g = %d^-%d to %.1e relative\n\n", pdf(total, count), sides, count,
              std::abs(pdf(total, count) * std::pow(s, n) - 1.0));
}

void thinning(double rate, double keep, std::int64_t seen, std::uint64_t seed) {
  std::printf("2) N ~ Poisson(%g) animals, each seen with probability %g: S ~ Binomial(N, %g)\n\n", rate, keep, keep);
  const Pmf n = to_pmf(Poisson(rate));
  const Pmf s = marginal(n, Thinning(keep));  // generic: Horner's rule over the pmf of N
  const Poisson closed(rate * keep);          // closed form: Poisson(rate * keep)
  // Truncating N drops a little mass (at most the error bound, in L1) from the far upper tail of S; where
  // P(S = k) is far above that (the bulk), the generic and closed forms agree to rounding.
  double worst = 0.0;
  for (std::int64_t k = s.lo(); k <= s.hi(); ++k)
    if (pdf(closed, k) >= 1e-3) worst = std::max(worst, std::abs(pdf(s, k) / pdf(closed, k) - 1.0));
  std::printf("   law of S on [%lld, %lld] by Horner's rule over N; against the closed form Poisson(%g),\n"
              "   largest relative difference where P(S = k) >= 1e-3: %.2e\n",
              static_cast<long long>(s.lo()), static_cast<long long>(s.hi()), rate * keep, worst);
  std::printf("   truncation: N keeps [%lld, %lld], error bound %.2e (mass dropped)\n\n",
              static_cast<long long>(n.lo()), static_cast<long long>(n.hi()), n.error_bound());

  const Conditioned post = condition(n, Thinning(keep), seen);
  std::printf("   observe S = %lld:  log P(S = %lld) = %.15g (closed form %.15g, error bound %.1e)\n",
              static_cast<long long>(seen), static_cast<long long>(seen), post.log_likelihood, log_pdf(closed, seen),
              post.log_likelihood_error);
  if (!post.posterior) {
    std::printf("   impossible observation\n");
    return;
  }
  const Pmf& p = *post.posterior;
  std::printf("   posterior of N: mean %.6f, sd %.6f, 95%% interval [%lld, %lld]\n", mean(p), std::sqrt(variance(p)),
              static_cast<long long>(quantile(p, 0.025)), static_cast<long long>(quantile(p, 0.975)));
  std::printf("   (exactly S + Poisson(%g): mean %.6f, sd %.6f)\n", rate * (1 - keep),
              static_cast<double>(seen) + rate * (1 - keep), std::sqrt(rate * (1 - keep)));
  RandomStream rng(seed);
  std::printf("   five posterior draws (seed %llu):", static_cast<unsigned long long>(seed));
  for (int i = 0; i < 5; ++i) std::printf(" %lld", static_cast<long long>(sample(p, rng)));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: exact laws of a sum of dice and of a thinned Poisson count"};
  int count = 3, sides = 6;
  double rate = 50.0, keep = 0.2;
  std::int64_t seen = 7;
  std::uint64_t seed = 1;
  app.add_option("--dice", count, "number of dice")->check(CLI::Range(1, 10000));
  app.add_option("--sides", sides, "sides per die")->check(CLI::Range(1, 1000000));
  app.add_option("--rate", rate, "mean number of animals")->check(CLI::Range(0.0, 1e7));
  app.add_option("--keep", keep, "probability that an animal is seen")->check(CLI::Range(0.0, 1.0));
  app.add_option("--seen", seen, "observed number of animals seen");
  app.add_option("--seed", seed, "seed of the posterior draws");
  CLI11_PARSE(app, argc, argv);
  try {
    dice(count, sides);
    thinning(rate, keep, seen, seed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
