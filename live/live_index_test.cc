// The live index against a model: random adds, replaces, deletes, refreshes, flushes and reopens;
// after every refresh each query's answer equals that of a fresh build over the model's live
// documents in the order of their latest write. Then versions, bad documents, and recovery.
#include "live/live_index.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/temp_dir.h"
#include "filter/filter.h"
#include "gtest/gtest.h"
#include "index_builder/inverter.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using testing::BuildDocuments;
using testing::Document;
using testing::RandomDocument;
using Model = testing::LiveModel;

absl::Status Build(const std::vector<Document>& docs, const std::string& dir,
                   const std::string& codec = "pfor") {
  return BuildDocuments(docs, dir, codec);
}

using testing::RandomQuery;
using testing::RankedIds;

// Compares `live`'s snapshot with a fresh build of `model` on random queries.
void ExpectAnswersOfAFreshBuild(const LiveIndex& live, const Model& model, std::mt19937& rng,
                                const std::string& scratch, const std::string& codec) {
  const std::vector<Document> docs = model.Live();
  std::shared_ptr<const Snapshot> snapshot = live.snapshot();
  ASSERT_EQ(snapshot->num_docs(), docs.size());
  if (docs.empty()) return;
  std::filesystem::remove_all(scratch);
  ASSERT_TRUE(Build(docs, scratch, codec).ok());
  absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(scratch, "fresh", {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  for (int q = 0; q < 40; ++q) {
    const index::Query query = RandomQuery(rng);
    absl::StatusOr<index::SearchResult> got = snapshot->Search(query, {});
    absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(query, {});
    ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
    ASSERT_EQ(RankedIds(*got, *snapshot), RankedIds(*want, (*fresh)->index()))
        << "query " << q << " k " << query.k;
  }
}

LiveIndexOptions ManualRefresh() {
  LiveIndexOptions options;
  options.refresh_interval = absl::ZeroDuration();
  options.background_merges = false;
  // Small levels, so that a few refreshes make a merge.
  options.merge_policy.floor_documents = 10;
  options.merge_policy.per_level = 3;
  options.merge_bytes_per_second = 0;
  return options;
}

class LiveIndexModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LiveIndexModelTest, EveryRefreshAnswersAsAFreshBuild) {
  std::mt19937 rng(42);
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  Model model;
  std::vector<Document> initial;
  for (int i = 0; i < 200; ++i) initial.push_back(RandomDocument(rng, absl::StrCat("d", i)));
  ASSERT_TRUE(Build(initial, dir, GetParam()).ok());
  for (const Document& d : initial) model.Put(d);
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir, ManualRefresh());
  ASSERT_TRUE(live.ok()) << live.status();
  int next_id = 200, refreshes = 0, reopens = 0, merges = 0;
  for (int step = 0; step < 100; ++step) {
    std::vector<Operation> ops;
    for (int n = static_cast<int>(rng() % 30); n > 0; --n) {
      const int what = static_cast<int>(rng() % 10);
      const std::string old_id = absl::StrCat("d", rng() % next_id);
      if (what < 4) {
        ops.push_back(Operation::Index(RandomDocument(rng, absl::StrCat("d", next_id++))));
      } else if (what < 7) {
        ops.push_back(Operation::Index(RandomDocument(rng, old_id)));  // a replace (or an add)
      } else {
        ops.push_back(Operation::Delete(old_id));
      }
    }
    absl::StatusOr<std::vector<absl::StatusOr<WriteOutcome>>> outcomes = (*live)->Write(ops);
    ASSERT_TRUE(outcomes.ok()) << outcomes.status();
    for (size_t i = 0; i < ops.size(); ++i) {
      ASSERT_TRUE((*outcomes)[i].ok());
      if (ops[i].kind == Operation::Kind::kIndex) {
        EXPECT_EQ(*(*outcomes)[i], WriteOutcome::kApplied);
        model.Put(ops[i].document);
      } else {
        EXPECT_EQ(*(*outcomes)[i],
                  model.Holds(ops[i].id()) ? WriteOutcome::kApplied : WriteOutcome::kNotFound)
            << ops[i].id();
        model.Remove(ops[i].id());
      }
    }
    const int action = static_cast<int>(rng() % 8);
    if (action < 2) {
      ASSERT_TRUE((*live)->Refresh().ok());
    } else if (action == 2) {
      ASSERT_TRUE((*live)->Refresh().ok());
      absl::StatusOr<bool> merged = (*live)->MaybeMerge();
      ASSERT_TRUE(merged.ok()) << merged.status();
      merges += *merged;
    } else if (action == 6) {
      ASSERT_TRUE((*live)->ForceMerge(1 + rng() % 3).ok());
      ++merges;
    } else if (action == 3) {
      ASSERT_TRUE((*live)->Flush().ok());
    } else if (action == 4) {
      // A restart without a flush: the log brings every acknowledged operation back.
      live->reset();
      live = LiveIndex::Open(dir, ManualRefresh());
      ASSERT_TRUE(live.ok()) << live.status();
      ++reopens;
    } else {
      continue;  // buffered: the next refresh shows them
    }
    ++refreshes;
    ExpectAnswersOfAFreshBuild(**live, model, rng, tmp.path() + "/fresh", GetParam());
  }
  EXPECT_GT(refreshes, 30);
  EXPECT_GE(reopens, 3);
  EXPECT_GT(merges, 5);
}

