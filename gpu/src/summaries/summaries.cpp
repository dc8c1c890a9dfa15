// Weighted summaries of a population's values: the CPU reference (histogram or sort) and the dispatch.
#include "tally/gpu/summaries.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally::gpu {
namespace {


void check(const Column<std::int64_t>& values, const Column<double>& log_w, std::span<const double> probabilities) {
  constexpr const char* who = "tally::gpu::summarize";
  if (values.size() == 0) tally::detail::fail<shape_error>(who, ": no particles");
  detail::check_same_place(values, log_w, who);
  for (const double p : probabilities)
    if (!(p >= 0.0 && p <= 1.0)) tally::detail::fail<domain_error>(who, ": probability ", p, " is not in [0, 1]");
}

}  // namespace

void detail::check_same_place(const Column<std::int64_t>& values, const Column<double>& log_w, const char* who) {
  if (values.size() != log_w.size() || values.where() != log_w.where())
    tally::detail::fail<shape_error>(who, ": ", values.size(), " values and ", log_w.size(), " log-weights",
                                     values.where() != log_w.where() ? " in different memories" : "");
}

std::vector<WeightedSummary> summarize(std::span<const Column<std::int64_t>* const> columns,
                                       const Column<double>& log_w, std::span<const double> probabilities) {
  for (const Column<std::int64_t>* c : columns) check(*c, log_w, probabilities);
  if (columns.empty()) return {};
  if (log_w.where() == Backend::cuda) return detail::summarize_device(columns, log_w, probabilities);
  std::vector<WeightedSummary> out;
  out.reserve(columns.size());
  for (const Column<std::int64_t>* c : columns) out.push_back(summarize(*c, log_w, probabilities));
  return out;
}

std::vector<WeightedSummary> summarize(std::span<const Column<std::int64_t>* const> columns,
                                       const Column<double>& log_w, std::span<const double> probabilities,
                                       std::optional<WeightSummary>& weights) {
  weights.reset();
  if (columns.empty() || log_w.where() != Backend::cuda) return summarize(columns, log_w, probabilities);
  for (const Column<std::int64_t>* c : columns) check(*c, log_w, probabilities);
  WeightSummary w{};
  auto out = detail::summarize_device(columns, log_w, probabilities, &w);
  weights = w;
  return out;
}

WeightedSummary summarize(const Column<std::int64_t>& values, const Column<double>& log_w,
                          std::span<const double> probabilities) {
  check(values, log_w, probabilities);
  if (values.where() == Backend::cuda) {
    const Column<std::int64_t>* one[] = {&values};
    return std::move(detail::summarize_device(one, log_w, probabilities).front());
  }
  const std::vector<std::int64_t>& v = values.host();
  const std::vector<double>& l = log_w.host();
  double top = neg_inf;
  for (const double x : l) {
    if (std::isnan(x) || x == std::numeric_limits<double>::infinity())
      tally::detail::fail<domain_error>("tally::gpu::summarize: log-weight ", x);
    top = std::max(top, x);
  }
  WeightedSummary out;
  out.all_impossible = top == neg_inf;
  std::vector<double> w(v.size());
  double total = 0, squares = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = out.all_impossible ? 1.0 : std::exp(l[i] - top);
    total += w[i];
    squares += w[i] * w[i];
  }
  out.ess = total * total / squares;
  // (value, weight) in increasing value: a histogram over the values' span when it is at most 4P, else a sort
  const auto [lo_it, hi_it] = std::minmax_element(v.begin(), v.end());
  const std::int64_t lo = *lo_it;
  out.lo = lo;
  out.hi = *hi_it;
  std::vector<std::pair<std::int64_t, double>> mass;
  const bool narrow = static_cast<double>(*hi_it) - static_cast<double>(lo) < 4.0 * static_cast<double>(v.size());
  if (narrow) {
    std::vector<double> h(static_cast<std::size_t>(*hi_it - lo + 1), 0.0);
    for (std::size_t i = 0; i < w.size(); ++i) h[static_cast<std::size_t>(v[i] - lo)] += w[i];
    for (std::size_t k = 0; k < h.size(); ++k)
      if (h[k] > 0) mass.emplace_back(lo + static_cast<std::int64_t>(k), h[k]);
  } else {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    for (const std::size_t k : order)
      if (w[k] > 0) mass.emplace_back(v[k], w[k]);
  }
  double mean = 0;
  for (const auto& [value, x] : mass) mean += x * static_cast<double>(value);
  out.mean = mean / total;
  out.quantiles.assign(probabilities.size(), mass.back().first);
  std::vector<bool> found(probabilities.size(), false);
  double cum = 0;
  for (const auto& [value, x] : mass) {
    cum += x;
    for (std::size_t q = 0; q < probabilities.size(); ++q)
      if (!found[q] && cum / total >= probabilities[q]) {
        out.quantiles[q] = value;
        found[q] = true;
      }
  }
  return out;
}

}  // namespace tally::gpu
