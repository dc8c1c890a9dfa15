// Random small programs over counts, run on a Graph in strict mode and compared with a 50-digit enumeration of their
// joint law: the log-likelihood of every observation, the marginals asked for, the possibility of every draw.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/enumerate.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::test::programs {

/// One variable of a random program: how it is made from earlier ones (parents are indices of earlier variables).
struct Spec {
  enum Kind {
    bernoulli,
    binomial,
    uniform,
    categorical,
    poisson,
    thinning,
    markov,
    affine,
    add,
    subtract,
    selected_thinning,  // Binomial(x_a, w[x_b]): a thinning whose keep probability the state x_b selects
    emission,           // Poisson(p x_{rates[x_b]}): a rate among several counts that the state x_b selects
    poisson_child,      // Poisson(p x_a): a scaled Poisson child of a count
    indexed_child,      // Poisson(w[x_a]): a rate per state (in a program of groups, group g's own: group_t[g])
    geometric           // Geometric(p) root: failures before the first success
  } kind;
  std::size_t a = 0, b = 0;       // parents
  std::vector<std::size_t> rates;  // an emission's rate parents, one a state
  double p = 0.5;                 // a probability or a rate
  std::vector<double> group_p;    // in a program of groups: group g's own p (roots of one parameter, thinnings)
  std::int64_t n = 0, c = 0;      // trials, lower end; affine's a and c (n, c)
  Eigen::VectorXd w;              // categorical weights
  Eigen::MatrixXd t;              // Markov transition
  std::vector<Eigen::MatrixXd> group_t;  // in a program of groups: group g's own transition
  std::int64_t lo = 0, hi = 0;    // the variable's structural range
};

/// Something the engine does after a variable is made.
struct Step {
  enum Kind { make, observe, marginal, value, drop } kind;
  std::size_t var = 0;
  std::int64_t v = 0;  // the observed value
};

struct Program {
  std::vector<Spec> vars;
  std::vector<Step> steps;
  std::string describe() const;
};

/// Poisson rates stay small and their laws are enumerated up to here (the mass above is below 1e-30).
inline constexpr std::int64_t poisson_top = 40;

inline std::string Program::describe() const {
  static const char* names[] = {"Bernoulli", "Binomial", "UniformInt", "Categorical", "Poisson",          "Thinning",
                                "Markov",    "affine",   "add",        "subtract",    "SelectedThinning", "Emission",
                                "PoissonChild", "IndexedPoisson", "Geometric"};
  std::ostringstream o;
  for (const Step& s : steps) {
    const Spec& v = vars[s.var];
    switch (s.kind) {
      case Step::make:
        o << "v" << s.var << " = " << names[v.kind] << "(a=v" << v.a << " b=v" << v.b << " p=" << v.p << " n=" << v.n
          << " c=" << v.c;
        if (!v.group_t.empty()) o << (v.kind == Spec::indexed_child ? " rates per group" : " a transition per group");
        if (v.kind == Spec::indexed_child) o << " rates " << v.w.transpose();
        if (v.kind == Spec::selected_thinning) o << " keep " << v.w.transpose();
        for (const std::size_t r : v.rates) o << " rate v" << r;
        if (!v.group_p.empty()) {
          o << " p per group:";
          for (const double q : v.group_p) o << " " << q;
        }
        o << "); ";
        break;
      case Step::observe: o << "observe v" << s.var << " = " << s.v << "; "; break;
      case Step::marginal: o << "marginal v" << s.var << "; "; break;
      case Step::value: o << "value v" << s.var << "; "; break;
      case Step::drop: o << "drop v" << s.var << "; "; break;
    }
  }
  return o.str();
}

/// Spec's probability or rate in group g (its own where it has one per group).
inline double p_of(const Spec& s, std::size_t g) { return s.group_p.empty() ? s.p : s.group_p[g]; }