INSTANTIATE_TEST_SUITE_P(Codecs, LiveIndexModelTest,
                         ::testing::Values("pfor", "rice", "simdbp", "parapfor", "seglrc"));

class LiveIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(1);
    std::vector<Document> docs;
    for (int i = 0; i < 20; ++i) docs.push_back(RandomDocument(rng, absl::StrCat("d", i)));
    ASSERT_TRUE(Build(docs, dir_).ok());
  }
  std::unique_ptr<LiveIndex> Open() {
    absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir_, ManualRefresh());
    EXPECT_TRUE(live.ok()) << live.status();
    return live.ok() ? *std::move(live) : nullptr;
  }
  WriteOutcome WriteOne(LiveIndex& live, Operation op) {
    auto outcomes = live.Write({op});
    EXPECT_TRUE(outcomes.ok()) << outcomes.status();
    EXPECT_TRUE((*outcomes)[0].ok()) << (*outcomes)[0].status();
    return *(*outcomes)[0];
  }
  base::TempDir tmp_;
  const std::string dir_ = tmp_.path() + "/live";
};

TEST_F(LiveIndexTest, AnIndexBuiltOfflineIsUntouchedUntilItsFirstWrite) {
  std::unique_ptr<LiveIndex> live = Open();
  ASSERT_TRUE(live->Refresh().ok());
  ASSERT_TRUE(live->Flush().ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/wal"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/segments_1"));
  EXPECT_EQ(live->snapshot()->num_docs(), 20u);
  EXPECT_EQ(live->stats().segments, 1u);
}

TEST_F(LiveIndexTest, OlderVersionsAreSkippedAndDeletesKeepTheirVersion) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(5);
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 5)), WriteOutcome::kApplied);
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 4)), WriteOutcome::kStale);
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 5)), WriteOutcome::kStale);
  EXPECT_EQ(WriteOne(*live, Operation::Delete("x", 7)), WriteOutcome::kApplied);
  // A late add older than the delete does not bring the document back, across a restart too.
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 6)), WriteOutcome::kStale);
  ASSERT_TRUE(live->Flush().ok());
  live.reset();
  live = Open();
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 6)), WriteOutcome::kStale);
  EXPECT_EQ(WriteOne(*live, Operation::Delete("nobody")), WriteOutcome::kNotFound);
  EXPECT_EQ(WriteOne(*live, Operation::Index(RandomDocument(rng, "x"), 8)), WriteOutcome::kApplied);
  ASSERT_TRUE(live->Refresh().ok());
  EXPECT_TRUE(live->snapshot()->Find("x").has_value());
}

