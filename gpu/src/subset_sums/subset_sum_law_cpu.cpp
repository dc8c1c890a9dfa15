// The CPU reference of subset-sum enumeration: the device's Gray-code runs, merged by a dense table or by sorting.
#include <algorithm>
#include <utility>

#include "subset_walk.hpp"
#include "tally/error.hpp"

namespace tally::gpu::cpu {
namespace {

// Integer totals below this span are merged in a table of compensated sums (16 bytes per total).
constexpr std::int64_t max_cpu_table = std::int64_t{1} << 24;
// Otherwise every subset's (key, weight) is stored and sorted: 16 bytes per subset.
constexpr int max_cpu_sorted_log2 = 26;

template <class W>
SubsetSumLaw<W> law(std::span<const W> w, std::span<const double> p) {
  const char* who = "tally::gpu::cpu::subset_sum_law";
  const auto walk = detail::prepare_walk(w, p, who);
  const int n = walk.n();
  const std::uint64_t count = walk.subsets();
  const std::uint32_t run = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, detail::run_length));
  std::vector<std::uint64_t> keys;
  std::vector<double> weights;
  if (std::is_integral_v<W> && static_cast<std::int64_t>(walk.span) < max_cpu_table) {
    std::vector<detail::Compensated> table(static_cast<std::size_t>(walk.span) + 1);
    for (std::uint64_t first = 0; first < count; first += run)
      detail::walk_run(walk.items.data(), n, walk.start, first, run, [&](W s, detail::Scaled x) {
        table[static_cast<std::size_t>(s)].add(detail::value(x));
      });
    for (std::size_t s = 0; s < table.size(); ++s) {
      const double v = table[s].value();
      if (v > 0.0) {
        keys.push_back(s);
        weights.push_back(v);
      }
    }
    return detail::finish_walk(walk, keys, weights);
  }
  if (n > max_cpu_sorted_log2)
    detail::fail<overflow_error>(who, ": merging 2^", n, " subset sums by sorting needs ", 16.0 * double(count),
                                 " bytes; the CPU reference sorts at most 2^", max_cpu_sorted_log2,
                                 " (integer weights with a total below 2^24 use a table instead; or use the device)");
  std::vector<std::pair<std::uint64_t, double>> all;
  all.reserve(count);
  for (std::uint64_t first = 0; first < count; first += run)
    detail::walk_run(walk.items.data(), n, walk.start, first, run,
                     [&](W s, detail::Scaled x) { all.emplace_back(detail::sort_key(s), detail::value(x)); });
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < all.size();) {
    detail::Compensated sum;
    std::size_t j = i;
    for (; j < all.size() && all[j].first == all[i].first; ++j) sum.add(all[j].second);
    keys.push_back(all[i].first);
    weights.push_back(sum.value());
    i = j;
  }
  return detail::finish_walk(walk, keys, weights);
}

}  // namespace

SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p) {
  return law(w, p);
}
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p) { return law(w, p); }

}  // namespace tally::gpu::cpu
