// Joint operations on many different tables at once (joint/batches.hpp): the runtime's JointPmf tables to and from
// gpu::JointLaws batches, and each operation's batch form.
#include "batches.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

#include "tally/distributions/algebra.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"
#include "parallel_parts.hpp"

namespace tally::runtime::detail::joint_steps {
namespace {


/// Law k of a batch (weights w from its offset, log scale s, box from b's host arrays) as a JointPmf with the given
/// spread bound; nothing where it has no mass left or a weight that is not finite. One pass over the weights besides
/// the JointPmf's own.
std::optional<JointPmf> table_of(const gpu::JointLaws& b, const double* w, std::size_t k, double log_scale,
                                 double bound) {
  const auto rank = static_cast<std::size_t>(b.rank());
  const auto begin = static_cast<std::size_t>(b.offset()[k]);
  const std::size_t size = static_cast<std::size_t>(b.offset()[k + 1]) - begin;
  bool finite = log_scale > -inf, positive = false;
  Eigen::VectorXd weights(static_cast<Eigen::Index>(size));
  for (std::size_t e = 0; e < size; ++e) {
    const double x = w[begin + e];
    finite = finite && std::isfinite(x);
    positive = positive || x > 0.0;
    weights[static_cast<Eigen::Index>(e)] = x;
  }
  if (!finite || !positive) return std::nullopt;
  Coordinates lo(b.lo().begin() + static_cast<std::ptrdiff_t>(k * rank),
                 b.lo().begin() + static_cast<std::ptrdiff_t>((k + 1) * rank));
  Coordinates shape(b.shape().begin() + static_cast<std::ptrdiff_t>(k * rank),
                    b.shape().begin() + static_cast<std::ptrdiff_t>((k + 1) * rank));
  return JointPmf(std::move(lo), std::move(shape), std::move(weights), log_scale, bound);
}

/// The number of weights of law k of b.
std::size_t entries_of(const gpu::JointLaws& b, std::size_t k) {
  return static_cast<std::size_t>(b.offset()[k + 1] - b.offset()[k]);
}

/// Law k of b as a JointPmf with spread bound bounds[k], each; nothing where a law has no mass left. The weights come
/// to the host in one copy, and the tables are made from them on the host's threads.
std::optional<Made> from_batch(const gpu::JointLaws& b, const std::vector<double>& bounds) {
  const std::vector<double> w = b.weights().to_host(), s = b.log_scale().to_host();
  std::vector<std::optional<JointPmf>> made(b.size());
  parallel_tables(
      b.size(), [&](std::size_t k) { return entries_of(b, k); },
      [&](std::size_t k) { made[k] = table_of(b, w.data(), k, s[k], bounds[k]); });
  Made out;
  out.reserve(made.size());
  for (auto& d : made) {
    if (!d) return std::nullopt;
    out.push_back(std::move(*d));
  }
  return out;
}

/// Rank-1 batch of a folded operand's laws at s (negated where sign < 0), each with its whole bound: its own, and
/// where its tails are known, their spread part and the dropped part's mass relative to the law's.
BatchIn folded_batch(const FoldedOperand& f, const Starts& s, gpu::Backend where) {
  std::vector<gpu::JointLaws::Law> laws;
  BatchIn b;
  for (const std::size_t i : s) {
    const Pmf& p = (*f.laws)[i];
    const Pmf y = f.sign > 0 ? p : negate(p);
    gpu::JointLaws::Law l;
    l.lo = {y.lo()};
    l.shape = {static_cast<std::int64_t>(y.size())};
    l.weights.assign(y.weights().data(), y.weights().data() + y.size());
    l.log_scale = y.log_scale();
    laws.push_back(std::move(l));
    double bound = p.error_bound();
    if (f.tails) {
      bound += f.tails->spread(i);
      if (const auto& x = f.tails->dropped(i)) bound += std::exp(x->log_mass() - p.log_mass());
    }
    b.bounds.push_back(bound);
  }
  b.laws = std::make_shared<const gpu::JointLaws>(gpu::JointLaws::from_host(1, laws, where));
  return b;
}

/// Throws over_budget where one of x's laws would have more than max_size entries after an operation: extents(lo,
/// shape) gives that law's result's number of entries (a double: no overflow) from its box, as the operation's own
/// allocation would size it. Checked before the operation runs, so that a table past the budget is never built.
template <class Extents>
void require_sizes(const gpu::JointLaws& x, std::int64_t max_size, Extents extents) {
  const auto k = static_cast<std::size_t>(x.rank());
  std::vector<double> lo(k), shape(k);
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t a = 0; a < k; ++a) {
      lo[a] = static_cast<double>(x.lo()[i * k + a]);
      shape[a] = static_cast<double>(x.shape()[i * k + a]);
    }
    if (!(extents(i, lo, shape) <= static_cast<double>(max_size))) throw over_budget{};
  }
}