TEST_F(LiveIndexTest, ABadDocumentIsRefusedAndTheRestApply) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(9);
  Document no_id = RandomDocument(rng, "");
  Document bad_text = RandomDocument(rng, "bad");
  bad_text.text = "caf\xC3";  // a cut UTF-8 sequence
  Document unnamed = RandomDocument(rng, "unnamed");
  unnamed.fields = {{"", "v"}};
  auto outcomes = live->Write({Operation::Index(no_id), Operation::Index(RandomDocument(rng, "a")),
                               Operation::Index(bad_text), Operation::Index(unnamed),
                               Operation::Delete(std::string(kMaxIdBytes + 1, 'i'))});
  ASSERT_TRUE(outcomes.ok());
  EXPECT_EQ((*outcomes)[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*outcomes)[1].ok());
  EXPECT_EQ((*outcomes)[2].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*outcomes)[2].status().message().find("text"), std::string::npos);
  EXPECT_NE((*outcomes)[3].status().message().find("field"), std::string::npos);
  EXPECT_EQ((*outcomes)[4].status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(live->Refresh().ok());
  EXPECT_EQ(live->snapshot()->num_docs(), 21u);
}

TEST_F(LiveIndexTest, DeletingEveryDocumentLeavesAnEmptySearchableIndex) {
  std::unique_ptr<LiveIndex> live = Open();
  std::vector<Operation> ops;
  for (int i = 0; i < 20; ++i) ops.push_back(Operation::Delete(absl::StrCat("d", i)));
  ASSERT_TRUE(live->Write(ops).ok());
  ASSERT_TRUE(live->Flush().ok());
  EXPECT_EQ(live->snapshot()->num_docs(), 0u);
  index::Query query;
  query.terms = {{"w1", 1.0f}};
  absl::StatusOr<index::SearchResult> r = live->snapshot()->Search(query, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->hits.empty());
  live.reset();
  live = Open();
  EXPECT_EQ(live->snapshot()->num_docs(), 0u);
}

TEST_F(LiveIndexTest, SegmentsNoCommitPointNamesAreRemovedAtOpen) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(2);
  WriteOne(*live, Operation::Index(RandomDocument(rng, "new")));
  ASSERT_TRUE(live->Flush().ok());
  WriteOne(*live, Operation::Index(RandomDocument(rng, "newer")));
  ASSERT_TRUE(live->Refresh().ok());  // _2, named by no commit point
  live.reset();
  std::filesystem::create_directory(dir_ + "/_9.tmp-abc");  // a build cut short
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/_2"));
  live = Open();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/_9.tmp-abc"));
  // The log sealed "newer" again, into a segment of its own.
  EXPECT_TRUE(live->snapshot()->Find("newer").has_value());
  EXPECT_TRUE(live->snapshot()->Find("new").has_value());
}

TEST_F(LiveIndexTest, ADamagedCommitPointStopsTheOpenWithTheReason) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(3);
  WriteOne(*live, Operation::Index(RandomDocument(rng, "new")));
  ASSERT_TRUE(live->Flush().ok());
  live.reset();
  {
    std::fstream f(dir_ + "/segments_1", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('#');
  }
  absl::StatusOr<std::unique_ptr<LiveIndex>> reopened = LiveIndex::Open(dir_, ManualRefresh());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find("segments_1"), std::string::npos);
}

TEST_F(LiveIndexTest, TheBackgroundRefreshMakesWritesSearchable) {
  LiveIndexOptions options;
  options.refresh_interval = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir_, options);
  ASSERT_TRUE(live.ok());
  std::mt19937 rng(4);
  WriteOne(**live, Operation::Index(RandomDocument(rng, "soon")));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!(*live)->snapshot()->Find("soon") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE((*live)->snapshot()->Find("soon").has_value());
}

