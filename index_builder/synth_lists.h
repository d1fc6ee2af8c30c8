// File: synth_lists.h
//
// What the synthetic collection generator draws: one term's posting list and the document lengths.
//
//   docIDs   exactly df distinct docIDs, uniform over all df-subsets of [0, N) (or clustered,
//   below),
//            sorted; O(df) expected time, so a list costs the same whatever N is.
//   tf       1 + a geometric variable with mean (cf/df - 1), so the list's mean tf is the real
//   cf/df. lengths  each document's length drawn from the real histogram (exact proportions) and
//   multiplied
//            by the calibration factor s, rounded, at least 1.
//
// Clustering (--clustering F > 1) puts a term's postings into some of the collection's blocks of
// `cluster_docs` consecutive docIDs (a "site"), F times denser there than the term is overall (at
// most every document of the chosen blocks): the term occupies a fraction max(df/N, 1/F) of the
// blocks, chosen uniformly, and its docIDs are uniform within them. F = 1 is the uniform spread.
// Real collections ordered by URL look like this; it shows how docID order changes skipping.
//
//   SynthRng rng(StreamSeed(seed, kListStream, TermHash(term)));
//   GenerateList(ListSpec{.num_docs = n, .df = df, .mean_tf = cf / double(df)}, rng, &docids,
//   &freqs);
#pragma once

#include <cstdint>
#include <vector>

#include "index_builder/synth_inputs.h"
#include "index_builder/synth_random.h"

namespace tandem::index_builder {

// Exactly k distinct values of [0, n), each k-subset equally likely, in increasing order (k <= n).
void SampleSorted(uint32_t n, uint32_t k, SynthRng& rng, std::vector<uint32_t>* out);

struct ListSpec {
  uint32_t num_docs = 0;
  uint32_t df = 0;          // 1 <= df <= num_docs
  double mean_tf = 1.0;     // cf / df of the source statistics (>= 1)
  double clustering = 1.0;  // F >= 1; 1 = uniform
  uint32_t cluster_docs = 4096;
};

// One term's list: docids strictly increasing, freqs >= 1, both of size spec.df.
void GenerateList(const ListSpec& spec, SynthRng& rng, std::vector<uint32_t>* docids,
                  std::vector<uint32_t>* freqs);

// Draws lengths from a histogram, scaled by s: round(length * s), at least 1.
class LengthSampler {
 public:
  LengthSampler(const LengthHistogram& histogram, double scale);
  uint32_t Draw(SynthRng& rng) const;
  // The mean of the scaled distribution.
  double mean() const { return mean_; }

 private:
  std::vector<uint64_t> cumulative_;  // documents of bins 0..i
  std::vector<uint32_t> scaled_;
  double mean_ = 0;
};

// The lengths of documents 0..num_docs-1, drawn in chunks of 65,536 documents on `threads` threads;
// chunk c uses the stream StreamSeed(seed, kLengthStream, c), so the result is independent of the
// thread count.
std::vector<uint32_t> DrawDocumentLengths(const LengthSampler& sampler, uint32_t num_docs,
                                          uint64_t seed, int threads);

}  // namespace tandem::index_builder
