// The joint nodes' own table operations: a coordinate thinned or split in place, the outer product of independent
// joint laws, each with the dropped measure carried; the largest likelihood of an observation (for the bounds).
#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include "steps.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {
namespace joint_steps {

JointPmf append_child(const JointPmf& d, int axis, const ChildLaw& law, const Truncation& t) {
  return std::visit(overloaded{[&](const AffineLaw& f) {
                                 return linear_combination(d, unit(d.rank(), axis, f.a), f.c, -1, t);
                               },
                               [&](const auto& k) { return add_child(d, axis, k, t); }},
                    law);
}

/// The outer product of independent joint laws: the axes of a, then those of b.
JointPmf outer(const JointPmf& a, const JointPmf& b, const Truncation& t) {
  Coordinates lo = a.lo(), shape = a.shape();
  lo.insert(lo.end(), b.lo().begin(), b.lo().end());
  shape.insert(shape.end(), b.shape().begin(), b.shape().end());
  if (static_cast<double>(a.size()) * static_cast<double>(b.size()) > static_cast<double>(t.max_size)) throw over_budget{};
  Eigen::VectorXd w(a.size() * b.size());
  for (Eigen::Index i = 0; i < a.size(); ++i) w.segment(i * b.size(), b.size()) = a.weights()[i] * b.weights();
  const double sa = a.spread_error_bound(), sb = b.spread_error_bound();
  const double dx = a.error_bound() - sa, dy = b.error_bound() - sb;  // the dropped measures' relative masses
  const double e = product_spread(sa, sb, dx, dy);
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), a.log_scale() + b.log_scale(), e);
  if (!a.dropped() && !b.dropped()) return r;
  try {
    const JointPmf bare_a = a.with_error_bound(0.0), bare_b = b.with_error_bound(0.0);
    std::optional<JointPmf> more;
    if (a.dropped()) more = outer(*a.dropped(), bare_b, t);
    if (b.dropped()) {
      const JointPmf whole_a = a.dropped() ? add_measures(bare_a, *a.dropped()) : bare_a;
      const JointPmf xy = outer(whole_a, *b.dropped(), t);
      more = more ? add_measures(*more, xy) : xy;
    }
    return r.with_dropped(more);
  } catch (const over_budget&) {  // the dropped measure as spread
    return r.with_spread_error_bound((1.0 + a.error_bound()) * (1.0 + b.error_bound()) - 1.0);
  } catch (const overflow_error&) {
    return r.with_spread_error_bound((1.0 + a.error_bound()) * (1.0 + b.error_bound()) - 1.0);
  }
}

/// \f$\sup_{\lambda \ge 0} \mathrm{Poisson}(y; \lambda) = \mathrm{Poisson}(y; y)\f$.
double poisson_sup(std::int64_t y) { return y <= 0 ? (y == 0 ? 1.0 : 0.0) : std::exp(log_poisson_pmf(y, double(y))); }
/// \f$\sup_{n \ge 0} \mathrm{Binomial}(y; n, q)\f$: unimodal in n, largest near n = y / q. Where y / q passes 2^52
/// (q tiny), the bound \f$\binom{n}{y} q^y (1-q)^{n-y} \le \frac{(nq)^y}{y!} e^{-q(n-y)} \le \mathrm{Poisson}(y; y)\,
/// e^{qy}\f$ (from \f$\binom{n}{y} \le n^y / y!\f$ and \f$1 - q \le e^{-q}\f$), tight as q -> 0.
double binomial_sup(std::int64_t y, double q) {
  if (y < 0) return 0.0;
  if (y == 0 || q >= 1.0) return 1.0;
  if (q <= 0.0) return 0.0;
  const double centre = std::floor(double(y) / q);
  if (!(centre <= 0x1p52)) return std::min(1.0, poisson_sup(y) * std::exp(q * double(y)) * (1 + 1e-12));
  double best = 0.0;
  for (double n = std::max(double(y), centre - 2); n <= centre + 2; ++n)
    best = std::max(best, std::exp(log_binomial_pmf(std::int64_t(n), y, q)));
  return std::min(1.0, best * (1 + 1e-12));
}
double likelihood_sup(const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const Thinning& k) { return binomial_sup(y, k.keep); },
                               [&](const ScaledPoisson&) { return poisson_sup(y); },
                               [&](const IndexedPoisson& k) {
                                 double best = 0.0;
                                 for (double r : k.rates) best = std::max(best, std::exp(log_poisson_pmf(y, r)));
                                 return std::min(1.0, best * (1 + 1e-12));
                               },
                               [&](const MarkovStep& k) {
                                 return y >= 0 && y < k.transition.cols() ? k.transition.col(y).maxCoeff() : 0.0;
                               },
                               [&](const AffineLaw&) { return 1.0; }},
                    law);
}
double likelihood_sup(const SelectedChild& s, std::int64_t y) {
  if (s.family == SelectedChild::poisson) return poisson_sup(y);
  double best = 0.0;
  for (double q : s.keep) best = std::max(best, binomial_sup(y, q));
  return best;
}

}  // namespace joint_steps