// Merges in the background while writers replace and delete and refreshes run: deletes made
// during a merge reach the merged segment, and the index ends as a fresh build of the model.
TEST(LiveIndexMergeTest, BackgroundMergesCarryTheDeletesMadeMeanwhile) {
  std::mt19937 rng(77);
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  Model model;
  std::vector<Document> initial;
  for (int i = 0; i < 50; ++i) initial.push_back(RandomDocument(rng, absl::StrCat("d", i)));
  ASSERT_TRUE(Build(initial, dir).ok());
  for (const Document& d : initial) model.Put(d);
  LiveIndexOptions options;
  options.refresh_interval = absl::Milliseconds(5);
  options.merge_policy.floor_documents = 5;
  options.merge_policy.per_level = 2;
  options.merge_bytes_per_second = 0;
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir, options);
  ASSERT_TRUE(live.ok()) << live.status();
  for (int round = 0; round < 300; ++round) {
    std::vector<Operation> ops;
    for (int n = 0; n < 5; ++n) {
      const std::string id = absl::StrCat("d", rng() % 120);
      if (rng() % 4 == 0) {
        ops.push_back(Operation::Delete(id));
        model.Remove(id);
      } else {
        ops.push_back(Operation::Index(RandomDocument(rng, id)));
        model.Put(ops.back().document);
      }
    }
    ASSERT_TRUE((*live)->Write(ops).ok());
    if (round % 50 == 0) absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE((*live)->Refresh().ok());
  // Let the merges that the last refreshes asked for finish.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    absl::StatusOr<bool> more = (*live)->MaybeMerge();
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
  }
  const LiveIndexStats stats = (*live)->stats();
  EXPECT_GT(stats.merges, 3u);
  EXPECT_GT(stats.bytes_merged, 0u);
  std::mt19937 queries(5);
  ExpectAnswersOfAFreshBuild(**live, model, queries, tmp.path() + "/fresh", "pfor");
  // And after a restart from the log and the last commit point.
  ASSERT_TRUE((*live)->Flush().ok());
  live->reset();
  live = LiveIndex::Open(dir, options);
  ASSERT_TRUE(live.ok()) << live.status();
  ExpectAnswersOfAFreshBuild(**live, model, queries, tmp.path() + "/fresh", "pfor");
}

TEST(MergePolicyTest, MergesRunsOfOneLevelAndMostlyDeletedSegments) {
  MergePolicyOptions options;
  options.floor_documents = 10;
  options.per_level = 3;
  // Three small segments after a large one: they merge; two do not.
  EXPECT_FALSE(FindMerge({{1000, 0}, {5, 0}, {8, 0}}, options));
  const auto run = FindMerge({{1000, 0}, {5, 0}, {8, 0}, {3, 0}}, options);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->begin, 1u);
  EXPECT_EQ(run->end, 4u);
  // A segment over a quarter deleted is rewritten alone, unless all of it is.
  const auto expunge = FindMerge({{1000, 0}, {100, 40}}, options);
  ASSERT_TRUE(expunge);
  EXPECT_EQ(expunge->begin, 1u);
  EXPECT_EQ(expunge->end, 2u);
  EXPECT_FALSE(FindMerge({{1000, 0}, {100, 100}}, options));
  // Segments before first_mergeable never merge.
  options.first_mergeable = 3;
  EXPECT_FALSE(FindMerge({{5, 0}, {5, 0}, {5, 0}}, options));
  EXPECT_EQ(ForcedMerges(5, 2).size(), 2u);
  EXPECT_EQ(ForcedMerges(5, 2)[0].end, 3u);
  EXPECT_TRUE(ForcedMerges(2, 2).empty());
  EXPECT_TRUE(ForcedMerges(3, 0).empty());
}

