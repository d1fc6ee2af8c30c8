#include "index_builder/inverter.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

// Serves documents from memory; the terms are joined with spaces so the analyzer sees them again.
class VectorReader : public DocumentReader {
 public:
  explicit VectorReader(std::vector<std::vector<std::string>> docs) : docs_(std::move(docs)) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == docs_.size()) return false;
    doc->Clear();
    doc->external_id = absl::StrCat("doc", next_);
    doc->text = absl::StrJoin(docs_[next_], " ");
    doc->fields = {{"n", absl::StrCat(next_)}};
    ++next_;
    return true;
  }

 private:
  std::vector<std::vector<std::string>> docs_;
  size_t next_ = 0;
};

// Every list, decoded, as term -> (docids, freqs).
testing::DecodedLists Dump(const index::Index& idx) {
  absl::StatusOr<testing::DecodedLists> lists = testing::DecodeAllLists(idx);
  EXPECT_TRUE(lists.ok()) << lists.status();
  return lists.ok() ? *std::move(lists) : testing::DecodedLists();
}

class InverterTest : public ::testing::TestWithParam<int> {};

TEST_P(InverterTest, SpillAndMergeGivesTheSameIndexAsInMemoryInversion) {
  testing::CollectionSpec spec;
  spec.num_docs = 3000;
  auto docs = testing::RandomDocuments(spec);
  testing::TempDir tmp;
  ASSERT_TRUE(testing::BuildIndex(docs, tmp.path() + "/want", "pfor").ok());

  VectorReader reader(docs);
  InverterOptions options;
  options.threads = GetParam();
  options.memory_budget_bytes = 64 << 10;  // forces many spilled runs
  index::IndexWriterOptions w;
  absl::StatusOr<BuildSummary> s = BuildIndex(reader, tmp.path() + "/got", w, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->documents, 3000u);
  EXPECT_GT(s->spilled_runs, 4u);

  auto want = index::Index::Open(tmp.path() + "/want");
  auto got = index::Index::Open(tmp.path() + "/got", {.verify_lists = true});
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ((*got)->num_docs(), 3000u);
  EXPECT_EQ((*got)->stats().num_postings, (*want)->stats().num_postings);
  EXPECT_EQ(s->postings, (*want)->stats().num_postings);
  EXPECT_EQ(Dump(**got), Dump(**want));
  for (uint32_t d : {0u, 1234u, 2999u}) {
    EXPECT_EQ((*got)->external_id(d), absl::StrCat("doc", d));
    EXPECT_EQ((*got)->doc_length(d), (*want)->doc_length(d));
    ASSERT_EQ((*got)->stored_fields(d).size(), 1u);
    EXPECT_EQ((*got)->stored_fields(d)[0].second, absl::StrCat(d));
  }
  // No spill directory is left behind.
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(::testing::HasSubstr("spill")));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, InverterTest, ::testing::Values(1, 3));

TEST(InverterStrictTest, InputCheckStopsTheBuildAndLeavesNoIndex) {
  VectorReader reader({{"a"}, {"b"}, {"c"}});
  testing::TempDir tmp;
  InverterOptions options;
  int seen = 0;
  options.input_check = [&]() -> absl::Status {
    return ++seen == 2 ? absl::InvalidArgumentError("x:2: bad") : absl::OkStatus();
  };
  auto s = BuildIndex(reader, tmp.path() + "/out", {}, options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/out"));
}

TEST(InverterStrictTest, EmptyInputBuildsAnEmptyIndex) {
  VectorReader reader({});
  testing::TempDir tmp;
  auto s = BuildIndex(reader, tmp.path() + "/out", {}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->documents, 0u);
  EXPECT_TRUE(index::Index::Open(tmp.path() + "/out").ok());
}

}  // namespace
}  // namespace tandem::index_builder