double entries(const std::vector<double>& shape) {
  double n = 1;
  for (const double m : shape) n *= m;
  return n;
}

/// The entries after a linear combination kappa . x appended (replace = -1) or in place of axis replace.
void require_linear(const gpu::JointLaws& x, std::int64_t max_size, const Coordinates& kappa, int replace) {
  require_sizes(x, max_size, [&](std::size_t, const std::vector<double>& lo, const std::vector<double>& shape) {
    (void)lo;
    double range = 1;
    for (std::size_t a = 0; a < shape.size(); ++a) range += std::abs(static_cast<double>(kappa[a])) * (shape[a] - 1);
    return replace >= 0 ? entries(shape) / shape[static_cast<std::size_t>(replace)] * range : entries(shape) * range;
  });
}

/// The entries after a bounded child of axis is appended: Y on 0 .. hi_axis (a thinning) or 0 .. C - 1.
void require_child(const gpu::JointLaws& x, std::int64_t max_size, int axis, const ChildLaw& law) {
  if (const auto* f = std::get_if<AffineLaw>(&law)) return require_linear(x, max_size, unit(x.rank(), axis, f->a), -1);
  const auto* m = std::get_if<MarkovStep>(&law);
  require_sizes(x, max_size, [&](std::size_t, const std::vector<double>& lo, const std::vector<double>& shape) {
    const auto a = static_cast<std::size_t>(axis);
    return entries(shape) * (m ? static_cast<double>(m->transition.cols()) : lo[a] + shape[a]);
  });
}

}  // namespace

std::optional<BatchPlace> batch_place(const Context& c, JointGroup& g, const Starts& starts, int rank_out) {
  using Mode = Truncation::JointBatches;
  const Truncation& t = c.truncation;
  if (rank_out < 1 || rank_out > gpu::max_joint_rank || t.joint_batches == Mode::host || starts.empty() ||
      g.rank() < 1 || g.rank() > gpu::max_joint_rank)
    return std::nullopt;
  const bool trims = t.tolerance > 0 && t.tolerance < 1;  // trimmed()'s test
  const BatchPlace at{c.where, joint_truncation(c).max_size, trims ? &c.truncation : nullptr};
  if (g.resident() || t.joint_batches == Mode::batched) return at;
  if (!c.device() || starts.size() < 2) return std::nullopt;
  const Tables& in = g.laws();
  std::int64_t entries = 0;
  for (const std::size_t i : starts) entries += static_cast<std::int64_t>(in[i]->size());
  if (entries < t.joint_batch_entries) return std::nullopt;
  return at;
}

void parallel_tables(std::size_t n, const std::function<std::size_t(std::size_t)>& weight,
                     const std::function<void(std::size_t)>& f, std::size_t entries) {
  std::size_t total = 0;
  for (std::size_t k = 0; k < n; ++k) total += weight(k);
  const std::size_t parts = std::min({gpu::detail::hardware_threads(), n,
                                      std::max<std::size_t>(1, total / std::max<std::size_t>(entries, 1))});
  if (parts <= 1) {
    for (std::size_t k = 0; k < n; ++k) f(k);
    return;
  }
  // part p takes the tables k whose weights start in [p total / parts, (p + 1) total / parts): consecutive runs of
  // about equal work
  std::vector<std::size_t> first(parts + 1, n);
  first[0] = 0;
  std::size_t seen = 0, part = 1;
  for (std::size_t k = 0; k < n && part < parts; ++k) {
    while (part < parts && seen >= part * total / parts) first[part++] = k;
    seen += weight(k);
  }
  gpu::detail::parallel_parts(parts, [&](std::size_t p) {
    for (std::size_t k = first[p]; k < first[p + 1]; ++k) f(k);
  });
}