// Filters on a written index: each segment evaluates the expression against its own attributes,
// and the answers equal a fresh build's with the same attributes.
TEST(LiveIndexFilterTest, FiltersAnswerAsOnAFreshBuild) {
  std::mt19937 rng(31);
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  const std::vector<index_builder::AttributeSpec> specs = {
      {"label", index_builder::AttributeType::kKeyword},
      {"year", index_builder::AttributeType::kInteger}};
  auto with_attributes = [&](Document d) {
    d.attributes = {{"label", rng() % 3 == 0 ? "spam" : "ham"},
                    {"year", absl::StrCat(2000 + rng() % 6)}};
    return d;
  };
  auto build = [&](const std::vector<Document>& docs, const std::string& out) {
    return BuildDocuments(docs, out, "pfor", specs);
  };
  Model model;
  std::vector<Document> initial;
  for (int i = 0; i < 100; ++i) {
    initial.push_back(with_attributes(RandomDocument(rng, absl::StrCat("d", i))));
  }
  ASSERT_TRUE(build(initial, dir).ok());
  for (const Document& d : initial) model.Put(d);
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir, ManualRefresh());
  ASSERT_TRUE(live.ok()) << live.status();
  for (int step = 0; step < 12; ++step) {
    std::vector<Operation> ops;
    for (int n = 0; n < 15; ++n) {
      const std::string id = absl::StrCat("d", rng() % 160);
      if (rng() % 5 == 0) {
        ops.push_back(Operation::Delete(id));
        model.Remove(id);
      } else {
        ops.push_back(Operation::Index(with_attributes(RandomDocument(rng, id))));
        model.Put(ops.back().document);
      }
    }
    ASSERT_TRUE((*live)->Write(ops).ok());
    ASSERT_TRUE((*live)->Refresh().ok());
    if (step % 4 == 3) {
      ASSERT_TRUE((*live)->ForceMerge(2).ok());
    }
    const std::string fresh_dir = absl::StrCat(tmp.path(), "/fresh", step);
    ASSERT_TRUE(build(model.Live(), fresh_dir).ok());
    absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(fresh_dir, "fresh", {});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    std::shared_ptr<const Snapshot> snapshot = (*live)->snapshot();
    for (const char* text : {"label = spam", "year >= 2003", "label = ham AND NOT year = 2001",
                             "year IN (2000, 2005) OR label = spam"}) {
      absl::StatusOr<filter::FilterNode> expression = filter::ParseFilter(text);
      ASSERT_TRUE(expression.ok()) << expression.status();
      for (const char* word : {"w0", "w1", "w3"}) {
        index::Query query;
        query.terms = {{word, 1.0f}};
        query.k = 15;
        query.filter_expression = std::make_shared<const filter::FilterNode>(*expression);
        absl::StatusOr<index::SearchResult> got = snapshot->Search(query, {});
        ASSERT_TRUE(got.ok()) << got.status();
        absl::StatusOr<filter::Bitmap> allowed =
            filter::EvaluateFilter(*expression, *(*fresh)->index().attributes());
        ASSERT_TRUE(allowed.ok());
        query.filter_expression = nullptr;
        query.filter = std::make_shared<const filter::Bitmap>(*std::move(allowed));
        absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(query, {});
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_EQ(RankedIds(*got, *snapshot), RankedIds(*want, (*fresh)->index()))
            << text << " " << word << " step " << step;
      }
    }
  }
}

class LiveIndexRecoveryTest : public LiveIndexTest {};

// A refresh that cannot write its segment keeps every buffered operation for the next one, in
// order with those that came meanwhile.
TEST_F(LiveIndexRecoveryTest, AFailedSealLosesNothing) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(8);
  std::vector<Operation> ops;
  for (const char* id : {"a", "b", "d3"}) ops.push_back(Operation::Index(RandomDocument(rng, id)));
  ASSERT_TRUE(live->Write(ops).ok());
  // Segment _1's place is taken by a file: the seal fails and says so.
  { std::ofstream(dir_ + "/_1") << "not a segment"; }
  const absl::Status failed = live->Refresh();
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("_1"), std::string::npos) << failed;
  EXPECT_FALSE(live->snapshot()->Find("a").has_value());
  // Meanwhile "a" is replaced and "b" deleted; the next refresh shows the outcome of all five.
  Document a2 = RandomDocument(rng, "a");
  ASSERT_TRUE(live->Write({Operation::Index(a2), Operation::Delete("b")}).ok());
  ASSERT_TRUE(live->Refresh().ok());
  std::shared_ptr<const Snapshot> now = live->snapshot();
  ASSERT_TRUE(now->Find("a").has_value());
  EXPECT_FALSE(now->Find("b").has_value());
  EXPECT_EQ(now->num_docs(), 21u);  // 20, d3 replaced, a added
  const auto fields = now->stored_fields(*now->Find("a"));
  ASSERT_FALSE(fields.empty());
  EXPECT_EQ(fields[0].second, "title of a");
  // "a"'s newest version is the one searched: its text's words are found in it.
  index::Query query;
  query.terms = {{a2.text.substr(0, a2.text.find(' ')), 1.0f}};
  query.k = 100;
  absl::StatusOr<index::SearchResult> r = now->Search(query, {});
  ASSERT_TRUE(r.ok());
  bool found = false;
  for (const index::Hit& h : r->hits) found = found || now->external_id(h.docid) == "a";
  EXPECT_TRUE(found);
}

