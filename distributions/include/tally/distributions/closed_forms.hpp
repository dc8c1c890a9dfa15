// Closed forms of the algebra where they are exact; the generic pmf operations must agree with each of them.
#pragma once

#include <cstdint>
#include <optional>

#include "tally/distributions/binomial.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/hypergeometric.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"

namespace tally {

/// A conditioned law in closed form: posterior is std::nullopt (and log_likelihood -inf) when the observation
/// is impossible.
template <class Law>
struct ConditionedLaw {
  /// The posterior law; std::nullopt when the observation is impossible.
  std::optional<Law> posterior;
  /// log P(observation); -inf when impossible.
  double log_likelihood;
};

/// Poisson(a) + Poisson(b) = Poisson(a + b).
Poisson sum(const Poisson& x, const Poisson& y);
/// Binomial(n, p) + Binomial(m, p) = Binomial(n + m, p); domain_error when the p differ (use the pmf sum).
Binomial sum(const Binomial& x, const Binomial& y);
/// NegativeBinomial(r, p) + NegativeBinomial(s, p) = NegativeBinomial(r + s, p); domain_error when the p differ.
NegativeBinomial sum(const NegativeBinomial& x, const NegativeBinomial& y);

/// Thinning: Binomial(Binomial(n, p), q) = Binomial(n, p q).
Binomial marginal(const Binomial& x, const Thinning& k);
/// Thinning: Binomial(Poisson(a), q) = Poisson(a q).
Poisson marginal(const Poisson& x, const Thinning& k);
/// Thinning: Binomial(NegativeBinomial(r, p), q) = NegativeBinomial(r, p / (p + q (1 - p))) (the probability
/// generating function (p / (1 - (1-p) s))^r at 1 - q + q s). q = 0 gives p' = 1, the point mass at 0.
NegativeBinomial marginal(const NegativeBinomial& x, const Thinning& k);

/// X | X + Y = z for X ~ Poisson(a), Y ~ Poisson(b): Binomial(z, a / (a + b)); likelihood Poisson(a + b) at z.
ConditionedLaw<Binomial> condition_on_sum(const Poisson& x, const Poisson& y, std::int64_t z);
/// X | X + Y = z for X ~ Binomial(n, p), Y ~ Binomial(m, p): Hypergeometric(population n + m, successes n,
/// draws z), whatever p; likelihood Binomial(n + m, p) at z. domain_error when the p differ.
ConditionedLaw<Hypergeometric> condition_on_sum(const Binomial& x, const Binomial& y, std::int64_t z);

}  // namespace tally