BatchIn batch_input(JointGroup& g, const Starts& starts, gpu::Backend where) {
  BatchIn b;
  if (const JointGroup::Resident* r = g.resident()) {
    std::vector<std::size_t> law;
    law.reserve(starts.size());
    bool in_order = starts.size() == r->laws->size();
    for (std::size_t k = 0; k < starts.size(); ++k) {
      law.push_back(r->index[starts[k]]);
      in_order = in_order && law.back() == k;
      b.bounds.push_back(r->bounds[law.back()]);
      b.log_mass.push_back(r->log_mass[law.back()]);
    }
    b.laws = in_order ? r->laws : std::make_shared<const gpu::JointLaws>(gpu::joint_gather(*r->laws, law));
    return b;
  }
  const Tables& in = g.laws();
  const int rank = in[starts[0]]->rank();
  const auto k = static_cast<std::size_t>(rank);
  std::vector<std::int64_t> lo, shape;
  std::vector<double> log_scale;
  std::vector<std::size_t> offset{0};
  lo.reserve(starts.size() * k);
  shape.reserve(starts.size() * k);
  for (const std::size_t i : starts) {
    const JointPmf& d = *in[i];
    lo.insert(lo.end(), d.lo().begin(), d.lo().end());
    shape.insert(shape.end(), d.shape().begin(), d.shape().end());
    log_scale.push_back(d.log_scale());
    offset.push_back(offset.back() + static_cast<std::size_t>(d.size()));
    b.bounds.push_back(d.error_bound());
  }
  // a JointPmf's weights are the batch's form already (finite, in [0, 1], largest 1): copied side by side
  std::vector<double> weights(offset.back());
  b.log_mass.resize(starts.size());
  parallel_tables(
      starts.size(), [&](std::size_t j) { return offset[j + 1] - offset[j]; },
      [&](std::size_t j) {
        const JointPmf& d = *in[starts[j]];
        std::copy(d.weights().data(), d.weights().data() + d.size(), weights.data() + offset[j]);
        b.log_mass[j] = d.log_mass();
      });
  b.laws = std::make_shared<const gpu::JointLaws>(gpu::JointLaws::from_flat(
      rank, std::move(lo), std::move(shape), std::move(weights), std::move(log_scale), where));
  return b;
}

bool keep(const Context& c, JointGroup& g, BatchOut out, const RunStarts& runs, const Truncation* trim) {
  const std::size_t n = out.laws.size();
  if (n != runs.starts.size() || out.bounds.size() != n)
    throw std::logic_error("tally::runtime: a joint batch's results do not match its inputs");
  const std::vector<double> scale = out.laws.log_scale().to_host();
  for (const double s : scale)
    if (!(s > -inf && s < inf)) return false;
  if (trim || out.log_mass.size() != n) {
    gpu::JointTrimmed t = gpu::joint_trim(out.laws, trim ? trim->tolerance : 0.0);
    out.log_mass.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const double kept = t.total[k] - t.cut[k];
      if (!(t.total[k] > 0.0 && t.total[k] < inf && kept > 0.0)) return false;
      // tally::truncate without a dropped measure: the bound rescaled to the kept mass, the cut mass added to it
      out.bounds[k] = (out.bounds[k] * t.total[k] + t.cut[k]) / kept;
      out.log_mass[k] = scale[k] + std::log(kept);
    }
    out.laws = std::move(t.laws);
  }
  if (8.0 * static_cast<double>(out.laws.total()) > static_cast<double>(c.truncation.max_joint_bytes))
    throw over_budget{};
  std::vector<std::uint32_t> index(c.particles, 0);
  if (!runs.one) {
    std::uint32_t k = 0;
    for (std::size_t i = 1; i < c.particles; ++i) index[i] = runs.repeats(i) ? k : ++k;
  }
  g.set(JointGroup::Resident{std::make_shared<const gpu::JointLaws>(std::move(out.laws)), std::move(out.bounds),
                             std::move(out.log_mass), std::move(index)});
  ++batches_run();
  return true;
}

gpu::ChildKernel batch_child(const ChildLaw& law, const GroupLaws* each, const Starts& s, gpu::Backend where) {
  if (!each) return child_kernel(law, where);
  std::vector<gpu::ChildKernel> sets;  // made on the host, copied where the batch runs by per_set
  sets.reserve(s.size());
  for (const std::size_t i : s) sets.push_back(child_kernel(each->at(i), gpu::Backend::cpu));
  return gpu::ChildKernel::per_set(sets, 1, where);
}

