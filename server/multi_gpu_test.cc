// Several GPUs in one node (`--gpus all`): the engine spread over them answers every query exactly
// as the CPU engine, from several threads at once, and every device gets queries. Skips without
// two usable GPUs.
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scheduler/engine_spread.h"
#include "server/engine_factory.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

TEST(MultiGpuTest, EverySpreadAnswerEqualsTheCpuEngine) {
  if (!BuiltWithGpu()) GTEST_SKIP() << "built without CUDA";
  if (ResolveGpuDevices({.all = true}).size() < 2) GTEST_SKIP() << "fewer than two GPUs";
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments({.num_docs = 20000, .seed = 5}),
                                  dir.path() + "/i", "pfor")
                  .ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  for (bool batch : {true, false}) {
    SCOPED_TRACE(batch ? "batch path" : "per-query path");
    absl::StatusOr<EngineSet> engines = CreateEngines(
        **index, {.gpu = GpuMode::kRequired, .gpu_devices = {.all = true}, .gpu_batch = batch});
    ASSERT_TRUE(engines.ok()) << engines.status();
    ASSERT_GE(engines->gpu_count, 2);
    EXPECT_EQ(engines->gpu_batching.size(), batch ? static_cast<size_t>(engines->gpu_count) : 0u);
    const auto* spread = dynamic_cast<const scheduler::EngineSpread*>(engines->gpu.get());
    ASSERT_NE(spread, nullptr);
    std::atomic<int> mismatches{0}, checked{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 random(100 + t);
        for (int i = 0; i < 60; ++i) {
          index::Query q;
          q.mode = static_cast<index::QueryMode>(random() % 3);
          q.k = 1 + random() % 100;
          for (int n = 1 + random() % 4; n > 0; --n) {
            q.terms.push_back({absl::StrCat("t", random() % 300), 1.0f});
          }
          absl::StatusOr<index::SearchResult> gpu = engines->gpu->Search(q, {});
          absl::StatusOr<index::SearchResult> cpu = engines->cpu->Search(q, {});
          if (!gpu.ok() || !cpu.ok() || gpu->hits != cpu->hits) ++mismatches;
          ++checked;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(checked.load(), 480);
    for (uint64_t given : spread->queries_per_engine()) EXPECT_GT(given, 0u);
  }
}

}  // namespace
}  // namespace tandem::server
