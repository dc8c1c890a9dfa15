// Electoral votes: the exact law of a candidate's total over 51 winner-take-all units, by the runtime's dense
// convolutions and by subset-sum enumeration (weighted_bernoulli_sum), which must agree; and -inf at once for 537.
// Then "conditioned on the total": a Graph of P particles (--particles, --seed, --device cpu|gpu) keeps each
// unit X_i ~ votes_i * Bernoulli(win_i) marginalized, adds them up (convolutions) and observes T = sum_i X_i = k
// (--given, default the majority 270): every particle's log-weight becomes log P(T = k), checked against the
// enumeration, and each particle draws (X_1..X_n) from its exact joint posterior given T = k; the fraction of
// particles in which a big unit was won is checked against the exact P(X_i = votes_i | T = k) by a z-score.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "tally/distributions/bernoulli.hpp"
#include "tally/distributions/weighted_bernoulli_sum.hpp"
#include "tally/error.hpp"
#include "gnuplot.hpp"
#include "results.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::models::close_gnuplot;
using tally::models::gnuplot_quote;
using tally::models::open_gnuplot;
using tally::runtime::Graph;
using tally::runtime::Variable;

#ifndef TALLY_ELECTORAL_DATA
#define TALLY_ELECTORAL_DATA "models/data/electoral_votes.csv"
#endif

namespace {

struct Units {
  std::vector<std::string> names;
  std::vector<std::int64_t> votes;
  std::vector<double> win;
  std::int64_t total() const {
    std::int64_t t = 0;
    for (auto v : votes) t += v;
    return t;
  }
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

/// Reads `unit,electoral_votes,win_probability` rows (after '#' comments and one header line); a malformed row is
/// a std::runtime_error naming the file, the line and what is wrong with it.
Units load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + " (pass --data PATH)");
  Units u;
  std::string line;
  bool header = false;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto where = [&](const std::string& what) { return path + ":" + std::to_string(number) + ": " + what; };
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(trim(cell));
    if (!header) {
      if (f != std::vector<std::string>{"unit", "electoral_votes", "win_probability"})
        throw std::runtime_error(where("expected the header unit,electoral_votes,win_probability"));
      header = true;
      continue;
    }
    if (f.size() != 3 || f[0].empty()) throw std::runtime_error(where("expected 3 fields: unit,votes,probability"));
    std::size_t end = 0;
    long long votes = 0;
    double p = 0;
    try {
      votes = std::stoll(f[1], &end);
      if (end != f[1].size()) throw std::invalid_argument("trailing characters");
      p = std::stod(f[2], &end);
      if (end != f[2].size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw std::runtime_error(where("votes '" + f[1] + "' or probability '" + f[2] + "' is not a number"));
    }
    if (votes < 1 || votes > 1000) throw std::runtime_error(where("electoral votes must be in [1, 1000]"));
    if (!(p >= 0.0 && p <= 1.0)) throw std::runtime_error(where("the win probability must be in [0, 1]"));
    u.names.push_back(f[0]);
    u.votes.push_back(votes);
    u.win.push_back(p);
  }
  if (u.votes.empty()) throw std::runtime_error(path + ": no units");
  return u;
}