BatchOut child_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, bool in_place,
                     const GroupLaws* each, const Starts& s) {
  const gpu::JointLaws& x = *in.laws;
  const int rank = x.rank();
  gpu::JointLaws out;
  if (each) {  // a law per group: a thinning or a Markov step of each table's own (Y appended, X summed out in place)
    if (std::holds_alternative<AffineLaw>(law)) throw std::logic_error("tally::runtime: an affine law per group");
    require_child(x, at.max_size, axis, law);
    out = gpu::joint_add_child(x, axis, batch_child(law, each, s, at.where));
    if (in_place) out = gpu::joint_sum_out(out, axis);
    return {std::move(out), std::move(in.bounds), {}};
  }
  if (in_place && !std::holds_alternative<Thinning>(law)) {  // a Markov step or affine map: the axis replaced
    if (const auto* f = std::get_if<AffineLaw>(&law)) require_linear(x, at.max_size, unit(rank, axis, f->a), axis);
    else
      require_sizes(x, at.max_size, [&](std::size_t, const std::vector<double>&, const std::vector<double>& shape) {
        return entries(shape) / shape[static_cast<std::size_t>(axis)] *
               static_cast<double>(std::get<MarkovStep>(law).transition.cols());
      });
  } else {
    require_child(x, at.max_size, axis, law);
  }
  if (const auto* f = std::get_if<AffineLaw>(&law)) {
    out = gpu::joint_linear_combination(x, unit(rank, axis, f->a), f->c, in_place ? axis : -1);
  } else if (const auto* m = std::get_if<MarkovStep>(&law)) {
    out = in_place ? gpu::joint_markov_step(x, axis, markov_table(m->transition, at.where))
                   : gpu::joint_add_child(x, axis, child_kernel(law, at.where));
  } else if (const auto* k = std::get_if<Thinning>(&law)) {
    out = gpu::joint_add_child(x, axis, gpu::ChildKernel::binomial(k->keep));
    if (in_place) out = gpu::joint_sum_out(out, axis);  // Y, appended last, stays last
  } else {
    throw std::logic_error("tally::runtime: a Poisson child has no batch form");
  }
  return {std::move(out), std::move(in.bounds), {}};
}

BatchOut linear_batch(BatchIn in, const Starts& s, const BatchPlace& at, const Coordinates& kappa,
                      const std::vector<std::int64_t>& constants, int replace,
                      const std::vector<FoldedOperand>& folded) {
  const gpu::JointLaws& x = *in.laws;
  const int za = replace >= 0 ? replace : x.rank();  // V's axis
  require_linear(x, at.max_size, kappa, replace);
  gpu::JointLaws out = gpu::joint_linear_combination(x, kappa, 0, replace);
  for (const FoldedOperand& f : folded) {
    const BatchIn y = folded_batch(f, s, at.where);
    require_sizes(out, at.max_size, [&](std::size_t i, const std::vector<double>&, const std::vector<double>& shape) {
      const auto a = static_cast<std::size_t>(za);
      return entries(shape) / shape[a] * (shape[a] + static_cast<double>(y.laws->shape()[i]) - 1);
    });
    out = gpu::joint_add_independent(out, za, *y.laws);
    for (std::size_t k = 0; k < s.size(); ++k) in.bounds[k] = (1.0 + in.bounds[k]) * (1.0 + y.bounds[k]) - 1.0;
  }
  if (!constants.empty()) {  // c_i moves V's axis (it commutes with the convolutions along it)
    std::vector<std::int64_t> shifts;
    for (const std::size_t i : s) shifts.push_back(constants.size() == 1 ? constants[0] : constants[i]);
    try {
      out.shift(za, shifts);
    } catch (const overflow_error&) {
      tally::detail::fail<overflow_error>("tally::runtime: a sum of coordinates leaves int64");
    }
  }
  return {std::move(out), std::move(in.bounds), {}};
}

namespace {

/// tally::add_child's window of a Poisson child from the smallest and largest rates (Poisson tails are monotone in
/// the rate) at t's tolerance, and the mass past it (at most tol / 2 on each side, relative) added to bound as
/// tally::add_child adds it; the point 0 for rate 0.
void poisson_window(double lo_rate, double hi_rate, const Truncation& t, std::int64_t& y_lo, std::int64_t& y_hi,
                    double& bound) {
  y_lo = hi_rate == 0.0 ? 0 : to_pmf(Poisson(lo_rate), t).lo();
  y_hi = hi_rate == 0.0 ? 0 : to_pmf(Poisson(hi_rate), t).hi();
  if (hi_rate > 0.0) bound += t.tolerance / (1.0 - t.tolerance) * (1.0 + bound);
}

}  // namespace

