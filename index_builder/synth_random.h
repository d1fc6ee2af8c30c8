// File: synth_random.h
//
// The random numbers of the synthetic collection generator. Every posting list and every chunk of
// the document table draws from its own stream, seeded from (build seed, what it is), so threads
// can generate them in any order and a list depends only on the seed, the term and its target
// statistics (the same term gets the same list in a --vocabulary query-terms and a --vocabulary all
// build).
//
// The generator is xoshiro256++ (Blackman and Vigna, "Scrambled linear pseudorandom number
// generators", 2021), seeded through SplitMix64; both are fully specified, unlike the distributions
// of <random>, so the lists are the same with any standard library.
//
//   SynthRng rng(StreamSeed(seed, kListStream, TermHash("obama")));
//   uint32_t doc = rng.Below(num_docs);
#pragma once

#include <cmath>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// FNV-1a, 64 bits: a stable hash of a term's bytes.
inline uint64_t TermHash(absl::string_view term) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : term) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Stream kinds, so a list stream never equals a document-length stream.
inline constexpr uint64_t kListStream = 1;
inline constexpr uint64_t kLengthStream = 2;

// The seed of one stream: the build seed, the stream kind and the item (term hash or chunk number).
inline uint64_t StreamSeed(uint64_t seed, uint64_t kind, uint64_t item) {
  uint64_t s = seed;
  uint64_t a = SplitMix64(&s) ^ kind * 0xd6e8feb86659fd93ull;
  uint64_t b = SplitMix64(&a) ^ item;
  return SplitMix64(&b);
}

class SynthRng {
 public:
  explicit SynthRng(uint64_t seed) {
    for (uint64_t& w : s_) w = SplitMix64(&seed);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n), by multiply-shift (Lemire 2019); the bias is below n / 2^64.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

  // Uniform in (0, 1]: never 0, so its logarithm is finite.
  double OpenUnit() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }

  // Failures before the first success of Bernoulli trials, given inv_log_q = 1 / ln(1 - success
  // probability) (< 0): floor(ln U / ln(1 - p)), inversion of the geometric distribution.
  uint64_t Geometric(double inv_log_q) {
    const double x = std::log(OpenUnit()) * inv_log_q;
    return x < 9.0e18 ? static_cast<uint64_t>(x) : UINT64_MAX / 2;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace tandem::index_builder
