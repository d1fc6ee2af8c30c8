// File: bm25.h
//
// BM25 as Lucene 8+ and Anserini compute it (Robertson et al.; Lucene's BM25Similarity without the
// constant (k1 + 1) factor):
//
//   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
//   norm(d)     = k1 * (1 - b + b * |d| / avgdl)
//   score(t, d) = weight(t) * idf(t) * tf / (tf + norm(d))
//
// Lucene stores |d| in a lossy one-byte form; Tandem uses exact lengths, which moves BM25 figures
// in the third decimal at most. Every engine (CPU, GPU, reference) calls these functions, in float,
// so their scores agree to float rounding.
#pragma once

#include <cmath>
#include <cstdint>

namespace tandem::index {

struct Bm25Params {
  float k1 = 0.9f;
  float b = 0.4f;
};

inline float Bm25Idf(uint64_t num_docs, uint64_t df) {
  const double n = static_cast<double>(num_docs);
  const double d = static_cast<double>(df);
  return static_cast<float>(std::log(1.0 + (n - d + 0.5) / (d + 0.5)));
}

inline float Bm25DocNorm(const Bm25Params& p, uint32_t doc_length, float avg_doc_length) {
  return p.k1 * (1.0f - p.b + p.b * static_cast<float>(doc_length) / avg_doc_length);
}

// `weighted_idf` is weight(t) * idf(t).
inline float Bm25Score(float weighted_idf, uint32_t tf, float doc_norm) {
  const float f = static_cast<float>(tf);
  return weighted_idf * (f / (f + doc_norm));
}

}  // namespace tandem::index
