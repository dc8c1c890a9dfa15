// libFuzzer target: the distributions' algebra driven by raw bytes (pmfs, every family, sums, child laws,
// conditioning, sampling, quantiles), checking the properties of fuzz_common.hpp on every result.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz_common.hpp"
#include "tally/distributions.hpp"
#include "tally/gpu/convolve.hpp"

using namespace tally;
using fuzz::any_double;
using fuzz::any_integer;
using fuzz::any_probability;
using fuzz::check;
using fuzz::guarded;

namespace {

/// A pmf from raw bytes: a fuzzed lower end, up to 48 weights spread over many decades (zeros among them), a
/// fuzzed log scale and error bound.
Pmf raw_pmf(FuzzedDataProvider& in) {
  const std::int64_t lo = any_integer(in);
  const int n = in.ConsumeIntegralInRange<int>(1, 48);
  Eigen::VectorXd w(n);
  for (int i = 0; i < n; ++i) {
    const int kind = in.ConsumeIntegralInRange<int>(0, 9);
    w[i] = kind == 0 ? 0.0 : kind == 1 ? any_double(in) : std::ldexp(in.ConsumeProbability<double>() + 0.01,
                                                                         -in.ConsumeIntegralInRange<int>(0, 1100));
  }
  const double scale = in.ConsumeBool() ? 0.0 : any_double(in);
  const double bound = in.ConsumeBool() ? 0.0 : any_probability(in);
  return Pmf(lo, w, scale, bound);
}

template <class Family>
void exercise_family(FuzzedDataProvider& in, const Family& d, const Truncation& t, std::vector<Pmf>& stack) {
  const std::int64_t k = any_integer(in);
  const std::string name = typeid(Family).name();
  guarded("family pdf/log_pdf/cdf", [&] {
    fuzz::check_probability(pdf(d, k), (name + " pdf at " + std::to_string(k)).c_str());
    fuzz::check_log(log_pdf(d, k), (name + " log_pdf").c_str());
    fuzz::check_probability(cdf(d, k), (name + " cdf at " + std::to_string(k)).c_str());
  }, [] { return 1; });
  const double prob = any_probability(in);
  if (std::getenv("TALLY_FUZZ_TRACE")) {  // replaying a finding: the law (its parameters, where it has these)
    const auto [lo, hi] = support(d);
    std::fprintf(stderr, "fuzz: family %s on [%lld, %lld], k %lld, quantile at %.17g", name.c_str(),
                 static_cast<long long>(lo), static_cast<long long>(hi), static_cast<long long>(k), prob);
    if constexpr (requires { d.alpha(); d.beta(); d.trials(); })
      std::fprintf(stderr, ", n %lld alpha %.17g beta %.17g", static_cast<long long>(d.trials()), d.alpha(), d.beta());
    if constexpr (requires { d.successes(); d.success(); })
      std::fprintf(stderr, ", r %.17g p %.17g", d.successes(), d.success());
    std::fprintf(stderr, "\n");
  }
  guarded("family quantile", [&] {
    const std::int64_t q = quantile(d, prob);
    const auto [lo, hi] = support(d);
    fuzz::require(q >= lo && q <= hi, "a family's quantile is outside its support");
  }, [] { return 1; });
  guarded("family mean/variance", [&] {
    fuzz::require(!std::isnan(mean(d)) && !std::isnan(variance(d)), "a family's mean or variance is NaN");
  }, [] { return 1; });
  std::optional<Pmf> p;
  guarded("to_pmf(family)", [&] { p = to_pmf(d, t); }, [&] { return p ? p->size() : 1; });
  if (p) {
    check(*p);
    stack.push_back(*p);
  }
}

void push_family(FuzzedDataProvider& in, const Truncation& t, std::vector<Pmf>& stack) {
  // each constructor validates its parameters: a domain_error there is an accepted outcome
  guarded("family", [&] {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: exercise_family(in, Bernoulli(any_probability(in)), t, stack); break;
      case 1: exercise_family(in, Binomial(any_integer(in, 2000), any_probability(in)), t, stack); break;
      case 2: exercise_family(in, Poisson(any_double(in)), t, stack); break;
      case 3: exercise_family(in, Geometric(any_probability(in)), t, stack); break;
      case 4: exercise_family(in, NegativeBinomial(any_double(in), any_probability(in)), t, stack); break;
      case 5: {
        Eigen::VectorXd p(in.ConsumeIntegralInRange<int>(0, 8));
        for (auto& v : p) v = in.ConsumeBool() ? in.ConsumeProbability<double>() : any_double(in);
        exercise_family(in, Categorical(p), t, stack);
        break;
      }
      case 6: exercise_family(in, UniformInt(any_integer(in), any_integer(in)), t, stack); break;
      case 7: {
        const std::int64_t n = any_integer(in, 3000);
        exercise_family(in, Hypergeometric(n, any_integer(in, 3000), any_integer(in, 3000)), t, stack);
        break;
      }
      case 8: exercise_family(in, BetaBinomial(any_integer(in, 2000), any_double(in), any_double(in)), t, stack); break;
      default: exercise_family(in, Delta(any_integer(in)), t, stack); break;
    }
  }, [] { return 1; });
}