BatchOut poisson_child_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, const Truncation& t,
                             const GroupLaws* each, const Starts& s) {
  const gpu::JointLaws& x = *in.laws;
  const auto k = static_cast<std::size_t>(x.rank()), a = static_cast<std::size_t>(axis);
  std::vector<std::int64_t> y_lo(x.size()), y_hi(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    // the smallest and largest rates over table j's box: tally::add_child's window, from the box rather than its
    // positive entries (wider, never narrower)
    const std::int64_t lo = x.lo()[j * k + a], hi = lo + x.shape()[j * k + a] - 1;
    if (lo < 0) tally::detail::fail<domain_error>("tally::runtime: a Poisson child of a negative count or state");
    const ChildLaw& l = each ? each->at(s[j]) : law;
    double lo_rate = 0.0, hi_rate = 0.0;
    if (const auto* p = std::get_if<ScaledPoisson>(&l)) {
      lo_rate = p->scale * static_cast<double>(lo);
      hi_rate = p->scale * static_cast<double>(hi);
    } else {
      const Eigen::VectorXd& r = std::get<IndexedPoisson>(l).rates;
      if (hi >= r.size())
        tally::detail::fail<domain_error>("tally::runtime: an indexed Poisson child's state past its rates");
      lo_rate = r.segment(lo, hi - lo + 1).minCoeff();
      hi_rate = r.segment(lo, hi - lo + 1).maxCoeff();
    }
    poisson_window(lo_rate, hi_rate, t, y_lo[j], y_hi[j], in.bounds[j]);
  }
  require_sizes(x, at.max_size, [&](std::size_t j, const std::vector<double>&, const std::vector<double>& shape) {
    return entries(shape) * static_cast<double>(y_hi[j] - y_lo[j] + 1);
  });
  return {gpu::joint_add_child(x, axis, batch_child(law, each, s, at.where), y_lo, y_hi), std::move(in.bounds), {}};
}

std::shared_ptr<const gpu::JointLaws> with_constant_axes(std::shared_ptr<const gpu::JointLaws> x, const Starts& s,
                                                        const SelectedFrame& f, std::vector<int>& axes) {
  axes = f.axis;
  for (std::size_t k = 0; k < f.parents.size(); ++k) {
    const std::vector<std::int64_t>& v = f.values[k];
    if (v.empty()) continue;
    const int a = x->rank();
    gpu::JointLaws out = gpu::joint_linear_combination(*x, Coordinates(static_cast<std::size_t>(a), 0), 0);  // 0
    std::vector<std::int64_t> at;
    at.reserve(s.size());
    for (const std::size_t i : s) at.push_back(v.size() == 1 ? v[0] : v[i]);
    out.shift(a, at);
    x = std::make_shared<const gpu::JointLaws>(std::move(out));
    axes[k] = a;
  }
  return x;
}

BatchOut selected_child_batch(BatchIn in, const Starts& s, const BatchPlace& at, const SelectedChild& child,
                              const SelectedFrame& f, const Truncation& t) {
  std::vector<int> axes;
  const auto with = with_constant_axes(in.laws, s, f, axes);
  const gpu::JointLaws& x = *with;
  const std::vector<int> others(axes.begin() + 1, axes.end());
  const auto k = static_cast<std::size_t>(x.rank());
  gpu::JointLaws out;
  if (child.family == SelectedChild::poisson) {
    std::vector<std::int64_t> y_lo(x.size()), y_hi(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) {
      // the smallest and largest rates over table j's box, among the rates its states select
      const auto lo_of = [&](int a) { return x.lo()[j * k + static_cast<std::size_t>(a)]; };
      const auto hi_of = [&](int a) { return lo_of(a) + x.shape()[j * k + static_cast<std::size_t>(a)] - 1; };
      const std::int64_t first = std::max<std::int64_t>(lo_of(axes[0]), 0);
      const std::int64_t last = std::min<std::int64_t>(hi_of(axes[0]), static_cast<std::int64_t>(others.size()) - 1);
      std::int64_t lowest = std::numeric_limits<std::int64_t>::max(), highest = 0;
      for (std::int64_t state = first; state <= last; ++state) {
        lowest = std::min(lowest, lo_of(others[static_cast<std::size_t>(state)]));
        highest = std::max(highest, hi_of(others[static_cast<std::size_t>(state)]));
      }
      if (first > last) lowest = 0;  // no state selects a rate (the kernel's checks name it)
      poisson_window(child.scale * static_cast<double>(std::max<std::int64_t>(lowest, 0)),
                     child.scale * static_cast<double>(std::max<std::int64_t>(highest, 0)), t, y_lo[j], y_hi[j],
                     in.bounds[j]);
    }
    require_sizes(x, at.max_size, [&](std::size_t j, const std::vector<double>&, const std::vector<double>& shape) {
      return entries(shape) * static_cast<double>(y_hi[j] - y_lo[j] + 1);
    });
    out = gpu::joint_add_selected_poisson(x, axes[0], others, child.scale, y_lo, y_hi);
  } else {
    const auto c = static_cast<std::size_t>(others.at(0));
    require_sizes(x, at.max_size, [&](std::size_t, const std::vector<double>& lo, const std::vector<double>& shape) {
      return entries(shape) * (lo[c] + shape[c]);
    });
    out = gpu::joint_add_selected_thinning(
        x, axes[0], others[0], std::vector<double>(child.keep.data(), child.keep.data() + child.keep.size()));
  }
  // the constants' axes summed out (Y, after them, moves down to the first of them)
  for (int c = 0; c < f.constants; ++c) out = gpu::joint_sum_out(out, in.laws->rank());
  return {std::move(out), std::move(in.bounds), {}};
}

