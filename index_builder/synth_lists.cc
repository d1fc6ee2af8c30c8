#include "index_builder/synth_lists.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <numeric>
#include <thread>

#include "absl/container/flat_hash_set.h"

namespace tandem::index_builder {
namespace {

// Below this size a sample is drawn with Floyd's algorithm and sorted.
constexpr uint32_t kFloydMax = 64;
// From this inclusion probability on, one comparison per document beats one logarithm per posting.
constexpr double kDenseScan = 0.125;
// Up to this mean tf, Bernoulli trials (one comparison each) beat one logarithm per posting.
constexpr double kTrialsMaxMean = 4.0;
constexpr uint32_t kLengthChunk = 1 << 16;

// p * 2^64 as an integer threshold: Next() < threshold with probability p (0 <= p < 1).
uint64_t Threshold(double p) { return static_cast<uint64_t>(std::ldexp(p, 64)); }

// Floyd's algorithm (Bentley and Floyd, "A sample of brilliance", CACM 1987): k distinct values.
void Floyd(uint32_t n, uint32_t k, SynthRng& rng, std::vector<uint32_t>* out) {
  for (uint32_t j = n - k; j < n; ++j) {
    const uint32_t t = static_cast<uint32_t>(rng.Below(uint64_t{j} + 1));
    const bool taken = std::find(out->begin(), out->end(), t) != out->end();
    out->push_back(taken ? j : t);
  }
  std::sort(out->begin(), out->end());
}

// Each value of [0, n) independently with probability p, in increasing order.
void Bernoulli(uint32_t n, double p, SynthRng& rng, std::vector<uint32_t>* out) {
  if (p >= kDenseScan) {
    const uint64_t threshold = Threshold(p);
    for (uint32_t d = 0; d < n; ++d) {
      if (rng.Next() < threshold) out->push_back(d);
    }
    return;
  }
  // Geometric gaps between successes (the skip method of Devroye, "Non-Uniform Random Variate
  // Generation", 1986, chapter 10).
  const double inv_log_q = 1.0 / std::log1p(-p);
  for (uint64_t d = rng.Geometric(inv_log_q); d < n; d += 1 + rng.Geometric(inv_log_q)) {
    out->push_back(static_cast<uint32_t>(d));
  }
}

}  // namespace

// A Bernoulli(k/n) sample has about k values; removing a uniform random subset of the surplus, or
// adding uniform random non-members for the deficit, leaves every k-subset equally likely (the
// procedure commutes with any permutation of [0, n)). The surplus or deficit is O(sqrt(k)).
void SampleSorted(uint32_t n, uint32_t k, SynthRng& rng, std::vector<uint32_t>* out) {
  assert(k <= n);
  out->clear();
  if (k == 0) return;
  if (k == n) {
    out->resize(n);
    std::iota(out->begin(), out->end(), 0u);
    return;
  }
  if (k > n / 2) {  // the complement is the smaller sample; rejection below stays cheap
    std::vector<uint32_t> absent;
    SampleSorted(n, n - k, rng, &absent);
    out->reserve(k);
    size_t j = 0;
    for (uint32_t d = 0; d < n; ++d) {
      if (j < absent.size() && absent[j] == d) {
        ++j;
      } else {
        out->push_back(d);
      }
    }
    return;
  }
  if (k <= kFloydMax) {
    out->reserve(k);
    Floyd(n, k, rng, out);
    return;
  }
  out->reserve(k + 4 * static_cast<size_t>(std::sqrt(static_cast<double>(k))) + 16);
  Bernoulli(n, static_cast<double>(k) / n, rng, out);
  const uint32_t m = static_cast<uint32_t>(out->size());
  if (m > k) {
    std::vector<uint32_t> drop;
    SampleSorted(m, m - k, rng, &drop);
    size_t w = 0, j = 0;
    for (uint32_t i = 0; i < m; ++i) {
      if (j < drop.size() && drop[j] == i) {
        ++j;
      } else {
        (*out)[w++] = (*out)[i];
      }
    }
    out->resize(w);
  } else if (m < k) {
    absl::flat_hash_set<uint32_t> extra;
    while (extra.size() < k - m) {
      const uint32_t d = static_cast<uint32_t>(rng.Below(n));
      if (!std::binary_search(out->begin(), out->begin() + m, d)) extra.insert(d);
    }
    out->insert(out->end(), extra.begin(), extra.end());
    std::sort(out->begin() + m, out->end());
    std::inplace_merge(out->begin(), out->begin() + m, out->end());
  }
}

void GenerateList(const ListSpec& spec, SynthRng& rng, std::vector<uint32_t>* docids,
                  std::vector<uint32_t>* freqs) {
  const uint32_t n = spec.num_docs;
  const uint32_t df = spec.df;
  assert(df >= 1 && df <= n);
  if (spec.clustering <= 1.0 || df == n) {
    SampleSorted(n, df, rng, docids);
  } else {
    const uint32_t size = std::max(spec.cluster_docs, 1u);
    const uint32_t blocks = static_cast<uint32_t>((uint64_t{n} + size - 1) / size);
    const double share = std::max(static_cast<double>(df) / n, 1.0 / spec.clustering);
    uint64_t chosen = static_cast<uint64_t>(std::ceil(share * blocks));
    // At least ceil(df / size) + 1 blocks, so the chosen ones hold df documents even when one of
    // them is the short last block.
    chosen = std::min<uint64_t>(std::max<uint64_t>(chosen, (uint64_t{df} + size - 1) / size + 1),
                                blocks);
    std::vector<uint32_t> which;
    SampleSorted(blocks, static_cast<uint32_t>(chosen), rng, &which);
    uint64_t capacity = chosen * size;
    if (which.back() == blocks - 1) capacity -= uint64_t{blocks} * size - n;
    SampleSorted(static_cast<uint32_t>(capacity), df, rng, docids);
    for (uint32_t& v : *docids) v = which[v / size] * size + v % size;
  }

  freqs->resize(df);
  if (spec.mean_tf <= 1.0) {
    std::fill(freqs->begin(), freqs->end(), 1u);
  } else if (spec.mean_tf <= kTrialsMaxMean) {
    const uint64_t more = Threshold(1.0 - 1.0 / spec.mean_tf);
    for (uint32_t& f : *freqs) {
      f = 1;
      while (rng.Next() < more) ++f;
    }
  } else {
    const double inv_log_q = 1.0 / std::log1p(-1.0 / spec.mean_tf);
    for (uint32_t& f : *freqs) {
      f = 1 + static_cast<uint32_t>(std::min<uint64_t>(rng.Geometric(inv_log_q), UINT32_MAX / 2));
    }
  }
}

LengthSampler::LengthSampler(const LengthHistogram& histogram, double scale) {
  uint64_t total = 0;
  double sum = 0;
  for (size_t i = 0; i < histogram.counts.size(); ++i) {
    total += histogram.counts[i];
    cumulative_.push_back(total);
    const double scaled = std::max(1.0, std::round(histogram.lengths[i] * scale));
    scaled_.push_back(static_cast<uint32_t>(std::min(scaled, 4.0e9)));
    sum += static_cast<double>(scaled_.back()) * histogram.counts[i];
  }
  mean_ = total == 0 ? 0 : sum / total;
}

uint32_t LengthSampler::Draw(SynthRng& rng) const {
  const uint64_t x = rng.Below(cumulative_.back());
  return scaled_[std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin()];
}

std::vector<uint32_t> DrawDocumentLengths(const LengthSampler& sampler, uint32_t num_docs,
                                          uint64_t seed, int threads) {
  std::vector<uint32_t> lengths(num_docs);
  const uint32_t chunks = (num_docs + kLengthChunk - 1) / kLengthChunk;
  std::atomic<uint32_t> next{0};
  auto work = [&] {
    for (uint32_t c = next++; c < chunks; c = next++) {
      SynthRng rng(StreamSeed(seed, kLengthStream, c));
      const uint32_t end =
          static_cast<uint32_t>(std::min<uint64_t>(uint64_t{c + 1} * kLengthChunk, num_docs));
      for (uint32_t d = c * kLengthChunk; d < end; ++d) lengths[d] = sampler.Draw(rng);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && static_cast<uint32_t>(t) < chunks; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return lengths;
}

}  // namespace tandem::index_builder
