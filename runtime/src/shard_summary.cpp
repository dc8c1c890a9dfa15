// Summaries over the shards: the population's weighted mean, ESS and quantiles from the shards' statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "shard_collectives.hpp"
#include "sharding.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {
namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
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
    Context& ctx, std::span<const gpu::Column<std::int64_t>* const> columns, std::span<const double> probabilities) {
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
  // part 1 on each shard; in one host collective, whether its probabilities are good, its largest log-weight, its
  // first bad one and each column's range: the population's
  const std::vector<gpu::detail::SummaryRange> ranges = gpu::detail::summary_ranges(columns, ctx.log_weight());
  struct Weights {
    std::uint64_t good;
    double top;
    std::uint64_t first_bad;  // the population's index; total: none
    double bad_value;
  };
  Weights mine{good ? 1u : 0u, ranges[0].top, bounds.back(), 0.0};
  if (ranges[0].first_bad < ctx.particles) {
    mine.first_bad = bounds[me] + ranges[0].first_bad;
    const gpu::Column<double>& l = ctx.log_weight();
    if (l.where() == gpu::Backend::cpu) mine.bad_value = l.host()[ranges[0].first_bad];
    else gpu::detail::device_copy(&mine.bad_value, l.data() + ranges[0].first_bad, sizeof(double), 1);
  }
  // the shard's part: its Weights, then the 2 k ends (8 bytes each)
  constexpr std::size_t head = sizeof(Weights) / sizeof(std::int64_t);
  static_assert(sizeof(Weights) == head * sizeof(std::int64_t));
  std::vector<std::int64_t> part(head + 2 * k), parts(part.size() * g);
  std::memcpy(part.data(), &mine, sizeof mine);
  for (std::size_t j = 0; j < k; ++j) part[head + 2 * j] = ranges[j].lo, part[head + 2 * j + 1] = ranges[j].hi;
  c.all_gather(part.data(), parts.data(), part.size() * sizeof(std::int64_t), gpu::Backend::cpu);
  std::vector<Weights> all(g);
  std::vector<std::int64_t> all_ends(2 * k * g);
  for (std::size_t r = 0; r < g; ++r) {
    std::memcpy(&all[r], parts.data() + r * part.size(), sizeof(Weights));
    std::copy_n(parts.begin() + static_cast<std::ptrdiff_t>(r * part.size() + head), 2 * k,
                all_ends.begin() + static_cast<std::ptrdiff_t>(r * 2 * k));
  }
  if (!std::all_of(all.begin(), all.end(), [](const Weights& w) { return w.good == 1; }))
    tally::detail::fail<domain_error>(who, ": a probability is not in [0, 1] (on this shard or another)");
  Weights population = all[0];
  for (const Weights& w : all) {
    population.top = std::max(population.top, w.top);
    if (w.first_bad < population.first_bad) population.first_bad = w.first_bad, population.bad_value = w.bad_value;
  }
  if (population.first_bad < bounds.back())
    tally::detail::fail<domain_error>(who, ": log-weight ", population.bad_value, " of particle ",
                                      population.first_bad);
  std::vector<std::pair<std::int64_t, std::int64_t>> span(k, {std::numeric_limits<std::int64_t>::max(),
                                                              std::numeric_limits<std::int64_t>::min()});
  for (std::size_t r = 0; r < g; ++r)
    for (std::size_t j = 0; j < k; ++j) {
      span[j].first = std::min(span[j].first, all_ends[r * 2 * k + 2 * j]);
      span[j].second = std::max(span[j].second, all_ends[r * 2 * k + 2 * j + 1]);
    }
  for (const auto& [lo, hi] : span)  // (the same on every shard) a column too spread for the bins: the caller's way
    if (hi - lo >= gpu::detail::summary_bins) return std::nullopt;
  // part 2 on each shard with the population's top and ranges; its sums and bins added in rank order
  const std::vector<gpu::detail::SummarySums> sums =
      gpu::detail::summary_sums(columns, ctx.log_weight(), population.top, span);
  std::vector<double> flat;
  for (const auto& s : sums) {
    flat.insert(flat.end(), {s.total, s.weighted, s.squares});
    flat.insert(flat.end(), s.bins.begin(), s.bins.end());
  }
  flat = summed(c, flat);
  std::vector<gpu::WeightedSummary> out(k);
  for (std::size_t j = 0, at = 0; j < k; ++j) {
    const double total = flat[at], weighted = flat[at + 1], squares = flat[at + 2];
    const auto used = static_cast<std::size_t>(span[j].second - span[j].first + 1);
    const double* bins = flat.data() + at + 3;
    at += 3 + used;
    gpu::WeightedSummary& o = out[j];
    o.all_impossible = population.top == -inf;
    o.lo = span[j].first;  // every value's range over the population (part 1)
    o.hi = span[j].second;
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
      o.quantiles.push_back(span[j].first + static_cast<std::int64_t>(b < used ? b : used - 1));
    }
  }
  return out;
}

}  // namespace tally::runtime::detail