BatchOut child_sum_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, std::int64_t sign_x,
                         std::int64_t sign_y, const GroupLaws* each, const Starts& s) {
  const gpu::JointLaws& x = *in.laws;
  const int rank = x.rank();
  gpu::JointLaws e;  // Y appended at axis `rank`
  require_child(x, at.max_size, axis, law);
  if (const auto* f = std::get_if<AffineLaw>(&law); f && !each)
    e = gpu::joint_linear_combination(x, unit(rank, axis, f->a), f->c, -1);
  else
    e = gpu::joint_add_child(x, axis, batch_child(law, each, s, at.where));
  Coordinates k(static_cast<std::size_t>(rank + 1), 0);
  k[static_cast<std::size_t>(axis)] = sign_x;
  k.back() = sign_y;
  require_linear(e, at.max_size, k, rank);
  return {gpu::joint_linear_combination(e, k, 0, rank), std::move(in.bounds), {}};
}

BatchOut split_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, const GroupLaws* each,
                     const Starts& s) {
  const gpu::JointLaws& x = *in.laws;
  require_sizes(x, at.max_size, [&](std::size_t, const std::vector<double>& lo, const std::vector<double>& shape) {
    const auto a = static_cast<std::size_t>(axis);  // the host's split_in_place's test (join_joint_sum)
    return entries(shape) * (lo[a] + shape[a]);
  });
  return {gpu::joint_split(x, axis, batch_child(law, each, s, at.where)), std::move(in.bounds), {}};
}

BatchOut sum_out_batch(BatchIn in, int axis) {
  return {gpu::joint_sum_out(*in.laws, axis), std::move(in.bounds), std::move(in.log_mass)};
}

BatchOut outer_batch(BatchIn in, const BatchIn& y, const BatchPlace& at) {
  const gpu::JointLaws& x = *in.laws;
  const auto& yo = y.laws->offset();
  require_sizes(x, at.max_size, [&](std::size_t k, const std::vector<double>&, const std::vector<double>& shape) {
    return entries(shape) * static_cast<double>(yo[k + 1] - yo[k]);
  });
  BatchOut out{gpu::joint_outer(x, *y.laws), std::move(in.bounds), {}};
  for (std::size_t k = 0; k < out.bounds.size(); ++k) {  // independent factors: relative errors compound
    out.bounds[k] = (1.0 + out.bounds[k]) * (1.0 + y.bounds[k]) - 1.0;
    if (in.log_mass.size() == out.bounds.size() && y.log_mass.size() == out.bounds.size())
      out.log_mass.push_back(in.log_mass[k] + y.log_mass[k]);
  }
  return out;
}

