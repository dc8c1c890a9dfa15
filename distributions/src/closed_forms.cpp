// Closed forms: sums of Poissons, Binomials and Negative Binomials, thinning, and conditioning on sums.
#include "tally/distributions/closed_forms.hpp"

#include <limits>

#include "tally/error.hpp"

namespace tally {

Poisson sum(const Poisson& x, const Poisson& y) { return Poisson(x.rate() + y.rate()); }

Binomial sum(const Binomial& x, const Binomial& y) {
  if (x.success() != y.success())
    detail::fail<domain_error>("tally::sum(Binomial, Binomial): the closed form needs equal p, got ", x.success(),
                               " and ", y.success(), " (sum their pmfs instead)");
  return Binomial(detail::checked_add(x.trials(), y.trials(), "tally::sum(Binomial, Binomial)"), x.success());
}

NegativeBinomial sum(const NegativeBinomial& x, const NegativeBinomial& y) {
  if (x.success() != y.success())
    detail::fail<domain_error>("tally::sum(NegativeBinomial, NegativeBinomial): the closed form needs equal p, got ",
                               x.success(), " and ", y.success(), " (sum their pmfs instead)");
  return NegativeBinomial(x.successes() + y.successes(), x.success());
}

Binomial marginal(const Binomial& x, const Thinning& k) { return Binomial(x.trials(), x.success() * k.keep); }

Poisson marginal(const Poisson& x, const Thinning& k) { return Poisson(x.rate() * k.keep); }

NegativeBinomial marginal(const NegativeBinomial& x, const Thinning& k) {
  const double p = x.success();
  return NegativeBinomial(x.successes(), p / (p + k.keep * (1.0 - p)));
}

ConditionedLaw<Binomial> condition_on_sum(const Poisson& x, const Poisson& y, std::int64_t z) {
  const Poisson total = sum(x, y);
  const double log_l = log_pdf(total, z);
  if (log_l == -std::numeric_limits<double>::infinity()) return {std::nullopt, log_l};
  const double share = total.rate() == 0.0 ? 0.0 : x.rate() / total.rate();
  return {Binomial(z, share), log_l};
}

ConditionedLaw<Hypergeometric> condition_on_sum(const Binomial& x, const Binomial& y, std::int64_t z) {
  const Binomial total = sum(x, y);
  const double log_l = log_pdf(total, z);
  if (log_l == -std::numeric_limits<double>::infinity()) return {std::nullopt, log_l};
  return {Hypergeometric(total.trials(), x.trials(), z), log_l};
}

}  // namespace tally
