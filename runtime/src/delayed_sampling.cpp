// The delayed-sampling core (Murray et al., AISTATS 2018): graft, marginalize, prune, realize, observe, per batch.
#include <algorithm>
#include <cmath>
#include <limits>

#include "node.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {
namespace {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

std::size_t particles(const Node& n) { return n.context->particles; }
const Truncation& truncation(const Node& n) { return n.context->truncation; }

// ---- laws of a discrete child, applied to a pmf ----------------------------------------------------------------
Pmf affine_pmf(const Pmf& x, std::int64_t a, std::int64_t c, const Truncation& t) {
  if (a == 1) return shift(x, c);
  if (a == -1) return shift(negate(x), c);
  return to_dense(affine(x, a, c), t);
}

Pmf push(const Pmf& x, const ChildLaw& law, const Truncation& t) {
  return std::visit(overloaded{[&](const Thinning& k) { return marginal(x, k); },
                               [&](const ScaledPoisson& k) { return marginal(x, k, t); },
                               [&](const IndexedPoisson& k) { return marginal(x, k, t); },
                               [&](const MarkovStep& k) { return marginal(x, k); },
                               [&](const AffineLaw& k) { return affine_pmf(x, k.a, k.c, t); }},
                    law);
}

Conditioned pull(const Pmf& x, const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const AffineLaw& k) { return condition_affine(x, k.a, k.c, y); },
                               [&](const auto& k) { return condition(x, k, y); }},
                    law);
}

/// The law of parent p for particle i: its marginal, or the point mass at its value.
Pmf law_of(const Node& p, std::size_t i) { return p.state == State::realized ? Pmf::point(p.value[i]) : p.marginal[i]; }

// ---- JointSum: z = s_x X + s_y Y with Y | X ~ law, enumerated over X ----------------------------------------------
/// For each x in the support of X, the law of Y given x, signed and shifted into the law of z; mixed by P(X = x).
Pmf joint_sum_marginal(const Pmf& x, const JointSum& j, const Truncation& t) {
  std::vector<std::pair<double, Pmf>> parts;  // (weight of x, law of z given x)
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  double error = 0.0;
  for (std::int64_t v = x.lo(); v <= x.hi(); ++v) {
    const double wx = x.weights()[v - x.lo()];
    if (wx == 0.0) continue;
    Pmf z = affine_pmf(push(Pmf::point(v), j.law, t), j.sign_y, j.sign_x * v, t);
    lo = std::min(lo, z.lo());
    hi = std::max(hi, z.hi());
    error = std::max(error, z.error_bound());
    parts.emplace_back(wx, std::move(z));
  }
  Eigen::VectorXd w = Eigen::VectorXd::Zero(hi - lo + 1);
  for (const auto& [wx, z] : parts) w.segment(z.lo() - lo, z.size()) += z.weights() * (wx * std::exp(z.log_scale()));
  return Pmf(lo, std::move(w), x.log_scale(), x.error_bound() + error);
}

/// X given s_x X + s_y Y = z: posterior proportional to P(X = x) P(Y = s_y (z - s_x x) | X = x).
Pmf joint_sum_posterior(const Pmf& x, const JointSum& j, std::int64_t z, const Truncation& t) {
  Eigen::VectorXd lw(x.size());
  for (std::int64_t v = x.lo(); v <= x.hi(); ++v) {
    const Pmf y = push(Pmf::point(v), j.law, t);
    lw[v - x.lo()] = std::log(x.weights()[v - x.lo()]) + log_pdf(y, j.sign_y * (z - j.sign_x * v));
  }
  if (lw.maxCoeff() == -std::numeric_limits<double>::infinity()) return x;  // impossible: the weight says so
  return Pmf::from_log(x.lo(), lw, x.error_bound()).normalized();
}

// ---- the M-path ----------------------------------------------------------------------------------------------
/// child joins the M-path under parent (when parent is marginalized): parent owns child, child points back.
void attach(Node& parent, Node& child, int slot) {
  if (parent.state != State::marginalized) return;
  parent.mchild = child.shared_from_this();
  child.mparents[slot] = &parent;
}

