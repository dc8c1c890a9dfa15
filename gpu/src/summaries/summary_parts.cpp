// The parts of a weighted summary that shards combine: each column's range, then its sums and histogram (the host
// reference, and the dispatch to the device).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "tally/error.hpp"
#include "tally/gpu/summaries.hpp"
#include "infinities.hpp"

namespace tally::gpu::detail {
namespace {
// a column's words (summaries_cuda.cu's Report): top, W, sum w v, sum w^2, first_bad, lo, hi, top's key
constexpr std::size_t first_bad_word = 4, lo_word = 5, hi_word = 6, key_word = 7;

void same_places(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                 const char* who) {
  for (const auto* c : columns) check_same_place(*c, log_w, who);
}
}  // namespace

std::uint64_t ordered_key(double x) {
  const auto u = std::bit_cast<std::uint64_t>(x);
  return (u >> 63) != 0 ? ~u : u | 0x8000000000000000ull;
}
double from_ordered_key(std::uint64_t k) {
  if (k == 0) return -inf;
  const std::uint64_t u = (k >> 63) != 0 ? k & 0x7fffffffffffffffull : ~k;
  return std::bit_cast<double>(u);
}

Column<std::int64_t> summary_ranges(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                                    std::int64_t tag) {
  constexpr const char* who = "tally::gpu::detail::summary_ranges";
  same_places(columns, log_w, who);
  const std::size_t k = columns.size();
  auto out = Column<std::int64_t>::allocate(log_w.where(), k * summary_range_words + 1, who);
  if (log_w.where() == Backend::cuda) {
    summary_ranges_device(columns, log_w, tag, out);
    return out;
  }
  const std::vector<double>& l = log_w.host();
  double top = -inf;
  std::size_t first_bad = l.size();
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (std::isnan(l[i]) || l[i] == inf) {
      if (first_bad == l.size()) first_bad = i;
    } else {
      top = std::max(top, l[i]);
    }
  }
  std::vector<std::int64_t>& words = out.host();
  std::fill(words.begin(), words.end(), 0);
  for (std::size_t j = 0; j < k; ++j) {
    std::int64_t* w = words.data() + j * summary_range_words;
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    for (const std::int64_t x : columns[j]->host()) lo = std::min(lo, x), hi = std::max(hi, x);
    w[first_bad_word] = static_cast<std::int64_t>(first_bad);
    w[lo_word] = lo;
    w[hi_word] = hi;
    w[key_word] = static_cast<std::int64_t>(top == -inf ? 0 : ordered_key(top));
  }
  words[k * summary_range_words] = tag;
  return out;
}

SummaryRange summary_range_of(std::span<const std::int64_t> part, std::size_t j) {
  const std::int64_t* w = part.data() + j * summary_range_words;
  return {from_ordered_key(static_cast<std::uint64_t>(w[key_word])), w[lo_word], w[hi_word],
          static_cast<std::size_t>(w[first_bad_word])};
}

SummaryRange population_range(std::span<const std::int64_t> gathered, std::size_t k, std::size_t j) {
  const std::size_t size = k * summary_range_words + 1, shards = gathered.size() / size;
  SummaryRange out = summary_range_of(gathered, j);
  for (std::size_t r = 1; r < shards; ++r) {
    const SummaryRange s = summary_range_of(gathered.subspan(r * size), j);
    out.top = std::max(out.top, s.top);
    out.lo = std::min(out.lo, s.lo);
    out.hi = std::max(out.hi, s.hi);
  }
  return out;
}

Column<double> summary_sums(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                            const Column<std::int64_t>& gathered) {
  constexpr const char* who = "tally::gpu::detail::summary_sums";
  same_places(columns, log_w, who);
  const std::size_t k = columns.size(), size = k * summary_range_words + 1;
  if (gathered.where() != log_w.where() || gathered.size() == 0 || gathered.size() % size != 0)
    tally::detail::fail<shape_error>(who, ": ", gathered.size(), " words of parts of ", k, " columns (",
                                     size, " words each, where the columns live)");
  auto out = Column<double>::allocate(log_w.where(), k * summary_sums_size, who);
  if (log_w.where() == Backend::cuda) {
    summary_sums_device(columns, log_w, gathered, out);
    return out;
  }
  const std::vector<double>& l = log_w.host();
  std::vector<double>& sums = out.host();
  std::fill(sums.begin(), sums.end(), 0.0);
  for (std::size_t j = 0; j < k; ++j) {
    const SummaryRange range = population_range(gathered.host(), k, j);
    const std::vector<std::int64_t>& v = columns[j]->host();
    double* o = sums.data() + j * summary_sums_size;
    const bool narrow = range.hi - range.lo < summary_bins;
    for (std::size_t i = 0; i < l.size(); ++i) {
      const bool bad = std::isnan(l[i]) || l[i] == inf;
      const double w = bad ? 0.0 : range.top == -inf ? 1.0 : std::exp(l[i] - range.top);
      o[0] += w;
      o[1] += w * static_cast<double>(v[i]);
      o[2] += w * w;
      if (narrow && w > 0.0) {
        if (v[i] < range.lo || v[i] > range.hi)
          tally::detail::fail<domain_error>(who, ": value ", v[i], " outside the parts' range ", range.lo, " .. ",
                                            range.hi);
        o[3 + static_cast<std::size_t>(v[i] - range.lo)] += w;
      }
    }
  }
  return out;
}

}  // namespace tally::gpu::detail
