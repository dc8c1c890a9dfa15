// The parts of a weighted summary that shards combine: each column's range, then its sums and histogram (the host
// reference, and the dispatch to the device).
#include <cmath>
#include <limits>

#include "tally/error.hpp"
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
namespace {
void same_places(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                 const char* who) {
  for (const auto* c : columns) check_same_place(*c, log_w, who);
}
}  // namespace

std::vector<SummaryRange> summary_ranges(std::span<const Column<std::int64_t>* const> columns,
                                         const Column<double>& log_w) {
  same_places(columns, log_w, "tally::gpu::detail::summary_ranges");
  if (log_w.where() == Backend::cuda) return summary_ranges_device(columns, log_w);
  const std::vector<double>& l = log_w.host();
  SummaryRange weights;
  weights.first_bad = l.size();
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (std::isnan(l[i]) || l[i] == std::numeric_limits<double>::infinity()) {
      if (weights.first_bad == l.size()) weights.first_bad = i;
    } else if (l[i] > weights.top) {
      weights.top = l[i];
    }
  }
  std::vector<SummaryRange> out(columns.size(), weights);
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const std::vector<std::int64_t>& v = columns[k]->host();
    out[k].lo = std::numeric_limits<std::int64_t>::max();
    out[k].hi = std::numeric_limits<std::int64_t>::min();
    for (const std::int64_t x : v) out[k].lo = std::min(out[k].lo, x), out[k].hi = std::max(out[k].hi, x);
  }
  return out;
}

std::vector<SummarySums> summary_sums(std::span<const Column<std::int64_t>* const> columns,
                                      const Column<double>& log_w, double top,
                                      std::span<const std::pair<std::int64_t, std::int64_t>> ranges) {
  constexpr const char* who = "tally::gpu::detail::summary_sums";
  same_places(columns, log_w, who);
  if (ranges.size() != columns.size())
    tally::detail::fail<shape_error>(who, ": ", ranges.size(), " ranges for ", columns.size(), " columns");
  if (log_w.where() == Backend::cuda) return summary_sums_device(columns, log_w, top, ranges);
  const std::vector<double>& l = log_w.host();
  std::vector<SummarySums> out(columns.size());
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const std::vector<std::int64_t>& v = columns[k]->host();
    const auto [lo, hi] = ranges[k];
    const bool narrow = hi >= lo && hi - lo < summary_bins;
    if (narrow) out[k].bins.assign(static_cast<std::size_t>(hi - lo + 1), 0.0);
    for (std::size_t i = 0; i < l.size(); ++i) {
      const bool bad = std::isnan(l[i]) || l[i] == std::numeric_limits<double>::infinity();
      const double w = bad ? 0.0 : top == -std::numeric_limits<double>::infinity() ? 1.0 : std::exp(l[i] - top);
      out[k].total += w;
      out[k].weighted += w * static_cast<double>(v[i]);
      out[k].squares += w * w;
      if (narrow && w > 0.0) {
        if (v[i] < lo || v[i] > hi)
          tally::detail::fail<domain_error>(who, ": value ", v[i], " outside the range ", lo, " .. ", hi);
        out[k].bins[static_cast<std::size_t>(v[i] - lo)] += w;
      }
    }
  }
  return out;
}

}  // namespace tally::gpu::detail
