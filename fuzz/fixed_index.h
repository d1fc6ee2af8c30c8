// File: fixed_index.h
//
// The small index that gpu_layouts_fuzzer checks its inputs against: the same random collection
// (tests/test_collection.h) built with the codec of each GPU docID codec, so that the seed corpus
// generator writes real GPU layouts of exactly the index the fuzzer opens.
#pragma once

#include <array>
#include <string>

#include "absl/status/status.h"
#include "tests/test_collection.h"

namespace tandem::fuzz {

// "pfor" gives GPU PForDelta layouts, "rice" GPU Rice (gpu::DefaultGpuCodec).
inline constexpr std::array<const char*, 2> kFixedIndexCodecs = {"pfor", "rice"};

inline absl::Status BuildFixedIndex(const std::string& codec, const std::string& dir) {
  testing::CollectionSpec spec;
  spec.num_docs = 200;  // "t0" still has a list of two blocks
  spec.vocabulary = 30;
  spec.mean_length = 8;
  spec.seed = 7;
  return testing::BuildIndex(testing::RandomDocuments(spec), dir, codec);
}

}  // namespace tandem::fuzz
