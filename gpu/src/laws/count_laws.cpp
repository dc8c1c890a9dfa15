// Laws of unbounded counts from per-particle parameters: the CPU reference (loops on one core) and the dispatch to
// CUDA by where the parameters live.
#include "tally/gpu/count_laws.hpp"

#include <bit>
#include <cmath>
#include <sstream>
#include <string>

#include "count_math.hpp"
#include "population_cuda.hpp"
#include "population_reference.hpp"

namespace tally::gpu {

namespace detail {

const char* count_family_name(CountFamily family) {
  switch (family) {
    case CountFamily::poisson: return "Poisson(s a)";
    case CountFamily::negative_binomial: return "NegativeBinomial(s, a)";
    case CountFamily::gamma_poisson: return "Poisson(s lambda), lambda ~ Gamma(a, b)";
    case CountFamily::beta_negative_binomial: return "NegativeBinomial(s, rho), rho ~ Beta(a, b)";
  }
  return "a count law";
}

/// "Poisson(s a) with s = .., a = .." (b too where the family has one), for the errors.
std::string describe_count_law(CountFamily family, double s, double a, double b) {
  std::ostringstream out;
  out.precision(17);
  out << count_family_name(family) << " with s = " << s << ", a = " << a;
  if (family == CountFamily::gamma_poisson || family == CountFamily::beta_negative_binomial) out << ", b = " << b;
  return out.str();
}

[[noreturn]] void fail_count_law(const char* who, CountFamily family, double s, std::size_t i, double a, double b,
                                 int status, std::int64_t max_size) {
  const std::string law = describe_count_law(family, s, a, b);
  switch (static_cast<counts::CountStatus>(status)) {
    case counts::CountStatus::bad_parameter:
      tally::detail::fail<domain_error>(who, ": particle ", i, " asks for ", law, ": parameters outside their domain");
    case counts::CountStatus::beyond_int64:
      tally::detail::fail<overflow_error>(who, ": particle ", i, "'s ", law,
                                          " has its mass beyond the 64-bit integer range (a mean of 2^60 or more)");
    case counts::CountStatus::too_long:
      tally::detail::fail<overflow_error>(who, ": particle ", i, "'s ", law, " needs more than max_size = ", max_size,
                                          " entries to drop at most the tolerance");
    case counts::CountStatus::ok: break;
  }
  tally::detail::fail<domain_error>(who, ": particle ", i, "'s ", law, " has no window");
}

/// s's domain by family, and the tolerance's and max_size's.
void check_count_arguments(CountFamily family, double s, double tolerance, std::int64_t max_size, const char* who) {
  if (!(tolerance > 0.0 && tolerance < 1.0))
    tally::detail::fail<domain_error>(who, ": tolerance = ", tolerance, " must be in (0, 1)");
  if (max_size < 1) tally::detail::fail<domain_error>(who, ": max_size = ", max_size, " must be >= 1");
  const bool ok = family == CountFamily::poisson ? s >= 0.0 && s < INFINITY : s > 0.0 && s < INFINITY;
  if (!ok)
    tally::detail::fail<domain_error>(who, ": s = ", s,
                                      family == CountFamily::poisson ? " must be >= 0" : " must be > 0", " and finite");
}

}  // namespace detail

CountLaws count_laws(CountFamily family, double s, const Column<double>& a, const Column<double>& b, double tolerance,
                     std::int64_t max_size) {
  constexpr const char* who = "tally::gpu::count_laws";
  const bool two = family == CountFamily::gamma_poisson || family == CountFamily::beta_negative_binomial;
  if (two || b.size() > 0) detail::same_shape(a, b, who);
  detail::check_count_arguments(family, s, tolerance, max_size, who);
  if (detail::on_device(a.where()))
    return population_cuda::count_laws(family, s, a, two ? &b : nullptr, tolerance, max_size);
  PmfBatch batch;
  double error = 0.0;
  const std::size_t n = a.size();
  batch.lo.reserve(n);
  batch.log_scale.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double ai = a.host()[i], bi = two ? b.host()[i] : 0.0;
    detail::counts::CountLaw law;
    const detail::counts::CountRange range = detail::counts::window_of(family, s, ai, bi, tolerance, max_size, law);
    if (range.status != detail::counts::CountStatus::ok)
      detail::fail_count_law(who, family, s, i, ai, bi, static_cast<int>(range.status), max_size);
    for (std::int64_t k = range.lo; k <= range.hi; ++k)
      batch.weights.push_back(detail::counts::count_weight(law, range.top, k));
    batch.offset.push_back(static_cast<std::int64_t>(batch.weights.size()));
    batch.lo.push_back(range.lo);
    batch.log_scale.push_back(range.top);
    error = std::fmax(error, range.error);
  }
  return {Laws::from_host(std::move(batch), Backend::cpu), error};
}

std::optional<double> common_value(const Column<double>& c) {
  if (c.empty()) return std::nullopt;
  if (detail::on_device(c.where())) return population_cuda::common_value(c);
  const auto& v = c.host();
  for (std::size_t i = 1; i < v.size(); ++i)
    if (std::bit_cast<std::uint64_t>(v[i]) != std::bit_cast<std::uint64_t>(v[0])) return std::nullopt;
  return v[0];
}

}  // namespace tally::gpu
