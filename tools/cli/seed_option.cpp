// --seed as llama.cpp takes it: a number to repeat a run, or -1 (the default) for a fresh
// random one each run, printed so that the run can be repeated.
#include <cstdio>
#include <limits>
#include <random>

#include "commands.h"

namespace tessera::cli {

void add_seed_option(CLI::App* cmd, int64_t& seed) {
  cmd->add_option("-s,--seed", seed,
                  "seed of the random draw (-1, the default: a random one, printed on stderr so that the run "
                  "can be repeated with -s)")
      ->check(NumberRange(int64_t(-1), std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
}

uint64_t resolve_seed(int64_t seed) {
  if (seed >= 0) return uint64_t(seed);
  // 31 bits: short to type back, and what llama.cpp's random seeds look like.
  return std::random_device{}() & 0x7fffffffu;
}

void report_seed(int64_t given, uint64_t used, bool sampling) {
  if (given >= 0 || !sampling) return;
  std::fprintf(stderr, "tessera: seed %llu (-s %llu repeats this run)\n", static_cast<unsigned long long>(used),
               static_cast<unsigned long long>(used));
}

}  // namespace tessera::cli
