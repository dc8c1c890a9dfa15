// libFuzzer target: the differential tester. Each input seeds one random program over counts
// (tests/runtime/random_programs.hpp), run in strict mode against the 50-digit enumeration of its joint law; a
// log-likelihood, marginal or draw off the enumeration, a refusal to stay exact (other than one past the joint laws'
// budget, which strict mode reports as such), or an exception is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "runtime/random_programs.hpp"

using namespace tally::test::programs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 9) return 0;
  std::uint64_t seed = 0;
  std::memcpy(&seed, data, sizeof seed);
  const int variables = 3 + data[8] % 6;  // 3 .. 8
  std::mt19937_64 gen(seed);
  const Program prog = random_program(gen, variables);
  bool draws = false;
  for (const Step& s : prog.steps) draws = draws || s.kind == Step::value;
  const std::size_t particles = draws ? 1 : 1 + (data[8] >> 6);  // 1 .. 4
  if (const Finding f = run_program(prog, particles, seed); f && !f.past_budget) {
    std::fprintf(stderr, "differential finding (%zu particles, seed %llu): %s\n", particles,
                 static_cast<unsigned long long>(seed), f.what.c_str());
    std::abort();
  }
  return 0;
}
