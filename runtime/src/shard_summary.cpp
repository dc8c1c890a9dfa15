// Summaries over the shards: the population's weighted mean, ESS and quantiles from the shards' statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "shard_collectives.hpp"
#include "sharding.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally::runtime::detail {
namespace {
/// Sums of one double per rank, added in rank order (every rank the same).
std::vector<double> summed(Communicator& c, const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * c.size()), out(mine.size(), 0.0);
  if (mine.empty()) return out;
  c.all_gather(mine.data(), all.data(), mine.size() * sizeof(double), gpu::Backend::cpu);
  for (std::size_t r = 0; r < c.size(); ++r)
    for (std::size_t k = 0; k < mine.size(); ++k) out[k] += all[r * mine.size() + k];
  return out;
}
}  // namespace

gpu::WeightedSummary sharded_summarize(Context& ctx, const gpu::Column<std::int64_t>& values,
                                       std::span<const double> probabilities) {
  constexpr const char* who = "tally::runtime::Graph::summarize";
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  bool good = true;
  for (const double p : probabilities) good = good && p >= 0.0 && p <= 1.0;
  if (!on_every_shard(ctx, good))
    tally::detail::fail<domain_error>(who, ": a probability is not in [0, 1] (on this shard or another)");
  const std::vector<double> l = checked_log_weights(ctx, who);
  const std::vector<std::int64_t> v = values.to_host();
  double top = -inf;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (const double x : l) top = std::max(top, x);
  const auto tops = gather_all(c, top);
  top = *std::max_element(tops.begin(), tops.end());
  gpu::WeightedSummary out;
  out.all_impossible = top == -inf;
  std::vector<double> w(v.size());
  std::int64_t all_lo = std::numeric_limits<std::int64_t>::max(), all_hi = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 0; i < v.size(); ++i) {
    w[i] = out.all_impossible ? 1.0 : std::exp(l[i] - top);
    if (w[i] > 0) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    all_lo = std::min(all_lo, v[i]), all_hi = std::max(all_hi, v[i]);
  }
  // every value's range over the population (the summary's lo and hi)
  const auto all_los = gather_all(c, all_lo), all_his = gather_all(c, all_hi);
  out.lo = *std::min_element(all_los.begin(), all_los.end());
  out.hi = *std::max_element(all_his.begin(), all_his.end());
  // the values of positive weight span [lo, hi] over the population
  const auto los = gather_all(c, lo), his = gather_all(c, hi);
  lo = *std::min_element(los.begin(), los.end());
  hi = *std::max_element(his.begin(), his.end());
  double total = 0, squares = 0, moment = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    total += w[i];
    squares += w[i] * w[i];
    moment += w[i] * static_cast<double>(v[i]);
  }
  const std::vector<double> sums = summed(c, {total, squares, moment});
  total = sums[0];
  out.ess = sums[0] * sums[0] / sums[1];
  out.mean = sums[2] / total;
  out.quantiles.assign(probabilities.size(), hi);
  const double span = static_cast<double>(hi) - static_cast<double>(lo);
  const double p = static_cast<double>(bounds.back());
  if (span < 4.0 * p && span < double(1 << 20)) {  // the population's histogram of weight by value
    std::vector<double> h(static_cast<std::size_t>(hi - lo + 1), 0.0);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (w[i] > 0) h[static_cast<std::size_t>(v[i] - lo)] += w[i];
    h = summed(c, h);
    std::vector<bool> found(probabilities.size(), false);
    double cum = 0;
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (!(h[k] > 0)) continue;
      cum += h[k];
      for (std::size_t q = 0; q < probabilities.size(); ++q)
        if (!found[q] && cum / total >= probabilities[q]) {
          out.quantiles[q] = lo + static_cast<std::int64_t>(k);
          found[q] = true;
        }
    }
    return out;
  }
  // bisection: Q(p) is the smallest x in [lo, hi] with sum_{v_i <= x} w_i / W >= p (hi where rounding leaves none)
  std::vector<std::int64_t> a(probabilities.size(), lo), b(probabilities.size(), hi);  // Q in [a, b] once found
  for (int step = 0; step < 66; ++step) {
    std::vector<double> below(probabilities.size(), 0.0);
    std::vector<std::int64_t> mid(probabilities.size());
    bool open = false;
    for (std::size_t q = 0; q < probabilities.size(); ++q) {
      mid[q] = a[q] + (b[q] - a[q]) / 2;
      open = open || a[q] < b[q];
      for (std::size_t i = 0; i < v.size(); ++i)
        if (w[i] > 0 && v[i] <= mid[q]) below[q] += w[i];
    }
    if (!open) break;
    below = summed(c, below);
    for (std::size_t q = 0; q < probabilities.size(); ++q) {
      if (a[q] >= b[q]) continue;
      if (below[q] / total >= probabilities[q]) {
        b[q] = mid[q];
      } else {
        a[q] = mid[q] + 1;
      }
    }
  }
  for (std::size_t q = 0; q < probabilities.size(); ++q) out.quantiles[q] = a[q];
  return out;
}

