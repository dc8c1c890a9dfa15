// Electoral votes: the exact law of a candidate's total over 51 winner-take-all units, by the runtime's dense
// convolutions and by subset-sum enumeration (weighted_bernoulli_sum), which must agree; and -inf at once for 537.
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

#include "tally/distributions/bernoulli.hpp"
#include "tally/distributions/weighted_bernoulli_sum.hpp"
#include "gnuplot.hpp"
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

/// Draws the pmf of the total as impulses, with the majority line, into a PNG; false (and a message) on failure.
bool plot(const SparsePmf& d, std::int64_t majority, double win, const std::string& path) {
  FILE* gp = open_gnuplot();
  if (gp == nullptr) return false;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: the law of a candidate's electoral votes (51 units, illustrative win probabilities), "
               "by dense convolution in the runtime and by subset-sum enumeration, which must agree"};
  std::string data = TALLY_ELECTORAL_DATA, plot_path;
  int group = 16;  // 2^16 subsets per group on the CPU, folded; 24 sends 2^24 per group to a GPU if there is one
  app.add_option("--data", data, "CSV of unit,electoral_votes,win_probability")->capture_default_str();
  app.add_option("--group", group, "weights enumerated together by weighted_bernoulli_sum")
      ->check(CLI::Range(1, 36))
      ->capture_default_str();
  app.add_option("--plot", plot_path, "PNG file for a plot of the pmf (needs gnuplot; none by default)");
  CLI11_PARSE(app, argc, argv);
  try {
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
    bool ok = true;
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
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