namespace {

/// Axis a of the laws as the marginals of particles whose law index[i] is (bounds: each law's whole bound), where
/// the graph keeps its laws: indexed laws on a CUDA graph, Pmfs shared as the laws are on the host.
Laws indexed_marginals(const Context& ctx, const gpu::JointLaws& laws, int a, const std::vector<double>& bounds,
                       const std::vector<std::uint32_t>& index) {
  gpu::Laws table = gpu::joint_marginal(laws, a);
  const auto k = static_cast<std::size_t>(laws.rank()), axis = static_cast<std::size_t>(a);
  double bound = 0.0;
  std::int64_t lowest = std::numeric_limits<std::int64_t>::max(), highest = std::numeric_limits<std::int64_t>::min();
  for (std::size_t j = 0; j < laws.size(); ++j) {
    bound = std::max(bound, bounds[j]);
    lowest = std::min(lowest, laws.lo()[j * k + axis]);
    highest = std::max(highest, laws.lo()[j * k + axis] + laws.shape()[j * k + axis] - 1);
  }
  if (ctx.device()) {
    Laws out;
    const std::vector<std::int64_t> at(index.begin(), index.end());
    out.indexed = std::make_shared<const IndexedForm>(
        IndexedForm{std::make_shared<const gpu::Laws>(std::move(table)), make_values(ctx, at), highest});
    out.device_error = bound;
    out.device_nonnegative = lowest >= 0;
    return out;
  }
  const gpu::PmfBatch& b = table.host();
  std::vector<Pmf> pmfs;
  pmfs.reserve(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) {
    const auto w = b[j];
    pmfs.emplace_back(b.lo[j], Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Eigen::Index>(w.size())),
                      b.log_scale[j], bounds[j]);
  }
  return place(ctx, per_particle<Pmf>(
                        ctx.particles, [&](std::size_t i) { return pmfs[index[i]]; },
                        [&](std::size_t i) { return index[i] == index[i - 1]; }));
}

/// Each particle's run (0, 1, ...: the runs in order).
std::vector<std::uint32_t> run_index(const RunStarts& runs, std::size_t particles) {
  std::vector<std::uint32_t> index(particles, 0);
  for (std::size_t i = 1; i < particles; ++i) index[i] = index[i - 1] + (runs.repeats(i) ? 0 : 1);
  return index;
}

}  // namespace

Laws resident_marginal(const Context& ctx, const JointGroup::Resident& r, int a) {
  return indexed_marginals(ctx, *r.laws, a, r.bounds, r.index);
}

std::optional<Laws> resident_linear_marginal(const Context& ctx, JointGroup& g, const JointGroup::LinearMember& l,
                                             const Coordinates& kappa) {
  if (!g.resident() || kappa.empty()) return std::nullopt;
  const RunStarts runs(ctx.particles,
                       [&](std::size_t i) { return g.repeats(i) && (l.constants.empty() || repeats(l.constants, i)); });
  const auto at = batch_place(ctx, g, runs.starts, g.rank());
  if (!at) return std::nullopt;
  // V in place of an axis it reads (fewer entries than appended), the first with kappa_r != 0, summed out with it
  const auto r = static_cast<int>(std::find_if(kappa.begin(), kappa.end(), [](std::int64_t c) { return c != 0; }) -
                                  kappa.begin());
  BatchIn in = batch_input(g, runs.starts, at->where);
  try {
    require_linear(*in.laws, at->max_size, kappa, r);
  } catch (const over_budget&) {
    return std::nullopt;  // the host's linear_form_law, which forms no table
  }
  gpu::JointLaws v = gpu::joint_linear_combination(*in.laws, kappa, 0, r);  // V on axis r
  std::vector<std::int64_t> c;
  for (const std::size_t s : runs.starts) c.push_back(l.constant(s));
  v.shift(r, c);
  return indexed_marginals(ctx, v, r, in.bounds, run_index(runs, ctx.particles));
}

namespace {

/// The likelihoods of a conditioned batch read back, and rho_k = e_k M_k / L_k; nothing where the host's formulas
/// must take over (a likelihood that is NaN, a posterior without mass).
std::optional<ConditionedBatch> with_rho(const BatchIn& in, gpu::JointLaws posterior, const gpu::Column<double>& ll) {
  ConditionedBatch out;
  out.posterior = std::move(posterior);
  out.log_likelihood = ll.to_host();
  const std::vector<double> scale = out.posterior.log_scale().to_host();
  for (std::size_t k = 0; k < out.log_likelihood.size(); ++k) {
    const double l = out.log_likelihood[k], e = in.bounds[k];
    if (l == -inf) {  // impossible here: the law stays (tally::condition's impossible())
      out.rho.push_back(0.0);
      continue;
    }
    if (!std::isfinite(l) || scale[k] == -inf) return std::nullopt;  // the host's formulas
    // |L - L'| <= e M (each likelihood is at most 1): rho = e M / L, as tally::condition's reweight
    out.rho.push_back(e == 0.0 ? 0.0 : std::exp(std::log(e) + in.log_mass[k] - l));
  }
  return out;
}

/// The observations at the starts (y: one per particle, or one for all) where the batch runs, and log-likelihoods
/// 0 beside them, as the conditioning operations take them.
struct Observed {
  gpu::Column<std::int64_t> values;
  gpu::Column<double> log_likelihood;
  Observed(const Starts& s, const std::vector<std::int64_t>& y, gpu::Backend where)
      : values(gpu::Column<std::int64_t>::from_host(at_starts(s, y), where)),
        log_likelihood(gpu::Column<double>::from_host(std::vector<double>(s.size(), 0.0), where)) {}
  static std::vector<std::int64_t> at_starts(const Starts& s, const std::vector<std::int64_t>& y) {
    std::vector<std::int64_t> v;
    v.reserve(s.size());
    for (const std::size_t i : s) v.push_back(y.size() == 1 ? y[0] : y[i]);
    return v;
  }
};

}  // namespace

