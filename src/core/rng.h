// splitmix64: a tiny, fast, well-mixed generator whose whole state is one integer (so a
// training checkpoint can store it), with uniform and normal draws on top. The same
// sequence on every platform, unlike the standard library's distributions.
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float((next() >> 40) + 1) * (1.0f / 16777217.0f); }  // (0, 1)
  /// Box-Muller.
  float normal() {
    const float u = uniform(), v = uniform();
    return std::sqrt(-2.0f * std::log(u)) * std::cos(6.2831853f * v);
  }
  /// An integer in [0, n), n > 0 (the modulo's bias, below n / 2^64, is irrelevant for
  /// picking training windows).
  uint64_t below(uint64_t n) { return next() % n; }

  uint64_t state() const { return s_; }
  void set_state(uint64_t s) { s_ = s; }

 private:
  uint64_t s_;
};

}  // namespace tessera
