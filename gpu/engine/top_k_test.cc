// The two device top-k stages (gpu/query_ops.h) against a host sort, on scores with many ties and
// sizes that cross the multi-level heap's level boundaries (512, 512^2). Skips without a device.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/engine/query_ops.h"
#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

struct Expected {
  uint32_t docid;
  float score;
};

TEST(TopKTest, RadixAndHeapMatchHostSort) {
  absl::StatusOr<DeviceInfo> device = ProbeDevice();
  if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
  auto stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  const size_t arena_bytes = 64u << 20;
  auto arena_memory = DeviceBuffer<char>::Allocate(arena_bytes);
  ASSERT_TRUE(arena_memory.ok());
  uint64_t* host_keys = nullptr;
  ASSERT_EQ(
      cudaMallocHost(reinterpret_cast<void**>(&host_keys), TopKHostWords(10000) * sizeof(uint64_t)),
      cudaSuccess);
  std::mt19937 rng(5);
  for (uint32_t n : {1u, 7u, 511u, 512u, 513u, 5000u, 262144u, 262145u, 300000u}) {
    for (uint32_t k : {1u, 10u, 1000u, 10000u}) {
      // Scores from a small set (ties), a third unscored (0), docIDs distinct and shuffled.
      std::vector<float> scores(n);
      std::vector<uint32_t> docs(n);
      for (uint32_t i = 0; i < n; ++i) {
        scores[i] = rng() % 3 == 0 ? 0.0f : 0.5f + static_cast<float>(rng() % 50) * 0.25f;
        docs[i] = i * 3 + 1;
      }
      std::shuffle(docs.begin(), docs.end(), rng);
      std::vector<Expected> expected;
      for (uint32_t i = 0; i < n; ++i) {
        if (scores[i] > 0) expected.push_back({docs[i], scores[i]});
      }
      std::sort(expected.begin(), expected.end(), [](const Expected& a, const Expected& b) {
        return a.score > b.score || (a.score == b.score && a.docid < b.docid);
      });
      const size_t scored = expected.size();
      if (expected.size() > k) expected.resize(k);

      auto d_scores = DeviceBuffer<float>::Allocate(n);
      auto d_docs = DeviceBuffer<uint32_t>::Allocate(n);
      ASSERT_TRUE(d_scores.ok() && d_docs.ok());
      ASSERT_TRUE(d_scores->CopyFromHost(scores.data(), n, stream->get()).ok());
      ASSERT_TRUE(d_docs->CopyFromHost(docs.data(), n, stream->get()).ok());
      for (int method = 0; method < 2; ++method) {
        ScratchArena arena(arena_memory->data(), arena_bytes);
        uint64_t num_scored = 0;
        auto hits = method == 0 ? TopKRadix(d_scores->data(), d_docs->data(), n, k, host_keys,
                                            &num_scored, arena, stream->get())
                                : TopKHeap(d_scores->data(), d_docs->data(), n, k, host_keys,
                                           &num_scored, arena, stream->get());
        ASSERT_TRUE(hits.ok()) << hits.status();
        EXPECT_EQ(num_scored, scored) << "n " << n << " method " << method;
        ASSERT_EQ(hits->size(), expected.size()) << "n " << n << " k " << k << " method " << method;
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_EQ((*hits)[i].docid, expected[i].docid)
              << "n " << n << " k " << k << " rank " << i;
          ASSERT_EQ((*hits)[i].score, expected[i].score);
        }
      }
    }
  }
  cudaFreeHost(host_keys);
}

}  // namespace
}  // namespace tandem::gpu
