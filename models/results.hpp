// The examples' one switch for machine-readable output: without --results they print only their human-readable
// report; with it, also their `RESULT key=value ...` lines (scripts/bench-populations parses them).
#pragma once

#include <CLI/CLI.hpp>

namespace tally::models {

/// Adds --results to app: it sets results (false by default).
inline void add_results_flag(CLI::App& app, bool& results) {
  app.add_flag("--results", results,
               "also print machine-readable lines, `RESULT key=value ...` (for scripts such as "
               "scripts/bench-populations); without it, only the human-readable output");
}

}  // namespace tally::models
