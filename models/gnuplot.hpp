// The examples' plotting: a pipe to gnuplot, and a clear error (a non-zero exit of the model) when no plot is drawn.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tally::models {

/// A plot that could not be drawn (path not writable, gnuplot missing or failing): the models' main() reports it
/// on stderr and exits non-zero, as for any other bad input.
struct plot_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A gnuplot string literal (single quotes; a quote inside is doubled).
inline std::string gnuplot_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

/// Whether a gnuplot is on the PATH.
inline bool gnuplot_found() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

/// Throws plot_error when `path` cannot be written or gnuplot is missing: the models call it before they run, so that
/// a plot that cannot be drawn fails at once, not after the computation.
inline void check_plot(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "ab"); f == nullptr)
    throw plot_error("cannot write the plot " + path + ": " + std::strerror(errno));
  else
    std::fclose(f);
  if (!gnuplot_found())
    throw plot_error("gnuplot not found: no plot can be drawn at " + path +
                     " (install gnuplot, e.g. apt-get install gnuplot-nox, or pass --plot '' for no plot)");
}

/// A pipe to a new gnuplot that will draw `path`. Throws plot_error when `path` cannot be written (checked here,
/// before gnuplot runs: gnuplot would only warn and write the image to standard output) or gnuplot is missing.
/// gnuplot's standard output is discarded; its error messages go to stderr.
inline FILE* open_gnuplot(const std::string& path) {
  check_plot(path);
  FILE* gp = popen("gnuplot > /dev/null", "w");
  if (gp == nullptr) throw plot_error("could not start gnuplot: no plot drawn at " + path);
  return gp;
}

/// Closes the pipe; throws plot_error when gnuplot failed to draw `path` (its own message is on stderr above).
inline bool close_gnuplot(FILE* gp, const std::string& path) {
  if (pclose(gp) != 0) throw plot_error("gnuplot failed: no plot drawn at " + path);
  return true;
}

}  // namespace tally::models