/// Ties y = a x + c (per particle c) after an observed sum: y's marginal follows x's, x owns y.
void tie(Node& x, Node& y, std::int64_t a, Batch<std::int64_t> c) {
  const auto keep = x.shared_from_this();  // y may have been x's last owner
  y.state = State::marginalized;
  y.parents = {};
  y.tie_a = a;
  y.tie_c = std::move(c);
  y.marginal = Batch<Pmf>::make(particles(y), [&](std::size_t i) {
    return affine_pmf(x.marginal[i], a, y.tie_c[i], truncation(y));
  });
  y.tied_to = &x;
  x.tied = y.shared_from_this();
}

void marginalize(Node& n) {
  const auto keep = n.shared_from_this();
  const std::size_t P = particles(n);
  const Truncation& t = truncation(n);
  std::visit(
      overloaded{
          [&](DiscreteRoot& r) { n.marginal = Batch<Pmf>::filled(P, r.prior); },
          [&](DiscreteChild& c) {
            Node& x = *n.parents[0];
            n.marginal = Batch<Pmf>::make(P, [&](std::size_t i) { return push(law_of(x, i), c.law, t); });
            attach(x, n, 0);
          },
          [&](Sum& s) {
            Node& x = *n.parents[0];
            Node& y = *n.parents[1];
            n.operands = std::make_unique<std::array<Batch<Pmf>, 2>>();
            auto& ops = *n.operands;
            ops[0] = Batch<Pmf>::make(P, [&](std::size_t i) { return law_of(x, i); });
            ops[1] = Batch<Pmf>::make(P, [&](std::size_t i) { return law_of(y, i); });
            n.marginal = Batch<Pmf>::make(P, [&](std::size_t i) {
              return s.sign > 0 ? sum(ops[0][i], ops[1][i]) : difference(ops[0][i], ops[1][i]);
            });
            attach(x, n, 0);
            attach(y, n, 1);
          },
          [&](JointSum& j) {
            Node& x = *n.parents[0];
            n.marginal = Batch<Pmf>::make(P, [&](std::size_t i) { return joint_sum_marginal(law_of(x, i), j, t); });
            attach(x, n, 0);
          },
          [&](ContinuousRoot&) {},  // created marginalized
          [&](CountChild& c) {
            Node& rho = *n.parents[0];
            const bool known = rho.state == State::realized;
            n.marginal = Batch<Pmf>::make(P, [&](std::size_t i) -> Pmf {
              switch (c.family) {
                case CountChild::binomial:
                  return known ? to_pmf(Binomial(c.trials[i], rho.continuous->value[i][0]), t)
                               : marginal_binomial(rho.continuous->beta[i], c.trials[i], t);
                case CountChild::negative_binomial:
                  return known ? to_pmf(NegativeBinomial(c.successes, rho.continuous->value[i][0]), t)
                               : marginal_negative_binomial(rho.continuous->beta[i], c.successes, t);
                case CountChild::poisson:
                  return known ? to_pmf(Poisson(rho.continuous->value[i][0]), t) : marginal_poisson(rho.continuous->gamma[i], t);
                case CountChild::categorical:
                  return known ? to_pmf(Categorical(rho.continuous->value[i]), t) : marginal_categorical(rho.continuous->dirichlet[i]);
              }
              return Pmf::point(0);  // unreachable
            });
            attach(rho, n, 0);
          }},
      n.kind);
  n.state = State::marginalized;
  n.parents = {};  // ownership flips: the marginalized parents now own n
}