std::optional<std::vector<gpu::WeightedSummary>> sharded_summarize_parts(
    Context& ctx, std::span<const gpu::Column<std::int64_t>* const> columns, std::span<const double> probabilities,
    std::optional<PlanFor> plan_for) {
  constexpr const char* who = "tally::runtime::Graph::summarize";
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t k = columns.size(), g = c.size(), me = c.rank();
  bool good = true;
  for (const double p : probabilities) good = good && p >= 0.0 && p <= 1.0;
  if (k == 0) {
    if (!on_every_shard(ctx, good))
      tally::detail::fail<domain_error>(who, ": a probability is not in [0, 1] (on this shard or another)");
    return std::vector<gpu::WeightedSummary>{};
  }
  // part 1 on each shard (whether its probabilities are good travels with it), all-gathered where the columns live;
  // part 2 from the population's top and ranges, all-gathered too; then one copy back: the host waits once
  const gpu::Column<double>& l = ctx.log_weight();
  const auto part = gpu::detail::summary_ranges(columns, l, good ? 1 : 0);
  auto parts = gpu::Column<std::int64_t>::allocate(ctx.where, g * part.size(), who);
  c.all_gather(part.data(), parts.data(), part.bytes(), ctx.where);
  const auto sums = gpu::detail::summary_sums(columns, l, parts);
  auto all_sums = gpu::Column<double>::allocate(ctx.where, g * sums.size(), who);
  c.all_gather(sums.data(), all_sums.data(), sums.bytes(), ctx.where);
  if (plan_for) {  // the resampling's plan too, its wait the summary's (kept where the weights are all finite)
    TiledPlan plan = finish_tiled_plan(launch_tiled_plan(ctx, plan_for->seed, plan_for->counter));
    if (plan.plan.largest != inf) ctx.known_plan = std::make_shared<TiledPlan>(std::move(plan));
  }
  const std::vector<std::int64_t> ranges = parts.to_host();  // (the wait, unless the plan's was)
  const std::vector<double> flat = all_sums.to_host();
  const std::size_t size = part.size();
  for (std::size_t r = 0; r < g; ++r)
    if (ranges[r * size + size - 1] != 1)
      tally::detail::fail<domain_error>(who, ": a probability is not in [0, 1] (on this shard or another)");
  // the population's first NaN or +inf log-weight, told on every shard with its value (one host collective)
  for (std::size_t r = 0; r < g; ++r) {
    const std::size_t bad = gpu::detail::summary_range_of(std::span(ranges).subspan(r * size), 0).first_bad;
    if (bad >= bounds[r + 1] - bounds[r]) continue;
    double value = 0.0;
    if (r == me) {
      if (l.where() == gpu::Backend::cpu) value = l.host()[bad];
      else gpu::detail::device_copy(&value, l.data() + bad, sizeof(double), 1);
    }
    const double told = gather_all(c, value)[r];
    tally::detail::fail<domain_error>(who, ": log-weight ", told, " of particle ", bounds[r] + bad);
  }
  std::vector<gpu::detail::SummaryRange> span(k);
  for (std::size_t j = 0; j < k; ++j) {
    span[j] = gpu::detail::population_range(ranges, k, j);
    if (span[j].hi - span[j].lo >= gpu::detail::summary_bins) return std::nullopt;  // (on every shard alike)
  }
  std::vector<gpu::WeightedSummary> out(k);
  for (std::size_t j = 0; j < k; ++j) {
    // the shards' sums and bins added in rank order
    const auto used = static_cast<std::size_t>(span[j].hi - span[j].lo + 1);
    std::vector<double> added(3 + used, 0.0);
    for (std::size_t r = 0; r < g; ++r) {
      const double* from = flat.data() + (r * k + j) * gpu::detail::summary_sums_size;
      for (std::size_t b = 0; b < added.size(); ++b) added[b] += from[b];
    }
    const double total = added[0], weighted = added[1], squares = added[2];
    const double* bins = added.data() + 3;
    gpu::WeightedSummary& o = out[j];
    o.all_impossible = span[j].top == -inf;
    o.lo = span[j].lo;  // every value's range over the population (part 1)
    o.hi = span[j].hi;
    o.mean = weighted / total;
    o.ess = total * total / squares;
    // gpu::summarize's rule: the first value whose cumulative weight reaches p of the total (and is positive),
    // else the first that reaches all of it, else the largest
    std::vector<double> cum(used);
    for (std::size_t b = 0; b < used; ++b) cum[b] = (b > 0 ? cum[b - 1] : 0.0) + bins[b];
    const double whole = cum[used - 1];
    auto first_at_least = [&](double target) {
      std::size_t b = 0;
      while (b < used && !(cum[b] / whole >= target && cum[b] > 0.0)) ++b;
      return b;
    };
    for (const double p : probabilities) {
      std::size_t b = first_at_least(p);
      if (b == used) b = first_at_least(1.0);
      o.quantiles.push_back(span[j].lo + static_cast<std::int64_t>(b < used ? b : used - 1));
    }
  }
  return out;
}

}  // namespace tally::runtime::detail