// A writer that fills the buffer seals it before it returns, whatever the refresh interval.
TEST_F(LiveIndexRecoveryTest, AFullBufferIsSealedByItsWriter) {
  LiveIndexOptions options = ManualRefresh();
  options.max_buffered_bytes = 100;
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir_, options);
  ASSERT_TRUE(live.ok());
  Document big;
  big.external_id = "big";
  big.text = std::string(200, 'x');
  ASSERT_TRUE((*live)->Write({Operation::Index(big)}).ok());
  EXPECT_TRUE((*live)->snapshot()->Find("big").has_value());
}

// Control characters are text (the analyzer separates words at them, as builds do); bytes that
// are not UTF-8 are refused.
TEST_F(LiveIndexRecoveryTest, ControlCharactersAreTextAndBadBytesAreRefused) {
  std::unique_ptr<LiveIndex> live = Open();
  Document ok;
  ok.external_id = "ctl";
  ok.text = std::string(
      "alpha\x01"
      "beta\x0c\x7f gamma\xc3\xa9",
      18);
  Document overlong;
  overlong.external_id = "overlong";
  overlong.text = "\xc0\xaf";
  Document surrogate;
  surrogate.external_id = "surrogate";
  surrogate.text = "\xed\xa0\x80";
  auto outcomes =
      live->Write({Operation::Index(ok), Operation::Index(overlong), Operation::Index(surrogate)});
  ASSERT_TRUE(outcomes.ok());
  EXPECT_TRUE((*outcomes)[0].ok()) << (*outcomes)[0].status();
  EXPECT_EQ((*outcomes)[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*outcomes)[2].status().code(), absl::StatusCode::kInvalidArgument);
}

// A full disk: the write that does not fit is RESOURCE_EXHAUSTED and not acknowledged, reads go
// on, a refresh that cannot write its segment keeps the buffer, and once there is room again
// every acknowledged operation is searchable.
TEST_F(LiveIndexRecoveryTest, AFullDiskRefusesWritesAndLosesNothingAcknowledged) {
  std::unique_ptr<LiveIndex> live = Open();
  std::mt19937 rng(12);
  ASSERT_TRUE(live->Write({Operation::Index(RandomDocument(rng, "before"))}).ok());
  std::vector<std::string> acknowledged = {"before"};
  uint64_t largest = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/wal")) {
    largest = std::max<uint64_t>(largest, e.file_size());
  }
  {
    testing::FileSizeLimit limit(largest + 64);  // the log's file has 64 bytes left
    ASSERT_TRUE(limit.ok());
    Document big = RandomDocument(rng, "big");
    big.text = std::string(4096, 'z');
    auto refused = live->Write({Operation::Index(big)});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
    // Reads go on from the last snapshot.
    EXPECT_EQ(live->snapshot()->num_docs(), 20u);
    // A small write still fits and is acknowledged.
    Document small;
    small.external_id = "s";
    small.text = "w1";
    auto fits = live->Write({Operation::Index(small)});
    if (fits.ok()) acknowledged.push_back("s");
    // The segment cannot be written: the refresh fails and keeps what it would have sealed.
    EXPECT_FALSE(live->Refresh().ok());
  }
  ASSERT_TRUE(live->Refresh().ok());
  for (const std::string& id : acknowledged) {
    EXPECT_TRUE(live->snapshot()->Find(id).has_value()) << id;
  }
  EXPECT_FALSE(live->snapshot()->Find("big").has_value());
  // And after a restart, from the log.
  live.reset();
  live = Open();
  for (const std::string& id : acknowledged) {
    EXPECT_TRUE(live->snapshot()->Find(id).has_value()) << id;
  }
}

}  // namespace
}  // namespace tandem::live