/// The candidate's total in g: sum over units of votes_i * Bernoulli(win_i), each unit won independently.
Variable total_votes(Graph& g, const Units& u) {
  Variable total;
  for (std::size_t i = 0; i < u.votes.size(); ++i) {
    auto won = g.affine(g.assume(Bernoulli(u.win[i])), u.votes[i], 0);
    total = i == 0 ? won : g.add(total, won);
  }
  return total;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// P(total >= k), summed over the upper tail (no 1 - cdf cancellation).
double upper_tail(const Pmf& d, std::int64_t k) {
  double s = 0;
  for (std::int64_t v = std::max(k, d.lo()); v <= d.hi(); ++v) s += pdf(d, v);
  return s;
}
double upper_tail(const SparsePmf& d, std::int64_t k) {
  double s = 0;
  for (Eigen::Index i = 0; i < d.size(); ++i)
    if (d.points()[i] >= k) s += d.weights()[i];
  return s * std::exp(d.log_scale());
}

/// Draws the pmf of the total as impulses, with the majority line, into a PNG; throws models::plot_error on failure.
bool plot(const SparsePmf& d, std::int64_t majority, double win, const std::string& path) {
  FILE* gp = open_gnuplot(path);
  std::fprintf(gp, "$pmf << EOD\n");
  for (Eigen::Index i = 0; i < d.size(); ++i)
    std::fprintf(gp, "%lld %.17g\n", static_cast<long long>(d.points()[i]), pdf(d, d.points()[i]));
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,520 font 'sans,11'\nset output %s\n"
               "set title \"Electoral votes of candidate A (illustrative probabilities): P(total >= %lld) = %.4f\"\n"
               "set xlabel 'electoral votes'\nset ylabel 'probability'\nset grid\nset key off\n"
               "set arrow from %lld, graph 0 to %lld, graph 1 nohead front dt 2 lw 2 lc rgb '#d62728'\n"
               "plot $pmf using 1:2 with impulses lw 2 lc rgb '#1f77b4'\n",
               gnuplot_quote(path).c_str(), static_cast<long long>(majority), win, static_cast<long long>(majority),
               static_cast<long long>(majority));
  return close_gnuplot(gp, path);
}

/// Unit i's law votes_i * Bernoulli(win_i): mass 1 - win at 0 and win at votes, zeros between (the Pmf trims the
/// end zeros when win is 0 or 1).
Pmf unit_law(std::int64_t votes, double win) {
  Eigen::VectorXd w = Eigen::VectorXd::Zero(votes + 1);
  w[0] = 1.0 - win;
  w[votes] = win;
  return Pmf(0, std::move(w));
}

/// What the "conditioned on the total" section found.
struct Conditioned {
  double log_weight_error = 0;  // max over particles of |log-weight - log P(T = k)| / max(1, |log P(T = k)|)
  double max_abs_z = std::numeric_limits<double>::quiet_NaN();  // NaN when k is unreachable (nothing to compare)
  bool sums_ok = true;                                           // every particle's units add up to k
  double seconds = 0;                                            // the population part
  double marginal_error = 0;  // the largest |P(won | T = k) by Graph::marginal - the enumeration's|
  double marginal_seconds = 0;  // the ten units' Graph::marginal
};