/// The kernel of variable k given earlier values (its law given its parents), in group g.
inline Law kernel_of(const Spec& s, const Assignment& x, std::size_t g = 0) {
  switch (s.kind) {
    case Spec::bernoulli: return binomial_law(1, p_of(s, g));
    case Spec::binomial: return binomial_law(s.n, p_of(s, g));
    case Spec::uniform: return uniform_law(s.c, s.c + s.n);
    case Spec::categorical: return categorical_law(std::vector<double>(s.w.data(), s.w.data() + s.w.size()));
    case Spec::poisson: return poisson_law(p_of(s, g), poisson_top);
    case Spec::thinning: return binomial_law(x[s.a], p_of(s, g));
    case Spec::markov: {
      const Eigen::MatrixXd& t = s.group_t.empty() ? s.t : s.group_t[g];
      std::vector<double> row(static_cast<std::size_t>(t.cols()));
      for (Eigen::Index j = 0; j < t.cols(); ++j) row[static_cast<std::size_t>(j)] = t(static_cast<Eigen::Index>(x[s.a]), j);
      return categorical_law(row);
    }
    case Spec::affine: return point_law(s.n * x[s.a] + s.c);
    case Spec::add: return point_law(x[s.a] + x[s.b]);
    case Spec::subtract: return point_law(x[s.a] - x[s.b]);
    case Spec::selected_thinning: return binomial_law(x[s.a], s.w[static_cast<Eigen::Index>(x[s.b])]);
    case Spec::emission:
      return poisson_law(s.p * static_cast<double>(x[s.rates[static_cast<std::size_t>(x[s.b])]]), poisson_top);
    case Spec::poisson_child: return poisson_law(p_of(s, g) * static_cast<double>(x[s.a]), poisson_top);
    case Spec::indexed_child: {
      const auto k = static_cast<Eigen::Index>(x[s.a]);
      return poisson_law(s.group_t.empty() ? s.w[k] : s.group_t[g](k, 0), poisson_top);
    }
    case Spec::geometric: {
      std::vector<double> w;  // (1 - p)^k p up to poisson_top: the mass above is below (1 - p)^41 <= 1e-21
      for (std::int64_t k = 0; k <= poisson_top; ++k) w.push_back(std::pow(1.0 - s.p, double(k)) * s.p);
      return categorical_law(w);
    }
  }
  return {};
}

