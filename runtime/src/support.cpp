// Structural supports: sets of possible values from the graph's structure (sumsets on packed bit rows), and the
// impossible-observation check that uses them before anything is grafted.
#include "support.hpp"

#include "tally/gpu/population_ops.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "tally/error.hpp"
#include "tally/gpu/reachable_sums.hpp"

namespace tally::runtime::detail {
namespace {

using tally::detail::int128;
using Maybe = std::optional<SupportSet>;

constexpr int128 max_row_span = int128{1} << 30;  // integers spanned by a row (128 MiB)
constexpr int128 max_pairs = int128{1} << 22;     // pairwise sums of the fallback
constexpr std::size_t max_nodes = std::size_t{1} << 20;
constexpr int128 max_work = int128{1} << 27;  // word operations per structural_support call

/// The work left to one computation; spend() is false (and nothing is left) once it would run out.
struct Work {
  int128 left = max_work;
  bool spend(int128 words) {
    const bool enough = words <= left;
    left = enough ? left - words : 0;
    return enough;
  }
};

int128 span(std::int64_t lo, std::int64_t hi) { return int128{hi} - lo + 1; }
std::size_t words_for(int128 span) { return static_cast<std::size_t>((span + 63) / 64); }

SupportSet interval_set(std::int64_t lo, std::int64_t hi) { return {SupportSet::interval, lo, hi, {}, {}}; }

/// Points (any order, repeats allowed, at least one) as a set: an interval when they leave no gap, else a sorted list.
SupportSet point_set(std::vector<std::int64_t> p) {
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  if (span(p.front(), p.back()) == static_cast<int128>(p.size())) return interval_set(p.front(), p.back());
  return {SupportSet::list, p.front(), p.back(), {}, std::move(p)};
}

/// A packed row over [lo, hi] (bits 0 and hi - lo set) as a set: an interval when every bit is set.
SupportSet row_set(std::int64_t lo, std::int64_t hi, std::vector<std::uint64_t> bits) {
  int128 members = 0;
  for (auto w : bits) members += std::popcount(w);
  if (members == span(lo, hi)) return interval_set(lo, hi);
  return {SupportSet::row, lo, hi, std::move(bits), {}};
}

/// Calls f on every member, in increasing order.
template <class F>
void for_each(const SupportSet& s, F f) {
  switch (s.form) {
    case SupportSet::interval:
      for (std::int64_t k = s.lo;; ++k) {
        f(k);
        if (k == s.hi) break;
      }
      break;
    case SupportSet::row:
      for (std::size_t i = 0; i < s.bits.size(); ++i)
        for (auto w = s.bits[i]; w != 0; w &= w - 1)
          f(s.lo + static_cast<std::int64_t>(64 * i) + std::countr_zero(w));
      break;
    case SupportSet::list:
      for (auto k : s.points) f(k);
      break;
  }
}

/// s's members as a packed row of `words` words starting at s.lo (zero beyond s.hi).
std::vector<std::uint64_t> row_of(const SupportSet& s, std::size_t words) {
  std::vector<std::uint64_t> row(words, 0);
  if (s.form == SupportSet::row) {
    std::copy(s.bits.begin(), s.bits.end(), row.begin());
  } else if (s.form == SupportSet::interval) {
    const auto n = static_cast<std::size_t>(span(s.lo, s.hi));
    std::fill(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(n / 64), ~std::uint64_t{0});
    if (n % 64 != 0) row[n / 64] = (std::uint64_t{1} << (n % 64)) - 1;
  } else {
    for (auto k : s.points) {
      const auto i = static_cast<std::uint64_t>(k - s.lo);
      row[i / 64] |= std::uint64_t{1} << (i % 64);
    }
  }
  return row;
}

/// The number of shift_or passes that adding `by` costs: one per point, or doubling over an interval.
int128 passes(const SupportSet& by) {
  if (by.form != SupportSet::interval) return by.count();
  return std::bit_width(static_cast<std::uint64_t>(span(by.lo, by.hi))) + 1;
}

/// base + by on one row over [lo, hi] = [base.lo + by.lo, base.hi + by.hi]: OR of base's row shifted by s - by.lo
/// for every s in by. An interval of length L is added by doubling: D |= D << c for c = 1, 2, 4, ... covers
/// base + [0, 2c - 1], and a last shift by L - c covers the rest.
SupportSet shifted_row(const SupportSet& base, const SupportSet& by, std::int64_t lo, std::int64_t hi) {
  auto in = row_of(base, words_for(span(lo, hi)));
  std::vector<std::uint64_t> out(in.size(), 0);
  if (by.form == SupportSet::interval) {
    const auto length = static_cast<std::int64_t>(span(by.lo, by.hi));
    std::int64_t covered = 1;
    for (; 2 * covered <= length; covered *= 2) gpu::cpu::shift_or(in, covered, in);
    out = in;
    if (length > covered) gpu::cpu::shift_or(in, length - covered, out);
  } else {
    for_each(by, [&](std::int64_t s) { gpu::cpu::shift_or(in, s - by.lo, out); });
  }
  return row_set(lo, hi, std::move(out));
}

/// { s + t : s in a, t in b }, or unknown (see structural_support).
Maybe sumset(const SupportSet& a, const SupportSet& b, Work& work) {
  std::int64_t lo, hi;
  if (__builtin_add_overflow(a.lo, b.lo, &lo) || __builtin_add_overflow(a.hi, b.hi, &hi)) return std::nullopt;
  if (a.form == SupportSet::interval && b.form == SupportSet::interval) return interval_set(lo, hi);
  if (span(lo, hi) <= max_row_span) {
    const bool shift_by_b = passes(b) <= passes(a);
    const SupportSet& by = shift_by_b ? b : a;
    if (work.spend((passes(by) + 2) * static_cast<int128>(words_for(span(lo, hi)))))
      return shifted_row(shift_by_b ? a : b, by, lo, hi);
  }
  const int128 pairs = static_cast<int128>(a.count()) * b.count();
  if (pairs > max_pairs || !work.spend(pairs)) return std::nullopt;
  std::vector<std::int64_t> sums;
  sums.reserve(static_cast<std::size_t>(pairs));
  for_each(a, [&](std::int64_t s) { for_each(b, [&](std::int64_t t) { sums.push_back(s + t); }); });
  return point_set(std::move(sums));
}

/// { -s : s in a }, or unknown when -lo leaves int64.
Maybe negated(const SupportSet& a, Work& work) {
  if (a.lo == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
  switch (a.form) {
    case SupportSet::interval: return interval_set(-a.hi, -a.lo);
    case SupportSet::list: {
      std::vector<std::int64_t> p(a.points.rbegin(), a.points.rend());
      for (auto& k : p) k = -k;
      return SupportSet{SupportSet::list, -a.hi, -a.lo, {}, std::move(p)};
    }
    case SupportSet::row: break;
  }
  if (!work.spend(static_cast<int128>(a.bits.size()) + a.count())) return std::nullopt;
  std::vector<std::uint64_t> row(a.bits.size(), 0);
  for_each(a, [&](std::int64_t k) {
    const auto i = static_cast<std::uint64_t>(a.hi - k);  // -k sits at offset -k - (-hi)
    row[i / 64] |= std::uint64_t{1} << (i % 64);
  });
  return SupportSet{SupportSet::row, -a.hi, -a.lo, std::move(row), {}};
}

/// { m s + c : s in a } for m != 0, or unknown.
Maybe affine_set(const SupportSet& a, std::int64_t m, std::int64_t c, Work& work) {
  if (m == -1) {
    const Maybe n = negated(a, work);
    return n ? affine_set(*n, 1, c, work) : std::nullopt;
  }
  if (m == 1) {
    SupportSet out = a;
    if (__builtin_add_overflow(a.lo, c, &out.lo) || __builtin_add_overflow(a.hi, c, &out.hi)) return std::nullopt;
    for (auto& k : out.points) k += c;  // between lo + c and hi + c: no overflow
    return out;
  }
  if (a.count() > static_cast<std::uint64_t>(max_pairs) || !work.spend(a.count())) return std::nullopt;
  std::vector<std::int64_t> p;
  bool overflow = false;
  for_each(a, [&](std::int64_t k) {
    std::int64_t v;
    overflow |= __builtin_mul_overflow(m, k, &v) || __builtin_add_overflow(v, c, &v);
    p.push_back(v);
  });
  return overflow ? std::nullopt : Maybe(point_set(std::move(p)));
}

/// Whether leaf_support can know n's support (what it reads is there), so that the traversal stops early if not.
bool leaf_known(const Node& n) {
  if (!n.discrete()) return false;
  if (n.state == State::realized) return !n.value.empty();
  if (n.group) return false;  // a coordinate of a joint law: its marginal is computed when asked, not kept
  if (n.state == State::marginalized) return !n.marginal.empty() && !n.marginal.parameters;  // weights to read
  return std::holds_alternative<DiscreteRoot>(n.kind);
}

/// The support of a node that needs none of its parents', or unknown (see structural_support).
Maybe leaf_support(const Node& n, Work& work) {
  const std::size_t P = n.context->particles;
  if (!leaf_known(n)) return std::nullopt;
  if (n.state == State::realized) {
    return point_set(to_vector(n.value));
  }
  if (n.state == State::marginalized && (n.marginal.device || n.marginal.shared || n.marginal.indexed)) {
    // two numbers read back (shared or indexed laws: the range of the distinct laws covers every particle's)
    const Laws& m = n.marginal;
    const gpu::ValueRange r = gpu::support_range(m.device ? *m.device : m.shared ? *m.shared : *m.indexed->table);
    if (r.empty()) return std::nullopt;                                 // every particle dead: anything goes
    return interval_set(r.lo, r.hi);
  }
  if (n.state == State::marginalized) {
    const Batch<Pmf>& m = n.marginal.host;
    std::int64_t lo = m[0].lo(), hi = m[0].hi();
    for (std::size_t i = 1; i < P; ++i) lo = std::min(lo, m[i].lo()), hi = std::max(hi, m[i].hi());
    return interval_set(lo, hi);
  }
  const auto& root = std::get<DiscreteRoot>(n.kind);
  const Pmf& prior = root.prior;  // its first and last entries are positive
  // a family's prior with cut tails: values past the window are possible (an observation there extends it)
  if (root.family && prior.error_bound() > 0.0) return std::nullopt;
  if (!work.spend(prior.size() / 8 + 1)) return std::nullopt;
  if ((prior.weights().array() > 0.0).all()) return interval_set(prior.lo(), prior.hi());
  std::vector<std::uint64_t> row(words_for(prior.size()), 0);
  for (Eigen::Index i = 0; i < prior.size(); ++i)
    if (prior.weights()[i] > 0.0) row[static_cast<std::size_t>(i) / 64] |= std::uint64_t{1} << (i % 64);
  return SupportSet{SupportSet::row, prior.lo(), prior.hi(), std::move(row), {}};
}

/// The parents whose supports an initialized sum or affine child needs (none for every other node).
std::vector<Node*> operands(const Node& n) {
  if (n.state != State::initialized) return {};
  if (std::holds_alternative<Sum>(n.kind)) return {n.parents[0].get(), n.parents[1].get()};
  const auto* c = std::get_if<DiscreteChild>(&n.kind);
  if (c && std::holds_alternative<AffineLaw>(c->law)) return {n.parents[0].get()};
  return {};
}

/// An inner node's support from its operands' supports.
Maybe inner_support(const Node& n, const std::vector<const SupportSet*>& in, Work& work) {
  if (const auto* s = std::get_if<Sum>(&n.kind)) {
    if (s->sign > 0) return sumset(*in[0], *in[1], work);
    const Maybe minus = negated(*in[1], work);
    return minus ? sumset(*in[0], *minus, work) : std::nullopt;
  }
  const auto& law = std::get<AffineLaw>(std::get<DiscreteChild>(n.kind).law);
  return affine_set(*in[0], law.a, law.c, work);
}

}  // namespace

bool SupportSet::contains(std::int64_t v) const {
  if (v < lo || v > hi) return false;
  switch (form) {
    case interval: return true;
    case row: {
      const auto i = static_cast<std::uint64_t>(v - lo);
      return (bits[i / 64] >> (i % 64)) & 1;
    }
    case list: return std::binary_search(points.begin(), points.end(), v);
  }
  return true;
}

std::uint64_t SupportSet::count() const {
  switch (form) {
    case interval: return static_cast<std::uint64_t>(std::min(span(lo, hi), int128{~std::uint64_t{0}}));
    case row: {
      std::uint64_t c = 0;
      for (auto w : bits) c += static_cast<std::uint64_t>(std::popcount(w));
      return c;
    }
    case list: return points.size();
  }
  return 0;
}

std::optional<SupportSet> structural_support(Node& n) {
  // The nodes whose supports are needed, each after its operands (depth first, post-order; a DAG has no cycle, so
  // a node is never met again while its operands are still being visited). Stops at the first unknown leaf, before
  // any set is built.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, bool>> stack{{&n, false}};
  while (!stack.empty()) {
    const auto [v, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(v);
      continue;
    }
    if (!seen.insert(v).second) continue;
    if (seen.size() > max_nodes) return std::nullopt;
    const auto ops = operands(*v);
    if (ops.empty() && !leaf_known(*v)) return std::nullopt;
    stack.push_back({v, true});
    for (Node* p : ops) {
      if (p == nullptr) return std::nullopt;
      if (!seen.count(p)) stack.push_back({p, false});
    }
  }
  // How many times each support is still needed, so that each is freed after its last use.
  std::unordered_map<Node*, int> uses{{&n, 1}};
  for (Node* v : order)
    for (Node* p : operands(*v)) ++uses[p];
  std::unordered_map<Node*, SupportSet> known;
  Work work;
  for (Node* v : order) {
    const auto ops = operands(*v);
    Maybe s;
    if (ops.empty()) {
      s = leaf_support(*v, work);
    } else {
      std::vector<const SupportSet*> in;
      for (Node* p : ops) in.push_back(&known.at(p));
      s = inner_support(*v, in, work);
      for (Node* p : ops)
        if (--uses[p] == 0) known.erase(p);
    }
    if (!s) return std::nullopt;
    known.emplace(v, std::move(*s));
  }
  return std::move(known.at(&n));
}

std::optional<gpu::Column<double>> observe_outside_support(Node& n, const Values& values) {
  if (n.state != State::initialized) return std::nullopt;  // a marginal exists: it answers at once
  const auto s = structural_support(n);
  if (!s) return std::nullopt;
  Context& ctx = *n.context;
  const std::vector<std::int64_t> v = to_vector(values);  // (a device graph's values read back only here)
  for (std::size_t i = 0; i < ctx.particles; ++i)
    if (s->contains(v[i])) return std::nullopt;
  const auto keep = n.shared_from_this();
  auto loglik = gpu::filled(-std::numeric_limits<double>::infinity(), ctx.particles, ctx.where);
  gpu::add_to(ctx.changing_log_weight(), loglik);
  n.parents = {};  // a realized node owns nothing
  n.state = State::realized;
  n.value = values;
  return loglik;
}

}  // namespace tally::runtime::detail