/// Conditions n's marginalized parents on n = v (per particle) and detaches n from them.
void condition_parents(Node& n, const Batch<std::int64_t>& v) {
  // the parents stay alive through this function even if a tie below drops their last owner
  std::array<std::shared_ptr<Node>, 2> keep;
  for (std::size_t k = 0; k < 2; ++k)
    if (n.mparents[k]) keep[k] = n.mparents[k]->shared_from_this();
  const std::size_t P = particles(n);
  const Truncation& t = truncation(n);
  // For ties: where the observed value is impossible (the particle's weight is -inf), any possible value will
  // do, and it keeps the tie's constants in range.
  auto possible = [&](std::size_t i) {
    return !n.marginal.empty() && log_pdf(n.marginal[i], v[i]) == -std::numeric_limits<double>::infinity()
               ? n.marginal[i].lo()
               : v[i];
  };
  std::visit(
      overloaded{
          [&](DiscreteRoot&) {},
          [&](ContinuousRoot&) {},
          [&](DiscreteChild& c) {
            if (Node* x = n.mparents[0]) {
              for (std::size_t i = 0; i < P; ++i)
                if (auto post = pull(x->marginal[i], c.law, v[i]).posterior) x->marginal[i] = std::move(*post);
              x->mchild.reset();
            }
          },
          [&](JointSum& j) {
            Node* x = n.mparents[0];
            if (!x) return;
            for (std::size_t i = 0; i < P; ++i) x->marginal[i] = joint_sum_posterior(x->marginal[i], j, v[i], t);
            // Y = s_y (z - s_x X) = -s_x s_y X + s_y z
            if (auto y = n.operand_y.lock(); y && y->state == State::initialized)
              tie(*x, *y, -j.sign_x * j.sign_y,
                  Batch<std::int64_t>::make(P, [&](std::size_t i) { return j.sign_y * possible(i); }));
            x->mchild.reset();
          },
          [&](Sum& s) {
            Node* x = n.mparents[0];
            Node* y = n.mparents[1];
            // X | X + sY = z from the operands' laws (kept in n, so a dropped operand does not matter)
            const auto& ops = *n.operands;
            std::vector<Pmf> px;
            for (std::size_t i = 0; i < P; ++i) {
              const Pmf other = s.sign > 0 ? ops[1][i] : negate(ops[1][i]);
              auto post = condition_on_sum(ops[0][i], other, v[i]).posterior;
              px.push_back(post ? std::move(*post) : ops[0][i]);
            }
            // Y = s (z - X) = -s X + s z
            const std::int64_t a = -s.sign;
            auto c = Batch<std::int64_t>::make(P, [&](std::size_t i) { return s.sign * possible(i); });
            if (x) {
              for (std::size_t i = 0; i < P; ++i) x->marginal[i] = px[i];
              x->mchild.reset();
              if (y) {
                y->mchild.reset();
                tie(*x, *y, a, std::move(c));
              }
            } else if (y) {
              // X is gone (nothing could reach it): Y gets its own posterior, a X + c pushed through
              for (std::size_t i = 0; i < P; ++i) y->marginal[i] = affine_pmf(px[i], a, c[i], t);
              y->mchild.reset();
            }
          },
          [&](CountChild& c) {
            Node* rho = n.mparents[0];
            if (!rho) return;
            for (std::size_t i = 0; i < P; ++i) {
              if (v[i] < 0 || (c.family == CountChild::binomial && v[i] > c.trials[i]) ||
                  (c.family == CountChild::categorical && v[i] >= rho->continuous->dirichlet[i].alpha.size()))
                continue;  // an impossible value: the particle's weight is -inf, its parameters stay as they were
              switch (c.family) {
                case CountChild::binomial: rho->continuous->beta[i] = posterior_binomial(rho->continuous->beta[i], c.trials[i], v[i]); break;
                case CountChild::negative_binomial:
                  rho->continuous->beta[i] = posterior_negative_binomial(rho->continuous->beta[i], c.successes, v[i]);
                  break;
                case CountChild::poisson: rho->continuous->gamma[i] = posterior_poisson(rho->continuous->gamma[i], v[i]); break;
                case CountChild::categorical: rho->continuous->dirichlet[i] = posterior_categorical(rho->continuous->dirichlet[i], v[i]); break;
              }
            }
            rho->mchild.reset();
          }},
      n.kind);
  n.mparents = {};
}

/// The marginalized descendants of n along the M-path, nearest first.
std::vector<Node*> m_path_below(Node& n) {
  std::vector<Node*> path;
  for (Node* c = n.mchild.get(); c != nullptr; c = c->mchild.get()) path.push_back(c);
  return path;
}