std::optional<ConditionedBatch> condition_batch(const BatchIn& in, const Starts& s, int axis, const ChildLaw& law,
                                                const std::vector<std::int64_t>& y, const GroupLaws* each) {
  const gpu::JointLaws& x = *in.laws;
  if (const auto* f = std::get_if<AffineLaw>(&law); f && !each) {
    std::vector<std::int64_t> v;  // a X + c = y: a X = y - c
    for (const std::size_t i : s) v.push_back((y.size() == 1 ? y[0] : y[i]) - f->c);
    return condition_linear_batch(in, unit(x.rank(), axis, f->a), v);
  }
  Observed o(s, y, x.where());
  gpu::JointLaws posterior =
      gpu::joint_condition_on_child(x, axis, batch_child(law, each, s, x.where()), o.values, o.log_likelihood);
  return with_rho(in, std::move(posterior), o.log_likelihood);
}

std::optional<ConditionedBatch> selected_batch(const BatchIn& in, const Starts& s, const SelectedChild& child,
                                               const SelectedFrame& f, const std::vector<std::int64_t>& y) {
  std::vector<int> axes;
  const auto with = with_constant_axes(in.laws, s, f, axes);
  const gpu::JointLaws& x = *with;
  const std::vector<int> others(axes.begin() + 1, axes.end());
  Observed o(s, y, x.where());
  gpu::JointLaws posterior =
      child.family == SelectedChild::poisson
          ? gpu::joint_condition_on_selected_poisson(x, axes[0], others, child.scale, o.values, o.log_likelihood)
          : gpu::joint_condition_on_selected_thinning(
                x, axes[0], others.at(0), std::vector<double>(child.keep.data(), child.keep.data() + child.keep.size()),
                o.values, o.log_likelihood);
  for (int c = 0; c < f.constants; ++c) posterior = gpu::joint_sum_out(posterior, in.laws->rank());  // mass kept
  return with_rho(in, std::move(posterior), o.log_likelihood);
}

std::optional<ConditionedBatch> condition_linear_batch(const BatchIn& in, const Coordinates& kappa,
                                                       const std::vector<std::int64_t>& v) {
  const gpu::JointLaws& x = *in.laws;
  const auto observed = gpu::Column<std::int64_t>::from_host(v, x.where());
  auto ll = gpu::Column<double>::from_host(std::vector<double>(v.size(), 0.0), x.where());
  gpu::JointLaws posterior = gpu::joint_condition_on_linear(x, kappa, 0, observed, ll);
  return with_rho(in, std::move(posterior), ll);
}

}  // namespace tally::runtime::detail::joint_steps

namespace tally::runtime::detail {

using namespace joint_steps;

const JointGroup::Laws& JointGroup::laws() {
  if (!resident_) return host_;
  const Resident& r = *resident_;
  std::optional<Made> made = from_batch(*r.laws, r.bounds);
  if (!made) throw std::logic_error("tally::runtime: a joint batch's table has no mass");
  std::vector<std::shared_ptr<const JointPmf>> tables;
  tables.reserve(made->size());
  for (JointPmf& d : *made) tables.push_back(std::make_shared<const JointPmf>(std::move(d)));
  host_ = tables.size() == 1 ? Laws::uniform(r.index.size(), tables[0])
                             : Laws::make(r.index.size(), [&](std::size_t i) { return tables[r.index[i]]; });
  resident_.reset();
  ++tables_to_host();
  return host_;
}

}  // namespace tally::runtime::detail
