// Binomial(X, rho) with a random count X and a Beta rho: the observation conditions X exactly under the
// beta-binomial likelihood, and rho's mixture posterior waits for X's value until rho is needed.
#include <algorithm>
#include <optional>
#include <vector>

#include "node.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {

bool observe_beta_thinning(Node& n, const Values& v, LogLikelihood& ll) {
  Context& ctx = *n.context;
  const auto keep = n.shared_from_this();
  const std::shared_ptr<Node> x = n.parents[0], rho = n.parents[1];
  if (ctx.device()) return false;  // the per-particle beta-binomial conditioning runs on host laws only
  graft(*rho);                     // a mixture it waited on is resolved first; its M-path pruned
  graft(*x);
  if (x->state != State::marginalized || x->group || x->tied_to || x->tied || x->mchild) return false;
  const bool known = rho->state == State::realized;  // then Y | X = x ~ Binomial(x, rho_i): a plain thinning
  const auto ancestors = uninstantiated_ancestors(*x);  // X must not depend on rho (a count of rho, say)
  if (!known && std::find(ancestors.begin(), ancestors.end(), rho.get()) != ancestors.end()) return false;
  auto& s = *rho->continuous;
  const Laws& laws = law(*x);
  // a, b: rho's Beta parameters; known: a = rho_i and b unused
  const std::vector<double> a = known ? s.scalar.to_host() : s.params.a.to_host();
  const std::vector<double> b = known ? a : s.params.b.to_host();
  const std::vector<std::int64_t> y = to_vector(v);
  // computed aside (a count whose support starts below 0 is refused here, before anything changes)
  std::vector<double> add(ctx.particles);
  double error = ll.error;
  std::size_t last = ctx.particles;  // a particle whose inputs (one shared law, a, b, y) repeat gets its result
  auto same_inputs = [&](std::size_t i, std::size_t j) {
    return &laws.host[i] == &laws.host[j] && a[i] == a[j] && b[i] == b[j] && y[i] == y[j];
  };
  std::optional<Pmf> last_posterior;
  auto posterior = Batch<Pmf>::make(ctx.particles, [&](std::size_t i) {
    if (last == ctx.particles || !same_inputs(i, last)) {
      Conditioned c = known ? condition(laws.host[i], Thinning(a[i]), y[i])
                            : condition_on_beta_thinning(laws.host[i], a[i], b[i], y[i]);
      add[i] = c.log_likelihood;
      error = std::max(error, c.log_likelihood_error);
      last_posterior = c.posterior ? std::move(*c.posterior) : laws.host[i];  // impossible: the weight says so
      last = i;
    }
    add[i] = add[last];
    return *last_posterior;
  });
  Laws conditioned = place(ctx, std::move(posterior));
  add_host(ll, add);
  ll.error = error;
  x->marginal = std::move(conditioned);
  x->tails.reset();  // the dropped tails were those of the law before the observation
  n.parents = {};
  n.value = v;
  n.state = State::realized;
  if (known) return true;  // rho known: nothing waits
  s.mixture_count = x;  // rho | X = x, Y = y ~ Beta(a + y, b + x - y): applied by resolve_mixture
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
  s.mixture_count.reset();
  s.mixture_observed.reset();
}

}  // namespace tally::runtime::detail