/// The units given T = k, by a population: X_i ~ votes_i Bernoulli(win_i) stay marginalized, T is built by pop.add
/// (pairwise, a balanced tree of sums: the same law as a chain, with about log2 n levels of P laws held instead of
/// n), observe(T, k) adds log P(T = k) to every particle's log-weight (the skew diagonal of the root's operands)
/// and realizes T, which draws each sum's operands from p(x | x + y = z) down the tree: (X_1..X_n) from their
/// exact joint posterior. The particles are then equally weighted, so the fraction in which unit i was won
/// estimates, with standard error sqrt(p (1 - p) / P),
///   P(X_i = votes_i | T = k) = win_i P(R_i = k - votes_i) / P(T = k),   R_i = T - X_i (the other units),
/// where R_i's law is enumerated by weighted_bernoulli_sum without unit i. Before the draws, Graph::marginal of the
/// ten largest units gives that probability exactly (no particles: each unit's posterior from the tree of sums with
/// every other unit summed out), also checked against the enumeration. With results (--results), a RESULT line.
Conditioned conditioned_on_total(const Units& u, const SparsePmf& law, std::int64_t k, std::size_t particles,
                                 std::uint64_t seed, const std::string& device, int group, bool results) {
  Conditioned out;
  const std::size_t n = u.votes.size();
  auto start = std::chrono::steady_clock::now();
  Graph pop(particles, seed, device == "gpu" ? runtime::Device::cuda : runtime::Device::cpu);
  std::vector<Variable> units;
  for (std::size_t i = 0; i < n; ++i) units.push_back(pop.assume(unit_law(u.votes[i], u.win[i])));
  std::vector<Variable> level = units;
  while (level.size() > 1) {
    std::vector<Variable> next;
    for (std::size_t j = 0; j + 1 < level.size(); j += 2) next.push_back(pop.add(level[j], level[j + 1]));
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  const std::size_t held = pop.bytes();
  pop.observe(level[0], k);
  const std::vector<double> lw = pop.log_weights();
  out.seconds = seconds_since(start);
  // the ten largest units, whose posteriors are printed; their exact marginals first (nothing is drawn for them)
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return u.votes[a] > u.votes[b]; });
  order.resize(std::min<std::size_t>(n, 10));
  std::vector<double> marginal_won(n, std::numeric_limits<double>::quiet_NaN());
  auto queried = std::chrono::steady_clock::now();
  if (std::isfinite(lw[0]))
    for (const std::size_t i : order) marginal_won[i] = pdf(pop.marginal(units[i])[0], u.votes[i]);
  out.marginal_seconds = seconds_since(queried);
  start = std::chrono::steady_clock::now();
  std::vector<std::vector<std::int64_t>> drawn(n);
  for (std::size_t i = 0; i < n; ++i) drawn[i] = pop.value(units[i]);
  out.seconds += seconds_since(start);

  const double exact = log_pdf(law, k);  // log P(T = k), -inf off the support
  const auto [lw_min, lw_max] = std::minmax_element(lw.begin(), lw.end());
  double difference = 0;  // the log-weight farthest from the exact value, minus it
  for (double l : lw) {
    const bool both_inf = l == exact && std::isinf(exact);  // -inf - -inf would be NaN
    const double d = both_inf ? 0.0 : l - exact;
    if (!(std::abs(d) <= std::abs(difference))) difference = d;
  }
  out.log_weight_error = std::abs(difference) / std::max(1.0, std::abs(exact));  // inf when one side is -inf
  std::printf("conditioned on the total: %zu particles on the %s (seed %llu), each unit assume(votes_i * "
              "Bernoulli(win_i)),\nall added by Graph::add (kept marginalized: convolutions), then "
              "observe(total = %lld); %.1f MB of laws held before it\n",
              particles, device.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(k),
              static_cast<double>(held) / 1e6);
  std::printf("  log-weight of every particle (min, max) %.15g, %.15g\n", *lw_min, *lw_max);
  std::printf("  exact log P(total = %lld) (enumeration)  %.15g\n", static_cast<long long>(k), exact);
  std::printf("  difference (log-weight - exact, the largest) %+.3e, relative to max(1, |exact|) %.3e\n",
              difference, out.log_weight_error);
  if (exact == -std::numeric_limits<double>::infinity()) {
    std::printf("  total = %lld is not reachable (no set of units has exactly that many votes): P = 0, so every\n"
                "  log-weight must be -inf, and there is no posterior to compare\n",
                static_cast<long long>(k));
  } else {
    start = std::chrono::steady_clock::now();
    std::printf("  %-5s %5s %8s %13s %9s %13s %8s %13s\n", "unit", "votes", "P(won)", "P(won | T=k)", "s.e.", "exact",
                "z", "marginal()");
    out.max_abs_z = 0;
    for (std::size_t i : order) {
      std::vector<std::int64_t> rest_votes;
      std::vector<double> rest_win;
      for (std::size_t j = 0; j < n; ++j)
        if (j != i) rest_votes.push_back(u.votes[j]), rest_win.push_back(u.win[j]);
      const SparsePmf rest = weighted_bernoulli_sum(rest_votes, rest_win, group);
      const double p =  // clamped: a certain unit may round to 1 + 1e-16
          std::clamp(std::exp(std::log(u.win[i]) + log_pdf(rest, k - u.votes[i]) - exact), 0.0, 1.0);
      const auto won = std::count(drawn[i].begin(), drawn[i].end(), u.votes[i]);
      const double estimate = static_cast<double>(won) / static_cast<double>(particles);
      const double se = std::sqrt(p * (1 - p) / static_cast<double>(particles));
      const double z = se > 0 ? (estimate - p) / se : (estimate == p ? 0.0 : std::numeric_limits<double>::infinity());
      out.max_abs_z = std::max(out.max_abs_z, std::abs(z));
      const double off = std::abs(marginal_won[i] - p);  // NaN (no marginal) counts as a failure
      out.marginal_error =
          std::isnan(off) ? std::numeric_limits<double>::infinity() : std::max(out.marginal_error, off);
      std::printf("  %-5s %5lld %8.3f %13.4f %9.4f %13.6f %+8.2f %13.6f\n", u.names[i].c_str(),
                  static_cast<long long>(u.votes[i]), u.win[i], estimate, se, p, z, marginal_won[i]);
    }
    for (std::size_t s = 0; s < particles; ++s) {
      std::int64_t sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += drawn[i][s];
      out.sums_ok = out.sums_ok && sum == k;
    }
    std::printf("  every particle's units add up to %lld: %s; exact posteriors (without particles) in %.2f ms\n",
                static_cast<long long>(k), out.sums_ok ? "yes" : "NO", 1e3 * seconds_since(start));
  }
  if (std::isfinite(exact))
    std::printf("  marginal() (exact, nothing drawn) against the enumeration: largest difference %.3e, the ten in "
                "%.2f ms\n",
                out.marginal_error, 1e3 * out.marginal_seconds);
  std::printf("  time of the population (build, observe, values to the host): %.2f ms\n", 1e3 * out.seconds);
  if (results)
    std::printf("RESULT model=electoral device=%s particles=%zu seconds=%.6g max_abs_z=%.3f\n", device.c_str(),
                particles, out.seconds, out.max_abs_z);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: the law of a candidate's electoral votes (51 units, illustrative win probabilities), "
               "by dense convolution in the runtime and by subset-sum enumeration, which must agree; then, "
               "conditioned on the total (--given), a particle population's log-weight and posterior per unit "
               "against the exact ones"};
  std::string data = TALLY_ELECTORAL_DATA, plot_path;
  int group = 16;  // 2^16 subsets per group on the CPU, folded; 24 sends 2^24 per group to a GPU if there is one
  app.add_option("--data", data, "CSV of unit,electoral_votes,win_probability")->capture_default_str();
  app.add_option("--group", group, "weights enumerated together by weighted_bernoulli_sum")
      ->check(CLI::Range(1, 36))
      ->capture_default_str();
  app.add_option("--plot", plot_path, "PNG file for a plot of the pmf (needs gnuplot; none by default)");
  std::size_t particles = 4096;
  std::uint64_t seed = 1;
  std::string device = "cpu";
  std::int64_t given = 0;
  app.add_option("--particles", particles, "particles of the population conditioned on the total")
      ->check(CLI::Range(1, 1 << 22))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the population's draws")->capture_default_str();
  app.add_option("--device", device, "where the population runs: cpu (one core) or gpu (CUDA)")
      ->check(CLI::IsMember({"cpu", "gpu"}))
      ->capture_default_str();
  const CLI::Option* given_option = app.add_option(
      "--given", given, "the observed total k of the population section (default: the majority, total/2 + 1)");
  bool results = false;
  tally::models::add_results_flag(app, results);
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  try {
    if (!plot_path.empty()) models::check_plot(plot_path);  // before the run: a plot that cannot be drawn fails at once
    const Units u = load(data);
    const std::int64_t total = u.total(), majority = total / 2 + 1;
    std::printf("%zu units, %lld electoral votes, majority %lld (data: %s)\n", u.votes.size(),
                static_cast<long long>(total), static_cast<long long>(majority), data.c_str());
    std::printf("win probabilities are illustrative, not a forecast\n\n");

    auto start = std::chrono::steady_clock::now();
    Graph g;
    const Pmf dense = g.marginal(total_votes(g, u))[0];  // 51 Bernoullis, scaled, added: dense convolutions
    const double dense_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const SparsePmf sparse = weighted_bernoulli_sum(u.votes, u.win, group);  // subsets enumerated, groups folded
    const double sparse_s = seconds_since(start);

    double worst = 0;
    std::int64_t dense_points = 0;
    for (std::int64_t k = 0; k <= total; ++k) {
      worst = std::max(worst, std::abs(pdf(dense, k) - pdf(sparse, k)));
      dense_points += pdf(dense, k) > 0;
    }
    std::printf("%-44s %22s %22s\n", "", "dense (runtime Graph)", "sparse (enumeration)");
    std::printf("%-44s %22.17f %22.17f\n", ("P(total >= " + std::to_string(majority) + ")").c_str(),
                upper_tail(dense, majority), upper_tail(sparse, majority));
    if (total % 2 == 0)
      std::printf("%-44s %22.17f %22.17f\n", ("P(" + std::to_string(total / 2) + "-" + std::to_string(total / 2) +
                                              " tie)").c_str(),
                  pdf(dense, total / 2), pdf(sparse, total / 2));
    std::printf("%-44s %22.12f %22.12f\n", "mean of the total", mean(dense), mean(sparse));
    std::printf("%-44s %22lld %22lld\n", ("reachable totals in 0.." + std::to_string(total)).c_str(),
                static_cast<long long>(dense_points), static_cast<long long>(sparse.size()));
    std::printf("%-44s %22.2e %22.2e\n", "error bound", dense.error_bound(), sparse.error_bound());
    std::printf("%-44s %20.2f ms %20.2f ms\n", "time", 1e3 * dense_s, 1e3 * sparse_s);
    std::printf("largest |P_dense(k) - P_sparse(k)| over k = 0..%lld: %.3e\n\n", static_cast<long long>(total), worst);

    // The runtime's structural check: with every unit at 2 votes or more (3 here), total - 1 is no subset sum
    // (its complement would be a single vote); observing it is -inf before anything is marginalized.
    Graph fresh;
    const Variable t = total_votes(fresh, u);
    std::int64_t structural = 0;
    for (std::int64_t k = 0; k <= total; ++k) structural += fresh.in_support(t, k);
    std::printf("structural support (Graph::in_support, nothing marginalized): %lld reachable totals\n",
                static_cast<long long>(structural));
    const bool gap = *std::min_element(u.votes.begin(), u.votes.end()) >= 2;
    double impossible = -std::numeric_limits<double>::infinity();
    if (gap) {
      start = std::chrono::steady_clock::now();
      impossible = fresh.observe(t, total - 1)[0];
      std::printf("observe(total = %lld): log-likelihood %g in %.3f ms (no pmf built)\n",
                  static_cast<long long>(total - 1), impossible, 1e3 * seconds_since(start));
    }
    Graph all;
    std::printf("observe(total = %lld): log-likelihood %.15g (sparse: %.15g)\n", static_cast<long long>(total),
                all.observe(total_votes(all, u), total)[0], log_pdf(sparse, total));

    if (!plot_path.empty() && plot(sparse, majority, upper_tail(sparse, majority), plot_path))
      std::printf("plot: %s\n", plot_path.c_str());
    std::printf("\n");
    const std::int64_t k = given_option->count() > 0 ? given : majority;
    const Conditioned conditioned = conditioned_on_total(u, sparse, k, particles, seed, device, group, results);
    bool ok = true;
    if (!(conditioned.log_weight_error <= 1e-9)) {
      std::fprintf(stderr, "error: the population's log-weights differ from log P(total = %lld) by %.3e (relative)\n",
                   static_cast<long long>(k), conditioned.log_weight_error);
      ok = false;
    }
    if (conditioned.max_abs_z > 6 || !conditioned.sums_ok) {
      std::fprintf(stderr, "error: the particles' posterior is off (largest |z| %.2f; units add up to k: %s)\n",
                   conditioned.max_abs_z, conditioned.sums_ok ? "yes" : "no");
      ok = false;
    }
    if (!(conditioned.marginal_error <= 1e-9)) {
      std::fprintf(stderr, "error: Graph::marginal's P(won | T = k) differs from the enumeration's by %.3e\n",
                   conditioned.marginal_error);
      ok = false;
    }
    if (!(worst <= 1e-12)) {
      std::fprintf(stderr, "error: the two laws differ by %.3e > 1e-12\n", worst);
      ok = false;
    }
    if (structural != sparse.size() || dense_points != sparse.size()) {
      std::fprintf(stderr, "error: the supports differ (dense %lld, sparse %lld, structural %lld)\n",
                   static_cast<long long>(dense_points), static_cast<long long>(sparse.size()),
                   static_cast<long long>(structural));
      ok = false;
    }
    if (gap && impossible != -std::numeric_limits<double>::infinity()) {
      std::fprintf(stderr, "error: observing %lld should be impossible\n", static_cast<long long>(total - 1));
      ok = false;
    }
    return ok ? 0 : 1;
  } catch (const cuda_error& e) {
    std::fprintf(stderr, "error: --device %s: %s (--device cpu runs the population on the host)\n", device.c_str(),
                 e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
