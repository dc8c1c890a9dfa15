// Binomial(X, rho) with a random count X and a Beta rho: the observation conditions X exactly under the
// beta-binomial likelihood, and rho's mixture posterior waits for X's value until rho is needed.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "distinct.hpp"
#include "node.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {

namespace {

/// The host graph's observation: each distinct input (a law, a, b, y: distinct.hpp) conditioned once, in particle
/// order, by tally's distributions (a count whose support starts below 0 is refused here, before anything changes).
Laws condition_host(Context& ctx, const Laws& laws, const Node::ContinuousState& s, bool known, const Values& v,
                    LogLikelihood& ll) {
  const auto law_at = [&](std::size_t i) -> const Pmf& { return laws.host[i]; };
  // a, b: rho's Beta parameters; known: a = rho_i and b unused
  const std::vector<double> a = known ? s.scalar.to_host() : s.params.a.to_host();
  const std::vector<double> b = known ? a : s.params.b.to_host();
  const std::vector<std::int64_t> y = to_vector(v);
  const auto first = first_copies(
      ctx.particles,
      [&](std::size_t i) {
        return mix(mix(mix(law_hash(law_at(i)), std::bit_cast<std::uint64_t>(a[i])), std::bit_cast<std::uint64_t>(b[i])),
                   static_cast<std::uint64_t>(y[i]));
      },
      [&](std::size_t i, std::size_t j) {
        return std::bit_cast<std::uint64_t>(a[i]) == std::bit_cast<std::uint64_t>(a[j]) &&
               std::bit_cast<std::uint64_t>(b[i]) == std::bit_cast<std::uint64_t>(b[j]) && y[i] == y[j] &&
               (&law_at(i) == &law_at(j) || same_law(law_at(i), law_at(j)));
      });
  auto results = compute_once(first, [&](std::size_t i) {
    return known ? condition(law_at(i), Thinning(a[i]), y[i]) : condition_on_beta_thinning(law_at(i), a[i], b[i], y[i]);
  });
  std::vector<double> add(ctx.particles);
  double error = ll.error.value();
  for (std::size_t i = 0; i < ctx.particles; ++i) {
    add[i] = results[i].log_likelihood;
    error = std::max(error, results[i].log_likelihood_error);
  }
  auto posterior = Batch<Pmf>::make(ctx.particles, [&](std::size_t i) {
    const Conditioned& c = results[i];
    return c.posterior ? *c.posterior : law_at(i);  // impossible: the weight says so
  });
  add_host(ll, add);
  ll.error = error;
  return place(ctx, std::move(posterior));
}

}  // namespace

bool observe_beta_thinning(Node& n, const Values& v, LogLikelihood& ll) {
  Context& ctx = *n.context;
  const auto keep = n.shared_from_this();
  const std::shared_ptr<Node> x = n.parents[0], rho = n.parents[1];
  graft(*rho);  // a mixture it waited on is resolved first; its M-path pruned
  graft(*x);
  if (x->state != State::marginalized || x->group || x->tied_to || x->tied || x->mchild) return false;
  const bool known = rho->state == State::realized;  // then Y | X = x ~ Binomial(x, rho_i): a plain thinning
  const auto ancestors = uninstantiated_ancestors(*x);  // X must not depend on rho (a count of rho, say)
  if (!known && std::find(ancestors.begin(), ancestors.end(), rho.get()) != ancestors.end()) return false;
  auto& s = *rho->continuous;
  Laws conditioned = ctx.device() ? condition_on_beta_thinning(ctx, law(*x), known ? s.scalar : s.params.a,
                                                               known ? nullptr : &s.params.b, v, ll)
                                  : condition_host(ctx, law(*x), s, known, v, ll);
  x->marginal = std::move(conditioned);
  x->absorbed = true;
  x->tails.reset();  // the dropped tails were those of the law before the observation
  n.parents = {};
  n.value = v;
  n.state = State::realized;
  if (known) return true;  // rho known: nothing waits
  s.mixture_count = x;  // rho | X = x, Y = y ~ Beta(a + y, b + x - y): applied by resolve_mixture
  x->awaited_by_beta = true;
  s.mixture_observed = n.shared_from_this();
  return true;
}

void make_count_child(Node& n) {
  const auto keep = n.shared_from_this();
  Node& x = *n.parents[0];
  if (x.state != State::realized) {
    graft(x);
    if (x.state == State::marginalized) {
      fallback(x, Fallback::parent_realized);
      sample(x);
    }
  }
  if (!n.context->device())
    for (std::int64_t k : to_vector(x.value))
      tally::detail::check_count(k, "tally::runtime::Graph::binomial", "number of trials n");
  n.kind = CountChild{CountChild::binomial, x.value, 0.0, 1.0};
  n.parents[0] = std::move(n.parents[1]);
  n.parents[1].reset();
}

void resolve_mixture(Node& rho) {
  if (!rho.continuous || !rho.continuous->mixture_count) return;
  auto& s = *rho.continuous;
  const std::shared_ptr<Node> x = s.mixture_count, y = s.mixture_observed;
  if (x->state != State::realized) {
    fallback(*x, Fallback::mixture_resolved);  // strict mode refuses here, before anything is drawn
    graft(*x);                                 // its marginalized children drawn first (pruned)
    if (x->state == State::marginalized) sample(*x);
  }
  // the conjugate update of Binomial(x, rho) by y (particles where y > x, impossible, keep their parameters)
  conjugate_update(*rho.context, CountChild{CountChild::binomial, x->value, 0.0, 1.0}, rho, y->value);
  x->awaited_by_beta = false;
  s.mixture_count.reset();
  s.mixture_observed.reset();
}

}  // namespace tally::runtime::detail
