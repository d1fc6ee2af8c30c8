// Fault injection into index builds: tandem-index is killed (SIGKILL, through strace's syscall
// injection) at its first, second, ... rename or removal (the swap, then the clean-up of the old
// index and the spill files), until a build runs to the end. After every kill the
// index directory must hold a complete index, the old one or the new one, never none or a mix; the
// first build that finishes must leave nothing of the killed ones behind. Skips when strace is
// absent or may not trace (a container without ptrace).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/test_collection.h"

namespace tandem::testing {
namespace {

namespace fs = std::filesystem;

std::string TinyCorpus() {
  const char* source = std::getenv("TANDEM_SOURCE_DIR");
  return absl::StrCat(source != nullptr ? source : ".", "/tests/data/tiny/corpus.jsonl");
}

std::vector<std::string> BuildArgs(const std::string& output, const std::string& codec) {
  return {"build", "--input", TinyCorpus(), "--format", "beir",      "--output",
          output,  "--codec", codec,        "--quiet",  "--threads", "1"};
}

// What sits beside the index that a build leaves behind when it is killed.
std::vector<std::string> Leftovers(const fs::path& parent) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(parent)) {
    const std::string name = e.path().filename().string();
    if (absl::StrContains(name, ".tmp-") || absl::StrContains(name, ".old-") ||
        absl::StrContains(name, "tandem-spill")) {
      found.push_back(name);
    }
  }
  return found;
}

TEST(IndexSwapFaultTest, AKillAtEveryRenameOrRemovalLeavesAWholeIndex) {
  const std::string strace = FindInPath("strace");
  if (strace.empty()) GTEST_SKIP() << "strace is not installed";
  absl::StatusOr<ProcessResult> probe = RunProcess(strace, {"-qq", "-o", "/dev/null", "true"});
  if (!probe.ok() || probe->exit_code != 0) {
    GTEST_SKIP() << "strace may not trace here (no ptrace): " << (probe.ok() ? probe->err : "");
  }
  TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "index";
  absl::StatusOr<ProcessResult> first = RunProcess(TANDEM_INDEX_BINARY, BuildArgs(dir, "rice"));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->exit_code, 0) << first->err;

  const std::string renames = "rename,renameat,renameat2,unlink,unlinkat,rmdir";
  // LeakSanitizer cannot run under ptrace: in a sanitizer build (deploy/asan-test.sh) a traced
  // build that finished would die at exit with a LeakSanitizer error instead of exiting 0.
  const char* asan_options = std::getenv("ASAN_OPTIONS");
  const std::string no_leak_check =
      absl::StrCat("ASAN_OPTIONS=", asan_options != nullptr ? asan_options : "", ":detect_leaks=0");
  int kills = 0;
  bool finished = false;
  for (int n = 1; n <= 50 && !finished; ++n) {
    SCOPED_TRACE(absl::StrCat("killed at rename or removal ", n));
    std::vector<std::string> args = {"-f",
                                     "-qq",
                                     "-o",
                                     "/dev/null",
                                     "-e",
                                     "trace=" + renames,
                                     "-e",
                                     absl::StrCat("inject=", renames, ":signal=KILL:when=", n),
                                     "-E",
                                     no_leak_check,
                                     TANDEM_INDEX_BINARY};
    for (const std::string& a : BuildArgs(dir, "pfor")) args.push_back(a);
    absl::StatusOr<ProcessResult> run = RunProcess(strace, args);
    ASSERT_TRUE(run.ok()) << run.status();
    if (run->exit_code == 0) {
      finished = true;
    } else {
      ASSERT_EQ(run->exit_code, -9) << run->err;  // killed, not failed
      ++kills;
    }
    // Whatever happened, the directory holds a whole index: the old (rice) or the new (pfor).
    absl::StatusOr<std::unique_ptr<index::Index>> index = index::Index::Open(dir.string());
    ASSERT_TRUE(index.ok()) << index.status();
    const std::string codec = (*index)->manifest().codec;
    EXPECT_TRUE(codec == "rice" || codec == "pfor") << codec;
    if (finished) EXPECT_EQ(codec, "pfor");
  }
  EXPECT_TRUE(finished) << "the build never ran to its end";
  EXPECT_GE(kills, 3) << "the swap and its clean-up were never reached";
  // The build that finished removed what the killed ones left.
  EXPECT_THAT(Leftovers(dir.parent_path()), ::testing::IsEmpty());
}

}  // namespace
}  // namespace tandem::testing
