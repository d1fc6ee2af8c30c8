#include "gpu/layouts/random_lists.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tandem::gpu::testing {

std::vector<uint32_t> ValuesWithExceptions(size_t n, uint32_t b, double exception_fraction,
                                           std::mt19937_64& rng) {
  std::vector<uint32_t> values(n);
  const uint64_t fit = uint64_t{1} << b;  // values below fit have at most b bits
  std::uniform_int_distribution<uint64_t> small(0, fit - 1);
  for (uint32_t& v : values) v = static_cast<uint32_t>(small(rng));
  if (b >= 32) return values;
  const size_t exceptions = static_cast<size_t>(std::llround(exception_fraction * n));
  std::vector<size_t> where(n);
  std::iota(where.begin(), where.end(), 0);
  std::shuffle(where.begin(), where.end(), rng);
  std::uniform_int_distribution<uint32_t> length(b + 1, 32);
  for (size_t e = 0; e < exceptions && e < n; ++e) {
    const uint32_t len = length(rng);  // bit length len: [2^(len-1), 2^len)
    const uint64_t low = uint64_t{1} << (len - 1);
    values[where[e]] =
        static_cast<uint32_t>(std::uniform_int_distribution<uint64_t>(low, 2 * low - 1)(rng));
  }
  return values;
}

std::vector<uint32_t> RiceGaps(size_t n, uint32_t b, double mean_q, std::mt19937_64& rng) {
  std::vector<uint32_t> gaps(n);
  std::uniform_int_distribution<uint64_t> remainder(0, (uint64_t{1} << b) - 1);
  std::geometric_distribution<uint32_t> quotient(1.0 / (1.0 + std::max(mean_q, 1e-6)));
  const uint64_t max_q = b >= 32 ? 0 : (uint64_t{0xffffffff} >> b);
  for (uint32_t& g : gaps) {
    const uint64_t q = std::min<uint64_t>(quotient(rng), max_q);
    g = static_cast<uint32_t>((b >= 32 ? 0 : q << b) | remainder(rng));
  }
  return gaps;
}

std::vector<uint32_t> GeometricGaps(size_t n, double mean, std::mt19937_64& rng) {
  std::vector<uint32_t> gaps(n, 1);
  if (mean <= 1.0) return gaps;
  // 1 + a geometric count of failures with mean (mean - 1).
  std::geometric_distribution<uint32_t> failures(1.0 / mean);
  for (uint32_t& g : gaps) g = 1 + failures(rng);
  return gaps;
}

std::vector<uint32_t> ZipfFrequencies(size_t n, uint32_t max_freq, std::mt19937_64& rng) {
  std::vector<uint32_t> freqs(n);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (uint32_t& f : freqs) {
    // Pareto with exponent 1.5, floored: P(f >= x) ~ x^-1.5.
    const double x = std::pow(1.0 - unit(rng), -1.0 / 1.5);
    f = static_cast<uint32_t>(std::min<double>(std::floor(x), max_freq));
  }
  return freqs;
}

std::vector<uint32_t> DocidsFromGaps(const std::vector<uint32_t>& gaps) {
  std::vector<uint32_t> docids(gaps.size());
  uint32_t sum = 0;
  for (size_t i = 0; i < gaps.size(); ++i) docids[i] = sum += gaps[i];
  return docids;
}

}  // namespace tandem::gpu::testing