Eigen::MatrixXd transition(FuzzedDataProvider& in, Eigen::Index rows) {
  const Eigen::Index cols = in.ConsumeIntegralInRange<int>(1, 6);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = in.ConsumeIntegralInRange<int>(0, 9) == 0 ? 0.0 : in.ConsumeProbability<double>() + 1e-3;
    if (in.ConsumeIntegralInRange<int>(0, 15) != 0) m.row(i) /= m.row(i).sum();  // now and then not stochastic
  }
  return m;
}

void check_conditioned(const Conditioned& c) {
  fuzz::check_log(c.log_likelihood, "a conditioning's log-likelihood");
  fuzz::require(!std::isnan(c.log_likelihood_error) && c.log_likelihood_error >= 0.0,
                "a conditioning's likelihood error is NaN or negative");
  if (c.posterior) {
    check(*c.posterior);
    fuzz::require(std::abs(std::exp(c.posterior->log_mass()) - 1.0) <= 1e-9, "a posterior is not normalized");
  } else {
    fuzz::require(c.log_likelihood == -std::numeric_limits<double>::infinity(),
                  "no posterior but a finite log-likelihood");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const Truncation t = fuzz::any_truncation(in);
  std::vector<Pmf> stack;
  RandomStream rng(in.ConsumeIntegral<std::uint64_t>());
  for (int step = 0; step < 12 && in.remaining_bytes() > 0; ++step) {
    const int op = in.ConsumeIntegralInRange<int>(0, 15);
    if (op == 0 || stack.empty()) {
      guarded("raw pmf", [&] { stack.push_back(raw_pmf(in)); }, [] { return 48; });
      if (!stack.empty()) check(stack.back());
      continue;
    }
    if (op == 1) {
      push_family(in, t, stack);
      continue;
    }
    const Pmf x = stack[in.ConsumeIntegralInRange<std::size_t>(0, stack.size() - 1)];
    const Pmf y = stack[in.ConsumeIntegralInRange<std::size_t>(0, stack.size() - 1)];
    std::optional<Pmf> r;
    // the bound on a call's time grows with its result and, for the quadratic operations (a direct convolution,
    // Horner's thinning, a skew diagonal), with the product of the operands' sizes / 256
    const auto result_size = [&] {
      const double product = static_cast<double>(x.size()) * static_cast<double>(y.size()) / 256.0;
      return std::max(product, static_cast<double>(r ? r->size() : x.size() + y.size()));
    };
    // A direct convolution of more than 2^30 multiply-adds takes minutes under the sanitizers: libFuzzer's per-input
    // time-out would report it although the library does what it documents (a sum on the CPU is refused at once
    // only past 2^36: tally::gpu::cpu_max_work). Those inputs skip the sum; past 2^36 the refusal is exercised.
    const double convolution_work = static_cast<double>(x.size()) * static_cast<double>(y.size());
    if ((op == 2 || op == 3) && convolution_work > 0x1p30 && convolution_work <= gpu::cpu_max_work) continue;
    switch (op) {
      case 2: guarded("sum", [&] { r = sum(x, y); }, result_size); break;
      case 3: guarded("difference", [&] { r = difference(x, y); }, result_size); break;
      case 4: guarded("negate/shift", [&] { r = shift(negate(x), any_integer(in)); }, result_size); break;
      case 5: {
        const std::int64_t a = any_integer(in, 6), c = any_integer(in);
        guarded("affine", [&] {
          const SparsePmf s = affine(x, a, c);
          check(s);
          const SparsePmf s2 = sum(s, to_sparse(y), t);
          check(s2);
          fuzz::check_probability(cdf(s2, any_integer(in)), "a sparse cdf");
          r = to_dense(s, t);
        }, result_size);
        break;
      }
      case 6: {
        const double q = any_probability(in);
        guarded("thinning", [&] { r = marginal(x, Thinning(q), t); }, result_size);
        break;
      }
      case 7: {
        const double a = any_double(in);
        guarded("scaled Poisson", [&] { r = marginal(x, ScaledPoisson(a), t); }, result_size);
        break;
      }
      case 8: {
        const Eigen::Index states = in.ConsumeIntegralInRange<int>(1, 50);
        const Eigen::MatrixXd m = transition(in, states);
        guarded("Markov step", [&] { r = marginal(x, MarkovStep(m)); }, result_size);
        break;
      }
      case 9: {
        Eigen::VectorXd rates(in.ConsumeIntegralInRange<int>(1, 50));
        for (auto& v : rates) v = in.ConsumeBool() ? in.ConsumeFloatingPointInRange<double>(0.0, 50.0) : any_double(in);
        guarded("indexed Poisson", [&] { r = marginal(x, IndexedPoisson(rates), t); }, result_size);
        break;
      }
      case 10: {
        std::int64_t z = any_integer(in);
        if (in.ConsumeBool() && __builtin_add_overflow(x.lo(), y.lo(), &z)) z = 0;  // often a point of the support
        guarded("condition_on_sum", [&] {
          const Conditioned c = in.ConsumeBool() ? condition_on_sum(x, y, z) : condition_on_difference(x, y, z);
          check_conditioned(c);
        }, result_size);
        break;
      }
      case 11: {
        const std::int64_t a = any_integer(in, 6), c = any_integer(in), v = any_integer(in);
        guarded("condition_affine", [&] { check_conditioned(condition_affine(x, a, c, v)); }, result_size);
        break;
      }
      case 12: {
        const std::int64_t v = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int64_t>(0, 200) : any_integer(in);
        const int kind = in.ConsumeIntegralInRange<int>(0, 3);
        const double param = kind == 0 ? any_probability(in) : any_double(in);
        Eigen::VectorXd rates(in.ConsumeIntegralInRange<int>(1, 20));
        for (auto& e : rates) e = in.ConsumeFloatingPointInRange<double>(0.0, 30.0);
        const Eigen::MatrixXd m = kind == 2 ? transition(in, in.ConsumeIntegralInRange<int>(1, 50)) : Eigen::MatrixXd();
        guarded("condition on a child", [&] {
          switch (kind) {
            case 0: check_conditioned(condition(x, Thinning(param), v)); break;
            case 1: check_conditioned(condition(x, ScaledPoisson(param), v)); break;
            case 2: check_conditioned(condition(x, MarkovStep(m), v)); break;
            default: check_conditioned(condition(x, IndexedPoisson(rates), v)); break;
          }
        }, result_size);
        break;
      }
      case 13: {
        guarded("sample", [&] {
          const std::int64_t s = sample(x, rng);
          fuzz::require(s >= x.lo() && s <= x.hi() && pdf(x.normalized(), s) > 0.0,
                        "a sample is outside the support or has zero mass");
          const double u = in.ConsumeProbability<double>();
          const std::int64_t v = inverse_cdf(x, u);
          fuzz::require(v >= x.lo() && v <= x.hi(), "inverse_cdf is outside the support");
        }, result_size);
        break;
      }
      default: {
        const double prob = any_probability(in);
        const std::int64_t k = any_integer(in);
        guarded("quantile/cdf/pdf", [&] {
          fuzz::check_probability(cdf(x, k), "a pmf's cdf");
          fuzz::check_probability(pdf(x.normalized(), k), "a normalized pmf's pdf");
          fuzz::check_log(log_pdf(x, k), "a pmf's log_pdf");
          const std::int64_t q = quantile(x, prob);
          fuzz::require(q >= x.lo() && q <= x.hi(), "a pmf's quantile is outside its support");
          fuzz::require(cdf(x, q) >= prob * (1.0 - 1e-12), "cdf(quantile(p)) < p");
        }, result_size);
        break;
      }
    }
    if (r) {
      check(*r);
      if (stack.size() < 6) stack.push_back(std::move(*r));
    }
  }
  return 0;
}
