// File: engine_test_util.h
//
// What the GPU engine's tests against their oracle share (gpu_engine_test.cc for one query at a
// time, batch_engine_test.cc for batches): an index built from a random collection with the CPU
// engine over it, and random queries over that collection's vocabulary.
//
//   class MyTest : public OracleTest<std::string> {
//     void SetUp() override { BuildCollection({.num_docs = 3000, .vocabulary = 400}); }
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "cpu/daat_engine.h"
#include "gpu/device/device.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index/query.h"
#include "tests/test_collection.h"

namespace tandem::gpu {

// Query number i of a random series over "t0".."t{vocabulary-1}" (low numbers are frequent):
// 1 to 5 terms, half from the 20 most frequent and half from the whole vocabulary, with a repeated
// term, an absent term and weights mixed in by i. Mode and k are left at their defaults.
inline index::Query RandomQuery(uint32_t vocabulary, int i, std::mt19937_64& rng) {
  index::Query q;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int j = 0; j < n; ++j) {
    const uint32_t t = rng() % 2 == 0 ? rng() % 20 : rng() % vocabulary;
    q.terms.push_back({"t" + std::to_string(t), 1.0f});
  }
  if (i % 7 == 3) q.terms.push_back(q.terms.front());                  // repeated term
  if (i % 11 == 5) q.terms.push_back({"absent-term", 1.0f});           // absent term
  if (i % 5 == 1) q.terms.back().weight = 0.25f + (rng() % 8) * 0.5f;  // weights
  return q;
}

inline constexpr index::QueryMode kModes[] = {index::QueryMode::kAnd, index::QueryMode::kOr,
                                              index::QueryMode::kAndOr};

// Calls test(q) for `base` in every mode with k of 1, 10 and 1,000. Stops at the first fatal
// failure.
template <typename Test>
void ForEveryModeAndK(const index::Query& base, Test test) {
  for (index::QueryMode mode : kModes) {
    for (uint32_t k : {1u, 10u, 1000u}) {
      index::Query q = base;
      q.mode = mode;
      q.k = k;
      test(q);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// A fixture whose tests compare the GPU engine with cpu::DaatEngine over the index of a random
// collection. Skips when there is no CUDA device.
template <typename Param>
class OracleTest : public ::testing::TestWithParam<Param> {
 protected:
  // Builds the index of testing::RandomDocuments(spec) in a temporary directory, opens it and the
  // CPU engine over it.
  void BuildCollection(const testing::CollectionSpec& spec) {
    absl::StatusOr<DeviceInfo> device = ProbeDevice();
    if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
    dir_ = std::make_unique<testing::TempDir>();
    ASSERT_TRUE(
        testing::BuildIndex(testing::RandomDocuments(spec), dir_->path() + "/idx", spec.codec)
            .ok());
    auto idx = index::Index::Open(dir_->path() + "/idx");
    ASSERT_TRUE(idx.ok()) << idx.status();
    index_ = *std::move(idx);
    auto cpu = cpu::DaatEngine::Create(*index_);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
    vocabulary_ = spec.vocabulary;
  }

  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<index::Index> index_;
  std::unique_ptr<cpu::DaatEngine> cpu_;
  uint32_t vocabulary_ = 0;
};

}  // namespace tandem::gpu