namespace {

/// r (an operation's result on d) with d's dropped measure carried through the same operation, op(x); where that
/// table would be too large, the dropped mass joins r's spread bound instead (tally::JointPmf's two parts).
template <class Op>
JointPmf carry_dropped(const JointPmf& d, const JointPmf& r, Op op) {
  const JointPmf* x = d.dropped();
  if (x == nullptr) return r;
  try {
    return r.with_dropped(op(*x));
  } catch (const overflow_error&) {
    return r.with_spread_error_bound(r.spread_error_bound() + (1.0 + x->error_bound()) * std::exp(x->log_mass() - r.log_mass()));
  }
}

/// The binomial terms of a thinning or a split of X_axis (a count: domain_error saying `what` otherwise): for every
/// entry m of d at (o, x, r) (o the earlier axes, r the later ones, as one index each) and every y = 0 .. x,
/// term(o, x, r, y, m Bin(y; x, q)), each pmf value computed once per (x, y), not once per entry; zero entries
/// skipped.
template <class Term>
void binomial_terms(const JointPmf& d, int axis, double q, const char* what, Term term) {
  if (d.lo(axis) < 0)
    tally::detail::fail<domain_error>("tally::runtime: ", what, ", but its support starts at ", d.lo(axis));
  const std::int64_t hi = d.hi(axis), lo = d.lo(axis), extent = d.extent(axis), stride = d.stride(axis);
  const std::int64_t outer = d.size() / (extent * stride);
  std::vector<double> kernel;
  for (std::int64_t x = lo; x <= hi; ++x) {
    kernel.resize(static_cast<std::size_t>(x + 1));
    for (std::int64_t y = 0; y <= x; ++y) kernel[static_cast<std::size_t>(y)] = std::exp(log_binomial_pmf(x, y, q));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t r = 0; r < stride; ++r) {
        const double m = d.weights()[(o * extent + (x - lo)) * stride + r];
        if (m == 0.0) continue;
        for (std::int64_t y = 0; y <= x; ++y) term(o, x, r, y, m * kernel[static_cast<std::size_t>(y)]);
      }
  }
}

}  // namespace

JointPmf thin_in_place(const JointPmf& d, int axis, double q) {
  // the same box but for axis, now [0, hi]; each old entry spreads over y = 0..x with Bin(y; x, q) (sums of
  // non-negative products: every entry keeps its relative precision)
  const std::int64_t hi = d.hi(axis), stride = d.stride(axis);  // stride unchanged: the later extents
  Coordinates new_lo = d.lo(), shape = d.shape();
  new_lo[static_cast<std::size_t>(axis)] = 0;
  shape[static_cast<std::size_t>(axis)] = hi + 1;
  const std::int64_t outer = d.size() / (d.extent(axis) * stride);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(outer * (hi + 1) * stride);
  binomial_terms(d, axis, q, "a thinning's parent must be a count >= 0",
                 [&](std::int64_t o, std::int64_t, std::int64_t r, std::int64_t y, double v) {
                   w[(o * (hi + 1) + y) * stride + r] += v;
                 });
  const JointPmf r(std::move(new_lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(thin_in_place(x, axis, q)); });
}

JointPmf split_in_place(const JointPmf& d, int axis, double q) {
  // (.., x, .., ) -> (.., x - y, .., y) with Bin(y; x, q): the kept part on [0, hi], the moved part appended on
  // [0, hi]
  const std::int64_t hi = d.hi(axis), stride = d.stride(axis);  // old index (o, x, r); new index (o, x - y, r, y)
  Coordinates new_lo = d.lo(), shape = d.shape();
  new_lo[static_cast<std::size_t>(axis)] = 0;
  shape[static_cast<std::size_t>(axis)] = hi + 1;
  new_lo.push_back(0);
  shape.push_back(hi + 1);
  const std::int64_t outer = d.size() / (d.extent(axis) * stride);
  const double cells = double(outer) * double(hi + 1) * double(stride) * double(hi + 1);
  if (cells > double(std::numeric_limits<Eigen::Index>::max() / 2))
    tally::detail::fail<overflow_error>("tally::runtime: a split's table needs ", cells, " entries");
  Eigen::VectorXd w = Eigen::VectorXd::Zero(outer * (hi + 1) * stride * (hi + 1));
  binomial_terms(d, axis, q, "a split count must be >= 0",
                 [&](std::int64_t o, std::int64_t x, std::int64_t r, std::int64_t y, double v) {
                   w[((o * (hi + 1) + (x - y)) * stride + r) * (hi + 1) + y] = v;
                 });
  const JointPmf r(std::move(new_lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(split_in_place(x, axis, q)); });
}

}  // namespace tally::runtime::detail
