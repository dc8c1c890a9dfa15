// Delta(v): the point mass, in the same free-function form as the other families.
#include "tally/distributions/delta.hpp"

#include <limits>

#include "tally/error.hpp"

namespace tally {

double pdf(const Delta& d, std::int64_t k) { return k == d.value() ? 1.0 : 0.0; }
double log_pdf(const Delta& d, std::int64_t k) {
  return k == d.value() ? 0.0 : -std::numeric_limits<double>::infinity();
}
double cdf(const Delta& d, std::int64_t k) { return k >= d.value() ? 1.0 : 0.0; }

std::int64_t quantile(const Delta& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Delta)", "prob");
  return d.value();
}

std::pair<std::int64_t, std::int64_t> support(const Delta& d) { return {d.value(), d.value()}; }
double mean(const Delta& d) { return static_cast<double>(d.value()); }
double variance(const Delta&) { return 0.0; }
Pmf to_pmf(const Delta& d, const Truncation&) { return Pmf::point(d.value()); }

}  // namespace tally
