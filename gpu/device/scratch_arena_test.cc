// ScratchArena's bookkeeping, host only (the arena never dereferences its memory).
#include "gpu/device/scratch_arena.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

TEST(ScratchArenaTest, AlignsTakesAndRollsBack) {
  std::vector<char> memory(4096);
  ScratchArena arena(memory.data(), memory.size());
  auto a = arena.Take<uint32_t>(3);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<char*>(*a), memory.data());
  const size_t mark = arena.mark();
  EXPECT_EQ(mark, ScratchArena::kAlignment);
  auto b = arena.Take<uint64_t>(100);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reinterpret_cast<char*>(*b) - memory.data(), 256);
  arena.Rollback(mark);
  auto c = arena.Take<char>(1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, reinterpret_cast<char*>(*b));
  EXPECT_EQ(arena.high_water(), 256u + 1024u);
}

TEST(ScratchArenaTest, ExhaustionIsResourceExhausted) {
  std::vector<char> memory(1024);
  ScratchArena arena(memory.data(), memory.size());
  EXPECT_EQ(arena.Take<float>(257).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(arena.Take<uint64_t>(~size_t{0} / 4).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(arena.Take<float>(256).ok());
  EXPECT_EQ(arena.Take<char>(1).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(arena.Take<char>(0).ok());
}

}  // namespace
}  // namespace tandem::gpu
