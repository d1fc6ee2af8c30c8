#include "base/stale_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tandem::base {
namespace {

namespace fs = std::filesystem;

// Above Linux's largest pid_max (2^22): no such process can exist.
constexpr long kGonePid = 4194400;

TEST(StaleFilesTest, SuffixNamesThisProcess) {
  const std::string a = PidTaggedSuffix(".tmp-");
  EXPECT_EQ(a.rfind(absl::StrCat(".tmp-", ::getpid(), "-"), 0), 0u) << a;
  EXPECT_EQ(a.size(), absl::StrCat(".tmp-", ::getpid(), "-").size() + 12);
  EXPECT_NE(a, PidTaggedSuffix(".tmp-"));
}

TEST(StaleFilesTest, RemovesOnlyTheLeftoversOfProcessesThatAreGone) {
  const fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat("stale-", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path gone_dir = dir / absl::StrCat("idx.tmp-", kGonePid, "-abc");
  const fs::path gone_file = dir / absl::StrCat("idx.tmp-", kGonePid, "-def");
  const fs::path live = dir / absl::StrCat("idx.tmp-", ::getpid(), "-abc");
  const fs::path init = dir / "idx.tmp-1-abc";  // init always exists
  const fs::path untagged = dir / "idx.tmp-9f3a2c4b1d00";
  const fs::path other = dir / absl::StrCat("other.tmp-", kGonePid, "-abc");
  const fs::path no_dash = dir / absl::StrCat("idx.tmp-", kGonePid);
  fs::create_directories(gone_dir / "nested");
  std::ofstream(gone_dir / "nested" / "postings.bin") << "x";
  std::ofstream(gone_file) << "x";
  for (const fs::path& p : {live, init, untagged, other, no_dash}) fs::create_directories(p);

  EXPECT_EQ(RemoveStaleSiblings(dir.string(), "idx.tmp-"), 2);
  EXPECT_FALSE(fs::exists(gone_dir));
  EXPECT_FALSE(fs::exists(gone_file));
  for (const fs::path& p : {live, init, untagged, other, no_dash}) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(RemoveStaleSiblings((dir / "missing").string(), "idx.tmp-"), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tandem::base