/// Murray et al.'s prune: realize the M-path below n, deepest first, so that n becomes its end.
void prune(Node& n) {
  const auto path = m_path_below(n);
  std::vector<std::shared_ptr<Node>> keep;
  for (Node* c : path) keep.push_back(c->shared_from_this());
  for (auto it = path.rbegin(); it != path.rend(); ++it)
    if ((*it)->state == State::marginalized) sample(**it);
}

/// A marginalized parent about to get the new child `requester`: prune it, and realize it if it is tied to a node
/// other than the requester by an observed sum (a tied pair gets no new children; the requester itself may be
/// the partner, when pruning tied it: then it is no longer a new child and nothing more is needed).
void make_terminal(Node& n, const Node* requester) {
  prune(n);
  if (n.state == State::marginalized && n.discrete()) {
    const Node* partner = n.tied ? n.tied.get() : n.tied_to;
    if (partner != nullptr && partner != requester) sample(n);
  }
}

/// Before z = X + sY is marginalized: X and Y must be independent. If Y is an initialized direct child of X (or X
/// of Y), the pair is enumerated jointly (JointSum); otherwise every shared uninstantiated ancestor is realized.
void prepare_sum(Node& z) {
  auto* s = std::get_if<Sum>(&z.kind);
  if (!s) return;
  Node& x = *z.parents[0];
  Node& y = *z.parents[1];
  auto direct_child = [](Node& child, Node& parent) -> const ChildLaw* {
    auto* c = std::get_if<DiscreteChild>(&child.kind);
    return (c && child.state == State::initialized && parent.state != State::realized &&
            child.parents[0].get() == &parent)
               ? &c->law
               : nullptr;
  };
  if (const ChildLaw* law = direct_child(y, x)) {  // z = X + s Y, Y | X ~ law
    z.operand_y = z.parents[1];
    z.kind = JointSum{*law, +1, s->sign};
    z.parents[1].reset();
  } else if (const ChildLaw* law2 = direct_child(x, y)) {  // z = Y' + s X' with X' = y the parent, Y' = x the child
    z.operand_y = z.parents[0];
    z.kind = JointSum{*law2, s->sign, +1};
    z.parents[0] = z.parents[1];
    z.parents[1].reset();
  }
}

}  // namespace

void graft(Node& root) {
  // Depth-first, post-order, with an explicit stack: chains of any length graft in constant stack. Each entry is
  // (node, expanded, the child that asked for it).
  struct Entry {
    std::shared_ptr<Node> node;
    bool expanded;
    const Node* requester;
  };
  std::vector<Entry> stack{{root.shared_from_this(), false, nullptr}};
  while (!stack.empty()) {
    auto [v, expanded, requester] = stack.back();
    stack.pop_back();
    // a node may change state while its parents are grafted (pruning can realize or tie it): check every time
    if (v->state == State::realized) continue;
    if (v->state == State::marginalized) {
      if (requester == nullptr)
        prune(*v);
      else
        make_terminal(*v, requester);
      continue;
    }
    if (!expanded) {
      prepare_sum(*v);
      stack.push_back({v, true, requester});
      for (auto& p : v->parents)
        if (p) stack.push_back({p, false, v.get()});
      continue;
    }
    if (std::holds_alternative<Sum>(v->kind)) {
      // the operands are grafted; realize shared ancestors until they are independent
      while (Node* a = shared_ancestor(*v->parents[0], *v->parents[1])) {
        graft(*a);
        if (a->state == State::marginalized) a->discrete() ? sample(*a) : sample_continuous(*a);
        for (auto& p : v->parents) graft(*p);
        for (auto& p : v->parents)
          if (p->state == State::marginalized) make_terminal(*p, v.get());
      }
    }
    marginalize(*v);
  }
}

