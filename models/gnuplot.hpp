// The examples' plotting: a pipe to gnuplot that says why when no plot can be drawn.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tally::models {

/// A gnuplot string literal (single quotes; a quote inside is doubled).
inline std::string gnuplot_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

/// A pipe to a new gnuplot, or nullptr after saying why on stdout (gnuplot missing or not started).
inline FILE* open_gnuplot() {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    std::printf("gnuplot not found: no plot drawn (install gnuplot, e.g. apt-get install gnuplot-nox)\n");
    return nullptr;
  }
  FILE* gp = popen("gnuplot", "w");
  if (gp == nullptr) std::printf("could not start gnuplot: no plot drawn\n");
  return gp;
}

/// Closes the pipe; false after saying so when gnuplot failed to draw `path`.
inline bool close_gnuplot(FILE* gp, const std::string& path) {
  if (pclose(gp) == 0) return true;
  std::printf("gnuplot failed: no plot drawn at %s\n", path.c_str());
  return false;
}

}  // namespace tally::models