/// A random program of up to `size` variables: roots of every family, thinnings, Markov steps, affine maps, sums and
/// differences of any earlier variables (so shared ancestors, diamonds and several children of one variable come
/// up), observations at values of one forward draw of the whole program (so they are jointly possible; now and
/// then one is made impossible), marginals, draws and dropped handles in between. With groups > 1, Bernoulli,
/// Binomial and Poisson roots and thinnings get a parameter per group, now and then (each with probability 1/2);
/// Markov steps a transition per group; the observed values come from group 0's draw. With more_children, children
/// of several variables too (thinnings whose keep probability a state selects, Poisson emissions whose rate a state
/// selects among counts), scaled and indexed Poisson children of counts (their rates per group now and then) and
/// Geometric roots; without it, the programs of each seed are those of earlier versions.
inline Program random_program(std::mt19937_64& gen, int size, std::size_t groups = 1, bool more_children = false) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(gen() % n); };
  Program prog;
  std::vector<bool> alive;
  std::vector<std::size_t> usable;  // alive and not too wide
  auto refresh = [&] {
    usable.clear();
    for (std::size_t k = 0; k < prog.vars.size(); ++k)
      if (alive[k] && prog.vars[k].hi - prog.vars[k].lo <= 24) usable.push_back(k);
  };
  bool has_poisson = false;
  std::vector<bool> observed;
  std::size_t frozen = 0;  // variables before this one may have been realized by a draw
  auto make = [&](Spec s) {
    const bool own = s.kind == Spec::bernoulli || s.kind == Spec::binomial || s.kind == Spec::poisson ||
                     s.kind == Spec::thinning || s.kind == Spec::poisson_child;
    if (groups > 1 && own && u(gen) < 0.5) {
      s.group_p.resize(groups);
      const bool rate = s.kind == Spec::poisson, scale = s.kind == Spec::poisson_child;
      for (double& q : s.group_p) q = rate ? 0.3 + 1.5 * u(gen) : scale ? 0.05 + 0.25 * u(gen) : 0.1 + 0.8 * u(gen);
    }
    if (groups > 1 && s.kind == Spec::indexed_child && u(gen) < 0.5)
      for (std::size_t g = 0; g < groups; ++g) {  // each group's own rates, zero where the shared ones are
        Eigen::MatrixXd r(s.w.size(), 1);
        for (Eigen::Index i = 0; i < s.w.size(); ++i) r(i, 0) = s.w[i] > 0.0 ? 0.2 + 2.5 * u(gen) : 0.0;
        s.group_t.push_back(std::move(r));
      }
    if (groups > 1 && s.kind == Spec::markov && u(gen) < 0.5) {
      for (std::size_t g = 0; g < groups; ++g) {  // each row positive where the shared table's is (one support)
        Eigen::MatrixXd t = s.t;
        for (Eigen::Index i = 0; i < t.size(); ++i)
          if (t.data()[i] > 0.0) t.data()[i] = 0.05 + u(gen);
        for (Eigen::Index i = 0; i < t.rows(); ++i) t.row(i) /= t.row(i).sum();
        s.group_t.push_back(std::move(t));
      }
    }
    prog.vars.push_back(std::move(s));
    alive.push_back(true);
    observed.push_back(false);
    prog.steps.push_back({Step::make, prog.vars.size() - 1, 0});
  };
  auto root = [&] {
    Spec s;
    if (more_children && !has_poisson && u(gen) < 0.1) {  // unbounded, enumerated up to poisson_top as a Poisson
      s.kind = Spec::geometric, s.p = 0.7 + 0.25 * u(gen), s.hi = poisson_top;
      has_poisson = true;
      make(s);
      return;
    }
    const double r = u(gen);
    if (r < 0.2) {
      s.kind = Spec::bernoulli, s.p = 0.1 + 0.8 * u(gen), s.hi = 1;
    } else if (r < 0.5) {
      s.kind = Spec::binomial, s.n = 1 + std::int64_t(gen() % 5), s.p = 0.1 + 0.8 * u(gen), s.hi = s.n;
    } else if (r < 0.65) {
      s.kind = Spec::uniform, s.c = std::int64_t(gen() % 3) - 1, s.n = std::int64_t(gen() % 4), s.lo = s.c, s.hi = s.c + s.n;
    } else if (r < 0.8 || has_poisson) {
      s.kind = Spec::categorical, s.w = Eigen::VectorXd(3);
      for (auto& x : s.w) x = 0.05 + u(gen);
      s.hi = 2;
    } else {
      s.kind = Spec::poisson, s.p = 0.3 + 1.5 * u(gen), s.hi = poisson_top;
      has_poisson = true;
    }
    make(s);
  };
  root();
  if (u(gen) < 0.7) root();
  while (static_cast<int>(prog.vars.size()) < size) {
    refresh();
    const double r = u(gen);
    if (usable.empty() || r < 0.12) {
      root();
      continue;
    }
    const std::size_t a = usable[pick(usable.size())], b = usable[pick(usable.size())];
    const Spec& pa = prog.vars[a];
    Spec s;
    s.a = a, s.b = b;
    if (r < 0.35 && pa.lo >= 0) {
      s.kind = Spec::thinning, s.p = 0.1 + 0.8 * u(gen), s.lo = 0, s.hi = pa.hi;
    } else if (r < 0.45 && pa.lo >= 0 && pa.hi <= 6) {
      s.kind = Spec::markov, s.t = Eigen::MatrixXd(pa.hi + 1, 3);
      for (Eigen::Index i = 0; i < s.t.size(); ++i) s.t.data()[i] = u(gen) < 0.2 ? 0.0 : u(gen);
      for (Eigen::Index i = 0; i < s.t.rows(); ++i) {
        s.t(i, i % 3) += 0.1;
        s.t.row(i) /= s.t.row(i).sum();
      }
      s.hi = 2;
    } else if (r < 0.55) {
      const std::int64_t coefficients[] = {-1, 1, 2};
      s.kind = Spec::affine, s.n = coefficients[gen() % 3], s.c = std::int64_t(gen() % 5) - 2;
      s.lo = std::min(s.n * pa.lo, s.n * pa.hi) + s.c, s.hi = std::max(s.n * pa.lo, s.n * pa.hi) + s.c;
    } else if (r < 0.75) {
      s.kind = Spec::add, s.lo = pa.lo + prog.vars[b].lo, s.hi = pa.hi + prog.vars[b].hi;
    } else if (r < 0.85) {
      if (a == b) continue;
      s.kind = Spec::subtract, s.lo = pa.lo - prog.vars[b].hi, s.hi = pa.hi - prog.vars[b].lo;
    } else if (more_children && r < 0.93 && pa.lo >= 0 && prog.vars[b].lo >= 0 && prog.vars[b].hi <= 3) {
      s.kind = Spec::selected_thinning, s.w = Eigen::VectorXd(prog.vars[b].hi + 1), s.lo = 0, s.hi = pa.hi;
      for (auto& q : s.w) q = u(gen) < 0.15 ? 1.0 : 0.05 + 0.9 * u(gen);
    } else if (more_children && r >= 0.93 && r < 0.98 && !has_poisson && prog.vars[b].lo >= 0 &&
               prog.vars[b].hi <= 2) {
      std::vector<std::size_t> counts;  // small counts, so that the rates stay below 3
      for (const std::size_t k : usable)
        if (prog.vars[k].lo >= 0 && prog.vars[k].hi <= 10) counts.push_back(k);
      if (counts.empty()) continue;
      s.kind = Spec::emission, s.p = 0.05 + 0.25 * u(gen), s.lo = 0, s.hi = poisson_top;
      for (std::int64_t k = 0; k <= prog.vars[b].hi; ++k) s.rates.push_back(counts[pick(counts.size())]);
      has_poisson = true;
    } else if (more_children && r >= 0.99 && !has_poisson && pa.lo >= 0 && pa.hi <= 4) {
      s.kind = Spec::indexed_child, s.w = Eigen::VectorXd(pa.hi + 1), s.lo = 0, s.hi = poisson_top;
      for (auto& x : s.w) x = u(gen) < 0.15 ? 0.0 : 0.2 + 2.5 * u(gen);
      has_poisson = true;
    } else if (more_children && r >= 0.98 && !has_poisson && pa.lo >= 0 && pa.hi <= 10) {
      s.kind = Spec::poisson_child, s.p = 0.05 + 0.25 * u(gen), s.lo = 0, s.hi = poisson_top;  // rates below 3
      has_poisson = true;
    } else {
      continue;
    }
    make(s);
    // between variables: observations, queries, draws and dropped handles
    while (u(gen) < 0.45) {
      refresh();
      const double e = u(gen);
      const std::size_t k = usable.empty() ? prog.vars.size() - 1 : usable[pick(usable.size())];
      if (!alive[k]) break;
      if (e < 0.45) {
        // a variable is observed once, and not once a draw may have realized it (value() of it or of a relative)
        if (observed[k] || k < frozen) continue;
        observed[k] = true;
        prog.steps.push_back({Step::observe, k, 0});
      } else if (e < 0.7)
        prog.steps.push_back({Step::marginal, k, 0});
      else if (e < 0.8) {
        prog.steps.push_back({Step::value, k, 0});
        frozen = prog.vars.size();
      } else if (k + 1 < prog.vars.size()) {  // never the newest (so the program goes on from something)
        prog.steps.push_back({Step::drop, k, 0});
        alive[k] = false;
      }
    }
  }
  // a last observation of the newest variable, as a filter would end a step
  if (!observed.back() && prog.vars.size() - 1 >= frozen) prog.steps.push_back({Step::observe, prog.vars.size() - 1, 0});
  // observed values from one forward draw; sometimes one impossible value
  Assignment draw;
  std::mt19937_64 forward(gen());
  for (const Spec& s : prog.vars) {
    const Law l = normalized(kernel_of(s, draw));
    double x = std::uniform_real_distribution<double>(0.0, 1.0)(forward);
    std::int64_t v = l.begin()->first;
    for (const auto& [k, p] : l) {
      v = k;
      x -= static_cast<double>(p);
      if (x <= 0) break;
    }
    draw.push_back(v);
  }
  for (Step& s : prog.steps)
    if (s.kind == Step::observe) s.v = u(gen) < 0.03 ? prog.vars[s.var].lo - 1 : draw[s.var];
  return prog;
}