void realize(Node& n, const Batch<std::int64_t>& values) {
  const auto keep = n.shared_from_this();
  if (n.state == State::realized) return;
  if (Node* x = n.tied_to) {  // n = a X + c: realize X instead (a = +-1, so X is an integer)
    realize(*x, Batch<std::int64_t>::make(particles(n), [&](std::size_t i) { return n.tie_a * (values[i] - n.tie_c[i]); }));
    return;
  }
  condition_parents(n, values);
  n.state = State::realized;
  n.value = values;
  n.marginal.clear();
  n.operands.reset();
  if (auto y = std::move(n.tied)) {
    y->tied_to = nullptr;
    realize(*y, Batch<std::int64_t>::make(particles(n), [&](std::size_t i) { return y->tie_a * values[i] + y->tie_c[i]; }));
  }
}

void sample(Node& n) {
  Context& ctx = *n.context;
  realize(n, Batch<std::int64_t>::make(ctx.particles, [&](std::size_t i) { return tally::sample(n.marginal[i], ctx.streams[i]); }));
}

void sample_continuous(Node& n) {
  Context& ctx = *n.context;
  const auto& root = std::get<ContinuousRoot>(n.kind);
  prune(n);
  auto& c = *n.continuous;
  c.value = Batch<Eigen::VectorXd>::make(ctx.particles, [&](std::size_t i) -> Eigen::VectorXd {
    switch (root.family) {
      case ContinuousRoot::beta: return Eigen::VectorXd::Constant(1, runtime::sample(c.beta[i], ctx.streams[i]));
      case ContinuousRoot::gamma: return Eigen::VectorXd::Constant(1, runtime::sample(c.gamma[i], ctx.streams[i]));
      case ContinuousRoot::dirichlet: return runtime::sample(c.dirichlet[i], ctx.streams[i]);
    }
    return {};
  });
  n.state = State::realized;
  c.beta.clear();
  c.gamma.clear();
  c.dirichlet.clear();
}

namespace {
/// log P(n = v) for a count of a conjugate parent, in closed form (the parent integrated out or known).
double count_log_likelihood(const CountChild& c, const Node& rho, std::size_t i, std::int64_t v) {
  const bool known = rho.state == State::realized;
  const auto& s = *rho.continuous;
  switch (c.family) {
    case CountChild::binomial:
      return known ? log_pdf(Binomial(c.trials[i], s.value[i][0]), v) : log_marginal_binomial(s.beta[i], c.trials[i], v);
    case CountChild::negative_binomial:
      return known ? log_pdf(NegativeBinomial(c.successes, s.value[i][0]), v)
                   : log_marginal_negative_binomial(s.beta[i], c.successes, v);
    case CountChild::poisson:
      return known ? log_pdf(Poisson(s.value[i][0]), v) : log_marginal_poisson(s.gamma[i], v);
    case CountChild::categorical:
      return known ? log_pdf(Categorical(s.value[i]), v) : log_marginal_categorical(s.dirichlet[i], v);
  }
  return -std::numeric_limits<double>::infinity();  // unreachable
}
}  // namespace

std::vector<double> observe(Node& n, const Batch<std::int64_t>& values) {
  Context& ctx = *n.context;
  if (auto* c = std::get_if<CountChild>(&n.kind); c && n.state == State::initialized) {
    // An observed count of a conjugate parent: its evidence in closed form, then the conjugate update; the
    // count's own marginal table is never built (a heavy-tailed beta-negative-binomial would need millions of
    // entries to truncate).
    const auto keep = n.shared_from_this();
    Node& rho = *n.parents[0];
    graft(rho);  // prunes rho's M-path, so that its parameters include everything observed below it
    std::vector<double> loglik(ctx.particles);
    for (std::size_t i = 0; i < ctx.particles; ++i) {
      loglik[i] = count_log_likelihood(*c, rho, i, values[i]);
      ctx.log_weight[i] += loglik[i];
    }
    attach(rho, n, 0);
    n.state = State::marginalized;
    n.parents = {};
    realize(n, values);  // conditions rho (skipping impossible values) and detaches
    return loglik;
  }
  graft(n);
  std::vector<double> loglik(ctx.particles);
  for (std::size_t i = 0; i < ctx.particles; ++i) {
    loglik[i] = log_pdf(n.marginal[i], values[i]);
    ctx.log_weight[i] += loglik[i];
  }
  realize(n, values);
  return loglik;
}

}  // namespace tally::runtime::detail
