// libFuzzer target: random programs for the runtime's Graph decoded from bytes, run on P = 1 and P = 8 side by
// side, checking log-weights, laws, exception types, particle agreement and that every node dies with its handles.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_common.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using namespace tally::runtime;
using fuzz::any_integer;
using fuzz::any_probability;

namespace {

/// One program run on a graph: the handles it holds (some dropped on purpose), and whether its particles may
/// have diverged (a draw, a resampling), after which P = 8's particles are no longer copies of particle 0.
struct Run {
  Run(std::size_t particles, std::uint64_t seed, const Truncation& t) : graph(particles, seed, Device::cpu, t) {}
  Graph graph;
  std::vector<Variable> vars;
  std::vector<Continuous> params;
};

/// Runs one operation on a run; the operation's outcome (log-likelihoods, laws) goes to `out` for comparison.
struct Outcome {
  bool threw = false;
  std::vector<double> numbers;  // particle 0's log-likelihood, law, value
  bool exact = true;            // whether the outcome is a function of the program alone (no draw involved)
  double truncation_error = 0;  // an observation's bound on its likelihood's relative error (Exactness)
  std::string error;            // what it threw
  // what the runtime sampled on its own (observation's report, or pending): why, and which variable (two runs that
  // fell back alike may still have drawn different variables: fuzz/corpus/engine/regress-p1p8-drawn-fc6083acad)
  std::vector<std::pair<Fallback, std::string>> sampled;
};

/// Calls f under the fuzz policy, allowing also the runtime's documented errors (usage_error for misuse,
/// inexact_error in strict mode).
template <class F>
bool run_op(const char* what, F&& f, Outcome& out, std::size_t size) {
  bool usage = false;
  const bool ok = fuzz::guarded(what, [&] {
    try {
      f();
    } catch (const usage_error& e) {
      usage = true;
      out.error = e.what();
    } catch (const inexact_error& e) {
      usage = true;
      out.error = e.what();
    }
  }, [&] { return size; }, &out.error);
  out.threw = !ok || usage;
  return ok && !usage;
}

const Variable& pick(FuzzedDataProvider& in, const std::vector<Variable>& v, const Variable& none) {
  if (v.empty() || in.ConsumeIntegralInRange<int>(0, 15) == 0) return none;  // an empty handle, now and then
  return v[in.ConsumeIntegralInRange<std::size_t>(0, v.size() - 1)];
}

void check_laws(const std::vector<Pmf>& laws, std::size_t particles) {
  fuzz::require(laws.size() == particles, "marginal() did not give one law per particle");
  for (const Pmf& l : laws) {
    fuzz::check(l);
    fuzz::require(std::abs(std::exp(l.log_mass()) - 1.0) <= 1e-9, "a marginal is not normalized within 1e-9");
  }
}

/// Replaying a finding (TALLY_FUZZ_TRACE=1): the operation's arguments, for the run of one particle.
bool tracing(std::size_t particles) { return particles == 1 && std::getenv("TALLY_FUZZ_TRACE") != nullptr; }
std::string name_of(const Variable& x, const std::vector<Variable>& vars) {
  if (!vars.empty() && &x >= vars.data() && &x < vars.data() + vars.size())
    return "v" + std::to_string(&x - vars.data());
  return "(empty or foreign)";
}

/// Applies operation `op` (with its parameters already decoded into `in`'s copy) to one run.
Outcome apply(int op, FuzzedDataProvider& in, Run& r, Graph& other, std::size_t particles) {
  Outcome out;
  const Variable none;
  Graph& g = r.graph;
  // handles of another graph, now and then
  const bool foreign = in.ConsumeIntegralInRange<int>(0, 20) == 0;
  Variable stranger;
  if (foreign) stranger = other.assume(Bernoulli(0.5));
  const auto var = [&]() -> const Variable& { return foreign ? stranger : pick(in, r.vars, none); };
  const std::size_t size = 64 * particles;
  switch (op) {
    case 0: {  // a prior
      const int family = in.ConsumeIntegralInRange<int>(0, 4);
      const double p = any_probability(in);
      const std::int64_t n = in.ConsumeIntegralInRange<std::int64_t>(-2, 40);
      const double rate = in.ConsumeFloatingPointInRange<double>(-1.0, 30.0);
      if (tracing(particles))
        std::fprintf(stderr, "  prior family %d p %.17g n %lld rate %.17g -> v%zu\n", family, p, static_cast<long long>(n),
                     rate, r.vars.size());
      run_op("assume(prior)", [&] {
        switch (family) {
          case 0: r.vars.push_back(g.assume(Binomial(n, p))); break;
          case 1: r.vars.push_back(g.assume(Poisson(rate))); break;
          case 2: r.vars.push_back(g.assume(Bernoulli(p))); break;
          case 3: r.vars.push_back(g.assume(UniformInt(0, n))); break;
          default: r.vars.push_back(g.constant(n)); break;
        }
      }, out, size);
      break;
    }
    case 1: {  // a child
      const Variable& x = var();
      const int kind = in.ConsumeIntegralInRange<int>(0, 3);
      const double q = any_probability(in);
      const double a = in.ConsumeFloatingPointInRange<double>(-0.5, 4.0);
      const int states = in.ConsumeIntegralInRange<int>(1, 6);
      Eigen::VectorXd rates(states);
      for (auto& e : rates) e = in.ConsumeFloatingPointInRange<double>(0.0, 10.0);
      Eigen::MatrixXd t(states, states);
      for (Eigen::Index i = 0; i < states; ++i) {
        for (Eigen::Index j = 0; j < states; ++j) t(i, j) = in.ConsumeProbability<double>() + 1e-3;
        t.row(i) /= t.row(i).sum();
      }
      if (tracing(particles))
        std::fprintf(stderr, "  child of %s: kind %d q %.17g a %.17g states %d -> v%zu\n", name_of(x, r.vars).c_str(), kind, q,
                     a, states, r.vars.size());
      run_op("assume(child)", [&] {
        switch (kind) {
          case 0: r.vars.push_back(g.assume(x, Thinning(q))); break;
          case 1: r.vars.push_back(g.assume(x, ScaledPoisson(a))); break;
          case 2: r.vars.push_back(g.assume(x, IndexedPoisson(rates))); break;
          default: r.vars.push_back(g.assume(x, MarkovStep(t))); break;
        }
      }, out, size);
      break;
    }
    case 2: {  // add, subtract, affine
      const Variable& x = var();
      const Variable& y = pick(in, r.vars, none);
      const int kind = in.ConsumeIntegralInRange<int>(0, 2);
      const std::int64_t a = in.ConsumeIntegralInRange<std::int64_t>(-3, 3), c = in.ConsumeIntegralInRange<std::int64_t>(-5, 5);
      if (tracing(particles))
        std::fprintf(stderr, "  %s of %s, %s (a %lld c %lld) -> v%zu\n", kind == 0 ? "add" : kind == 1 ? "subtract" : "affine",
                     name_of(x, r.vars).c_str(), name_of(y, r.vars).c_str(), static_cast<long long>(a),
                     static_cast<long long>(c), r.vars.size());
      run_op("add/subtract/affine", [&] {
        r.vars.push_back(kind == 0 ? g.add(x, y) : kind == 1 ? g.subtract(x, y) : g.affine(x, a, c));
      }, out, size);
      break;
    }
    case 3: {  // observe
      const Variable& x = var();
      const std::int64_t v = in.ConsumeIntegralInRange<std::int64_t>(-3, 60);
      if (tracing(particles)) std::fprintf(stderr, "  observe %s at %lld\n", name_of(x, r.vars).c_str(), static_cast<long long>(v));
      run_op("observe", [&] {
        const Observation o = g.observe(x, v);
        fuzz::require(o.size() == particles, "an observation has the wrong number of particles");
        for (double l : o.log_likelihoods()) fuzz::check_log(l, "a log-likelihood");
        out.numbers.push_back(o[0]);
        out.exact = o.exactness().exact();
        out.truncation_error = o.exactness().truncation_error;
        for (const auto& e : o.exactness().sampled) out.sampled.emplace_back(e.reason, e.variable);
      }, out, size);
      break;
    }
    case 4: {  // value
      const Variable& x = var();
      if (tracing(particles)) std::fprintf(stderr, "  value of %s\n", name_of(x, r.vars).c_str());
      run_op("value", [&] {
        const auto v = g.value(x);
        fuzz::require(v.size() == particles, "value() has the wrong number of particles");
        out.numbers.push_back(static_cast<double>(v[0]));
      }, out, size);
      out.exact = false;
      break;
    }
    case 5: {  // marginal
      const Variable& x = var();
      if (tracing(particles)) std::fprintf(stderr, "  marginal of %s\n", name_of(x, r.vars).c_str());
      run_op("marginal", [&] {
        const auto laws = g.marginal(x);
        check_laws(laws, particles);
        // the mean and two central quantiles, not the support's ends: two exact paths (a joint law in P = 1, the
        // ordinary enumeration in P = 8 when another particle's joint table is past max_size) may cut their tails
        // below the tolerance at other points (fuzz/corpus/engine/regress-p1p8-support-f05a84ca7a)
        out.numbers.push_back(mean(laws[0]));
        out.numbers.push_back(static_cast<double>(quantile(laws[0], 1e-3)));
        out.numbers.push_back(static_cast<double>(quantile(laws[0], 1 - 1e-3)));
      }, out, size);
      // marginal(x) prunes: a marginalized child of x is drawn first (Murray et al.), a draw no Exactness reports
      out.exact = false;
      break;
    }
    case 6: {  // conjugate parents and their counts
      const int kind = in.ConsumeIntegralInRange<int>(0, 3);
      const double alpha = in.ConsumeFloatingPointInRange<double>(-0.5, 5.0);
      const double beta = in.ConsumeFloatingPointInRange<double>(-0.5, 5.0);
      const std::int64_t n = in.ConsumeIntegralInRange<std::int64_t>(-1, 30);
      if (tracing(particles))
        std::fprintf(stderr, "  conjugate kind %d alpha %.17g beta %.17g n %lld -> v%zu\n", kind, alpha, beta,
                     static_cast<long long>(n), r.vars.size());
      run_op("conjugate", [&] {
        switch (kind) {
          case 0: {
            const Continuous rho = g.assume(Beta(alpha, beta));
            r.params.push_back(rho);
            r.vars.push_back(g.binomial(n, rho));
            break;
          }
          case 1: {
            const Continuous lambda = g.assume(Gamma(alpha, beta));
            r.params.push_back(lambda);
            r.vars.push_back(g.poisson(lambda, beta));
            break;
          }
          case 2: {
            const Continuous rho = g.assume(Beta(alpha, beta));
            r.params.push_back(rho);
            r.vars.push_back(g.negative_binomial(alpha, rho));
            break;
          }
          default: {
            Eigen::VectorXd al(3);
            al << alpha, beta, 1.0;
            const Continuous pi = g.assume(Dirichlet(al));
            r.params.push_back(pi);
            r.vars.push_back(g.categorical(pi));
            break;
          }
        }
      }, out, size);
      break;
    }
    case 7: {  // drop handles
      if (!r.vars.empty()) {
        const std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, r.vars.size() - 1);
        if (tracing(particles)) std::fprintf(stderr, "  drop v%zu (the handles after it move down by one)\n", i);
        r.vars.erase(r.vars.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (!r.params.empty() && in.ConsumeBool()) {
        if (tracing(particles)) std::fprintf(stderr, "  drop the last conjugate parameter's handle\n");
        r.params.pop_back();
      }
      break;
    }
    case 8: {  // resampling
      run_op("resample", [&] {
        const auto res = g.resample_by_weight(in.ConsumeBool() ? 1.0 : 0.5);
        fuzz::require(!std::isnan(res.log_mean_weight), "a resampling's log mean weight is NaN");
      }, out, size);
      out.exact = false;
      break;
    }
    case 9: {  // strict mode
      g.strict(in.ConsumeBool());
      break;
    }
    case 10: {  // a conjugate parameter's value
      if (r.params.empty()) break;
      const Continuous& c = r.params[in.ConsumeIntegralInRange<std::size_t>(0, r.params.size() - 1)];
      run_op("value(Continuous)", [&] {
        for (const auto& v : g.value(c))
          for (double e : v) fuzz::require(std::isfinite(e), "a conjugate parameter's value is not finite");
      }, out, size);
      out.exact = false;
      break;
    }
    default: {  // observe twice: the same variable again, or a variable against a variable
      const Variable& x = var();
      const Variable& y = pick(in, r.vars, none);
      if (tracing(particles))
        std::fprintf(stderr, "  observe %s at %s\n", name_of(x, r.vars).c_str(), name_of(y, r.vars).c_str());
      run_op("observe(x, y)", [&] {
        const Observation o = g.observe(x, y);
        for (double l : o.log_likelihoods()) fuzz::check_log(l, "a log-likelihood");
      }, out, size);
      out.exact = false;
      break;
    }
  }
  for (double l : g.log_weights()) fuzz::check_log(l, "a log-weight");
  for (const auto& e : g.pending_samplings()) out.sampled.emplace_back(e.reason, e.variable);
  return out;
}

bool close(double a, double b) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b)) return false;
  return std::abs(a - b) <= 1e-9 * (1.0 + std::abs(a) + std::abs(b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::int64_t live_before = Graph::live_nodes();
  {
    FuzzedDataProvider in(data, size);
    Truncation t;
    // small enough that an allowed call of 8 particles stays within the slow-call bound in this instrumented
    // build (a scaled Poisson marginal at max_work 2^22 took 7 s)
    t.max_size = std::int64_t{1} << 13;
    t.max_work = std::int64_t{1} << 18;
    const std::uint64_t seed = in.ConsumeIntegral<std::uint64_t>();
    if (std::getenv("TALLY_FUZZ_TRACE")) std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));
    Graph other(1, seed, Device::cpu, t);
    // for odd seeds P = 8 computes its joint operations as batches (the CPU reference loops of gpu::JointLaws, what
    // a CUDA graph runs on the device where its particles' tables differ), P = 1 one table at a time on the host:
    // the comparisons below then check the batch forms against the host's
    Truncation t8 = t;
    if (seed & 1) t8.joint_batches = Truncation::JointBatches::batched;
    Run one(1, seed, t), eight(8, seed, t8);
    bool diverged = false;  // once a draw or resampling happened, P = 8's particles are no longer all alike
    bool same = true;       // while P = 1 and P = 8 ran the same operations the same way
    for (int step = 0; step < 24 && in.remaining_bytes() > 0; ++step) {
      const int op = in.ConsumeIntegralInRange<int>(0, 11);
      // both runs decode the same parameters: each gets a copy of the provider at this point
      const std::size_t take = std::min<std::size_t>(in.remaining_bytes(), 64);
      const std::vector<std::uint8_t> params = in.ConsumeBytes<std::uint8_t>(take);
      FuzzedDataProvider in_one(params.data(), params.size()), in_eight(params.data(), params.size());
      const Outcome a = apply(op, in_one, one, other, 1);
      const Outcome b = apply(op, in_eight, eight, other, 8);
      if (!a.exact || !b.exact) diverged = true;
      if (std::getenv("TALLY_FUZZ_TRACE"))  // replaying a finding: the program, one operation a line
        std::fprintf(stderr, "step %d: op %d threw %d/%d exact %d/%d sampled %zu/%zu P = 1: '%s' P = 8: '%s'\n", step, op,
                     a.threw, b.threw, a.exact, b.exact, a.sampled.size(), b.sampled.size(), a.error.c_str(),
                     b.error.c_str());
      // once particles differ, another particle of P = 8 may need a law too large for max_size where particle 0
      // does not: the runs then took different paths and are compared no more. So too when both threw, but
      // different errors: the operations stopped at different points, and the basic guarantee keeps the work done
      // before each point (fuzz/corpus/engine/regress-p1p8-errors-163e323006: observe(v1, v0 + v2) stopped in P = 8
      // at another particle's NegativeBinomial past max_size, in P = 1 later, at particle 0's IndexedPoisson)
      if (same && diverged && (a.threw != b.threw || a.error != b.error)) same = false;
      // the runtime's fallbacks are decisions about the whole population (a joint law past max_size in particle 5
      // of P = 8 draws the coupled variables of every particle: fuzz/corpus/engine/regress-p1p8-joint-b330d4eb07):
      // once the two runs report different samplings, particle 0 took different paths in them
      if (same && a.sampled != b.sampled) same = false;
      if (same) {
        // particle 0 draws the same uniforms in both runs, so the two agree on it until a resampling mixes
        // particles (after which P = 8 may copy another particle into slot 0)
        if (a.threw != b.threw)
          fuzz::violated("P = 1 and P = 8 disagree on whether operation " + std::to_string(op) +
                         " throws: P = 1: '" + a.error + "', P = 8: '" + b.error + "'");
        if (a.numbers.size() != b.numbers.size()) fuzz::violated("P = 1 and P = 8 return different outcomes");
        // two runs may truncate particle 0's unbounded laws at other points (P = 8 sizes a batch's support by
        // all its particles): their log-likelihoods may then differ within the bounds they report, log(1 / (1 -
        // e)) each (fuzz/corpus/engine/regress-p1p8-truncation-8ab88f0ef3: an observation in a prior's far tail,
        // bounds 0.0018 and 0.36, a difference of 1.4e-5)
        const auto slack = [](double e) { return e >= 1.0 ? std::numeric_limits<double>::infinity() : -std::log1p(-e); };
        const double allowed = slack(a.truncation_error) + slack(b.truncation_error);
        for (std::size_t i = 0; i < a.numbers.size(); ++i)
          if (!close(a.numbers[i], b.numbers[i]) && !(std::abs(a.numbers[i] - b.numbers[i]) <= allowed))
            fuzz::violated("P = 1 and P = 8 disagree on particle 0: " + std::to_string(a.numbers[i]) + " vs " +
                           std::to_string(b.numbers[i]));
        if (op == 8) same = false;
        // an impossible observation leaves particle 0 with weight 0: what it holds afterwards is unspecified (a
        // batch of one whose every particle is outside the support stops at once; in a batch of eight the others
        // go on, and particle 0 keeps a placeholder law), so it is compared no more
        // (fuzz/corpus/engine/regress-p1p8-impossible-06ba6f2197)
        constexpr double dead = -std::numeric_limits<double>::infinity();
        if (one.graph.log_weights()[0] == dead || eight.graph.log_weights()[0] == dead) same = false;
      }
      if (!diverged) {
        const auto w = eight.graph.log_weights();
        for (double l : w)
          if (!close(l, w[0]))
            fuzz::violated("identical particles of P = 8 got different log-weights after operation " +
                           std::to_string(op) + " (step " + std::to_string(step) + ")");
      }
    }
  }
  if (Graph::live_nodes() != live_before) fuzz::violated("live nodes did not return to their start");
  return 0;
}