/// What went wrong in one run (empty: nothing). A refusal whose every would-be draw is reported as past the joint
/// laws' budget (Fallback::joint_limit) is the documented behaviour, not a wrong answer: `past_budget` marks it, so
/// that the testers count such programs apart (dense tables hold every live variable as an axis, sums of sums
/// included, so a few small programs with many live handles exceed the budget).
struct Finding {
  std::string what;
  bool past_budget = false;
  explicit operator bool() const { return !what.empty(); }
};

/// Runs the program on a Graph of `groups` groups of `per_group` particles in strict mode (one group: a Graph of
/// per_group particles) and compares, step by step, with each group's enumeration (its own parameters): each
/// observation's log-likelihood in every particle (relative 1e-9, or -inf exactly where the observation is impossible
/// given the events before), every marginal asked for (relative 1e-8 on each value of probability above 1e-9, none
/// outside the exact support), and that every draw is possible. A draw becomes an event of the group's enumeration
/// (the program is conditioned on it), so with per_group > 1 only the first particle's draws of each group are
/// followed, and nothing is compared after the first draw: a program with draws runs on one particle a group.
inline Finding run_program(const Program& prog, std::size_t per_group, std::uint64_t seed, std::size_t groups = 1) {
  using runtime::Graph;
  using runtime::Variable;
  std::vector<Joint> joint;
  for (std::size_t gi = 0; gi < groups; ++gi) {
    std::vector<Kernel> kernels;
    for (const Spec& s : prog.vars) kernels.push_back([s, gi](const Assignment& x) { return kernel_of(s, x, gi); });
    joint.push_back(enumerate(kernels));
  }
  // (variable, value) observed or drawn so far, per group
  std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> events(groups);
  auto holds_in = [&](std::size_t gi) {
    return [&events, gi](const Assignment& x) {
      for (const auto& [k, v] : events[gi])
        if (x[k] != v) return false;
      return true;
    };
  };
  std::ostringstream finding;
  auto fail = [&](const std::string& what) {
    finding << what << "\n  program: " << prog.describe();
    if (groups > 1) finding << "\n  (" << groups << " groups of " << per_group << ")";
    return Finding{finding.str()};
  };
  // each group's own laws of a spec with a parameter per group
  auto per_group_laws = [&]<class Law>(const Spec& s, auto make) {
    std::vector<Law> out;
    for (std::size_t gi = 0; gi < groups; ++gi) out.push_back(make(s.group_p[gi]));
    return out;
  };
  try {
    // TALLY_DIFFERENTIAL_BATCHES=1: every joint operation with a batch form as a batch (kept resident in it)
    Truncation settings;
    if (const char* b = std::getenv("TALLY_DIFFERENTIAL_BATCHES"); b != nullptr && std::string(b) == "1")
      settings.joint_batches = Truncation::JointBatches::batched;
    // TALLY_DIFFERENTIAL_JOINT_BYTES=B: the joint laws' budget (small: more components past it, so that marginals
    // take the eliminating query and more programs are refused past the budget, counted apart)
    if (const char* b = std::getenv("TALLY_DIFFERENTIAL_JOINT_BYTES"); b != nullptr)
      settings.max_joint_bytes = std::stoll(b);
    Graph g = groups == 1 ? Graph(per_group, seed, settings)
                          : Graph(runtime::Groups{groups, per_group}, seed, runtime::Device::automatic, settings);
    g.strict(true);
    std::vector<Variable> var(prog.vars.size());
    std::vector<big> before(groups, big(1));  // P(events so far), per group
    // TALLY_DIFFERENTIAL_TRACE=1: each observation's, marginal's and draw's values on stderr (to follow a finding)
    const char* trace_env = std::getenv("TALLY_DIFFERENTIAL_TRACE");
    const bool trace = trace_env != nullptr && std::string(trace_env) == "1";
    for (const Step& step : prog.steps) {
      const Spec& s = prog.vars[step.var];
      const bool own = !s.group_p.empty();
      if (trace) std::fprintf(stderr, "step %d on v%zu\n", static_cast<int>(step.kind), step.var);
      switch (step.kind) {
        case Step::make: {
          Variable& x = var[step.var];
          switch (s.kind) {
            case Spec::bernoulli:
              x = own ? g.assume(per_group_laws.operator()<Bernoulli>(s, [](double p) { return Bernoulli(p); }))
                      : g.assume(Bernoulli(s.p));
              break;
            case Spec::binomial:
              x = own ? g.assume(per_group_laws.operator()<Binomial>(s, [&](double p) { return Binomial(s.n, p); }))
                      : g.assume(Binomial(s.n, s.p));
              break;
            case Spec::uniform: x = g.assume(UniformInt(s.c, s.c + s.n)); break;
            case Spec::categorical: x = g.assume(Categorical(s.w)); break;
            case Spec::poisson:
              x = own ? g.assume(per_group_laws.operator()<Poisson>(s, [](double p) { return Poisson(p); }))
                      : g.assume(Poisson(s.p));
              break;
            case Spec::thinning:
              x = own ? g.assume(var[s.a], per_group_laws.operator()<Thinning>(s, [](double p) { return Thinning(p); }))
                      : g.assume(var[s.a], Thinning(s.p));
              break;
            case Spec::markov:
              if (s.group_t.empty()) {
                x = g.assume(var[s.a], MarkovStep(s.t));
              } else {
                std::vector<MarkovStep> steps;
                for (const auto& t : s.group_t) steps.emplace_back(t);
                x = g.assume(var[s.a], steps);
              }
              break;
            case Spec::affine: x = g.affine(var[s.a], s.n, s.c); break;
            case Spec::add: x = g.add(var[s.a], var[s.b]); break;
            case Spec::subtract: x = g.subtract(var[s.a], var[s.b]); break;
            case Spec::selected_thinning:
              x = g.binomial(var[s.a], var[s.b], std::vector<double>(s.w.data(), s.w.data() + s.w.size()));
              break;
            case Spec::poisson_child:
              x = own ? g.assume(var[s.a], per_group_laws.operator()<ScaledPoisson>(
                                               s, [](double p) { return ScaledPoisson(p); }))
                      : g.assume(var[s.a], ScaledPoisson(s.p));
              break;
            case Spec::indexed_child:
              if (s.group_t.empty()) {
                x = g.assume(var[s.a], IndexedPoisson(s.w));
              } else {
                std::vector<IndexedPoisson> laws;
                for (const auto& r : s.group_t) laws.emplace_back(Eigen::VectorXd(r.col(0)));
                x = g.assume(var[s.a], laws);
              }
              break;
            case Spec::geometric: x = g.assume(Geometric(s.p)); break;
            case Spec::emission: {
              std::vector<Variable> rates;
              for (const std::size_t k : s.rates) rates.push_back(var[k]);
              x = g.poisson(var[s.b], rates, s.p);
              break;
            }
          }
          break;
        }
        case Step::observe: {
          std::optional<runtime::Observation> observed;
          try {
            observed = g.observe(var[step.var], step.v);
          } catch (const runtime::usage_error& e) {
            // realized meanwhile without being drawn or observed by the program (a tie of an observed sum whose
            // partner was observed): the API refuses a second observation of a realized variable; not compared
            if (std::string(e.what()).find("already realized") == std::string::npos) throw;
            break;
          }
          const runtime::Observation& o = *observed;
          if (trace)
            for (std::size_t i = 0; i < groups * per_group; ++i)
              std::fprintf(stderr, "  log L[%zu] = %.17g\n", i, o[i]);
          bool alive = false;
          for (std::size_t gi = 0; gi < groups; ++gi) {
            events[gi].emplace_back(step.var, step.v);
            const big now = probability(joint[gi], holds_in(gi));
            for (std::size_t i = gi * per_group; i < (gi + 1) * per_group; ++i) {
              const double ll = o[i];
              if (before[gi] == 0 || now == 0) {
                if (ll != -std::numeric_limits<double>::infinity() && before[gi] != 0)
                  return fail("observe v" + std::to_string(step.var) + ": finite log-likelihood " + std::to_string(ll) +
                              " of an impossible observation (particle " + std::to_string(i) + ")");
                continue;
              }
              const big want = boost::multiprecision::log(now / before[gi]);
              if (!std::isfinite(ll) || relative_error_log(ll, want) > 1e-9)
                return fail("observe v" + std::to_string(step.var) + " = " + std::to_string(step.v) +
                            ": log-likelihood " + std::to_string(ll) + " in particle " + std::to_string(i) +
                            ", exact " + std::to_string(static_cast<double>(want)));
              if (!o.exact()) return fail("observe v" + std::to_string(step.var) + ": reported inexact");
            }
            before[gi] = now;
            alive = alive || now != 0;
          }
          if (!alive) return Finding{};  // every particle is dead: what follows is not compared
          break;
        }
        case Step::marginal: {
          const std::vector<Pmf> m = g.marginal(var[step.var]);
          if (trace)
            for (std::size_t i = 0; i < m.size(); ++i) {
              std::fprintf(stderr, "  marginal[%zu] from %lld:", i, static_cast<long long>(m[i].lo()));
              for (Eigen::Index e = 0; e < m[i].weights().size(); ++e) std::fprintf(stderr, " %.6g", m[i].weights()[e]);
              std::fprintf(stderr, "\n");
            }
          for (std::size_t gi = 0; gi < groups; ++gi) {
            if (before[gi] == 0) continue;
            const Law want = posterior(joint[gi], step.var, holds_in(gi));
            for (std::size_t i = gi * per_group; i < (gi + 1) * per_group; ++i) {
              const Law got = law_of(m[i].normalized());
              for (const auto& [k, p] : got)
                if (want.count(k) == 0 && static_cast<double>(p) > 1e-12)
                  return fail("marginal v" + std::to_string(step.var) + ": value " + std::to_string(k) +
                              " impossible (particle " + std::to_string(i) + ")");
              for (const auto& [k, p] : want) {
                if (p < big(1e-9)) continue;
                const double q = got.count(k) ? static_cast<double>(got.at(k)) : 0.0;
                if (relative_error(q, p) > 1e-8)
                  return fail("marginal v" + std::to_string(step.var) + ": P(" + std::to_string(k) + ") = " +
                              std::to_string(q) + " in particle " + std::to_string(i) + ", exact " +
                              std::to_string(static_cast<double>(p)));
              }
            }
          }
          break;
        }
        case Step::value: {
          const std::vector<std::int64_t> v = g.value(var[step.var]);
          if (trace)
            for (std::size_t i = 0; i < v.size(); ++i)
              std::fprintf(stderr, "  value[%zu] = %lld\n", i, static_cast<long long>(v[i]));
          for (std::size_t gi = 0; gi < groups; ++gi) {
            if (before[gi] == 0) continue;
            const std::int64_t drawn = v[gi * per_group];
            events[gi].emplace_back(step.var, drawn);
            const big now = probability(joint[gi], holds_in(gi));
            if (now == 0)
              return fail("value v" + std::to_string(step.var) + " drew an impossible " + std::to_string(drawn) +
                          " (particle " + std::to_string(gi * per_group) + ")");
            before[gi] = now;
          }
          if (per_group > 1) return Finding{};  // the particles follow other draws from here
          break;
        }
        case Step::drop: var[step.var] = Variable{}; break;
      }
    }
  } catch (const runtime::inexact_error& e) {
    Finding f = fail(std::string("strict mode refused: ") + e.what());
    f.past_budget = !e.sampled.empty() && std::all_of(e.sampled.begin(), e.sampled.end(), [](const runtime::Sampled& x) {
      return x.reason == runtime::Fallback::joint_limit;
    });
    return f;
  } catch (const std::exception& e) {
    return fail(std::string("threw: ") + e.what());
  }
  return Finding{};
}

}  // namespace tally::test::programs
