// A list changed after its checksum was computed (one frequency rewritten, the file's frame and the
// lexicon left valid) answers DATA_LOSS naming its term, on every algorithm, where the decoding
// shows it: frequencies that do not sum to the lexicon's cf, or a posting scoring above its
// block's stored maximum, which pruning trusted.
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cpu/cursor.h"
#include "cpu/daat_engine.h"
#include "cpu/reference_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/bm25.h"
#include "index/index.h"
#include "index/index_writer.h"
#include "tests/test_collection.h"

namespace tandem::cpu {
namespace {

using index::Query;
using index::QueryMode;
using index::SearchContext;
using ::testing::HasSubstr;

constexpr uint32_t kDocs = 600;

enum class Damage {
  kNone,
  kRaisedFreq,     // "aaa" at doc 300 scores above its block's stored maximum; cf matches
  kLoweredFreq,    // "aaa" at doc 301 one lower, so the frequencies no longer sum to cf
  kCompactRaised,  // "bbb" (one block) at doc 300 above the lexicon's maximum; cf matches
  kHugeFirstFreq,  // "aaa" at doc 0 alone past cf
};

// "aaa": every document (5 blocks), tf 1 + d % 3. "bbb": every 10th (one compact block), tf
// 1 + d % 2. "ccc": every even document, tf 1.
absl::Status Build(const std::string& dir, Damage damage) {
  index::IndexWriterOptions options;
  options.codec = "pfor";
  auto writer = index::IndexWriter::Create(dir, options);
  if (!writer.ok()) return writer.status();
  index::IndexWriter& w = **writer;
  for (uint32_t d = 0; d < kDocs; ++d) {
    if (absl::Status s = w.AddDocument(absl::StrCat("doc", d), 20 + d % 50); !s.ok()) return s;
  }
  if (absl::Status s = w.FinishDocuments(); !s.ok()) return s;
  struct List {
    const char* term;
    std::vector<uint32_t> docids, freqs;
  };
  std::vector<List> lists = {{"aaa", {}, {}}, {"bbb", {}, {}}, {"ccc", {}, {}}};
  for (uint32_t d = 0; d < kDocs; ++d) {
    lists[0].docids.push_back(d);
    lists[0].freqs.push_back(1 + d % 3);
    if (d % 10 == 0) {
      lists[1].docids.push_back(d);
      lists[1].freqs.push_back(1 + d % 2);
    }
    if (d % 2 == 0) {
      lists[2].docids.push_back(d);
      lists[2].freqs.push_back(1);
    }
  }
  for (List& l : lists) {
    const float idf = index::Bm25Idf(kDocs, l.docids.size());
    std::string original;
    auto max_score =
        index::EncodePostingList(w.codec(), l.docids, l.freqs, w.doc_norms(), idf, &original);
    if (!max_score.ok()) return max_score.status();
    const uint64_t cf = std::accumulate(l.freqs.begin(), l.freqs.end(), uint64_t{0});
    std::vector<uint32_t> changed = l.freqs;
    const std::string term = l.term;
    bool raised = false;  // keep the original maxima, but cf of the changed frequencies
    if (term == "aaa" && damage == Damage::kRaisedFreq) changed[300] = 40, raised = true;
    if (term == "bbb" && damage == Damage::kCompactRaised) changed[30] = 40, raised = true;
    if (term == "aaa" && damage == Damage::kLoweredFreq) changed[301] -= 1;
    if (term == "aaa" && damage == Damage::kHugeFirstFreq) changed[0] = 1'000'000;
    if (changed == l.freqs) {
      if (absl::Status s = w.AddEncodedList(l.term, l.docids.size(), cf, *max_score, original);
          !s.ok()) {
        return s;
      }
      continue;
    }
    std::string encoded;
    auto changed_max =
        index::EncodePostingList(w.codec(), l.docids, changed, w.doc_norms(), idf, &encoded);
    if (!changed_max.ok()) return changed_max.status();
    uint64_t changed_cf = cf;
    if (raised) {
      changed_cf = std::accumulate(changed.begin(), changed.end(), uint64_t{0});
      if (!index::IsCompactList(l.docids.size())) {
        // The full form's block maxima follow the header and the last docIDs (FORMAT.md).
        const size_t blocks = (l.docids.size() + index::kBlockSize - 1) / index::kBlockSize;
        const size_t at = index::kFullListHeaderBytes + 4 * blocks;
        encoded.replace(at, 4 * blocks, original.substr(at, 4 * blocks));
      }
    }
    if (absl::Status s = w.AddEncodedList(l.term, l.docids.size(), changed_cf,
                                          raised ? *max_score : *changed_max, encoded);
        !s.ok()) {
      return s;
    }
  }
  return w.Finish();
}

Query MakeQuery(std::vector<std::string> terms, QueryMode mode) {
  Query q;
  for (auto& t : terms) q.terms.push_back({t, 1.0f});
  q.mode = mode;
  q.k = kDocs;  // nothing pruned: every posting is scored
  return q;
}

struct EngineRun {
  std::string name;
  DaatEngineOptions options;
  QueryMode mode;
};

std::vector<EngineRun> Runs() {
  std::vector<EngineRun> runs;
  for (bool block_max : {true, false}) {
    runs.push_back(
        {absl::StrCat("and block_max=", block_max), {.block_max_and = block_max}, QueryMode::kAnd});
  }
  for (OrAlgorithm a : AllOrAlgorithms()) {
    runs.push_back({std::string(OrAlgorithmName(a)), {.or_algorithm = a}, QueryMode::kOr});
  }
  return runs;
}

class DamagedListTest : public ::testing::Test {
 protected:
  std::unique_ptr<index::Index> Open(Damage damage) {
    const std::string dir = absl::StrCat(tmp_.path(), "/idx", static_cast<int>(damage));
    EXPECT_TRUE(Build(dir, damage).ok());
    auto index = index::Index::Open(dir);
    EXPECT_TRUE(index.ok()) << index.status();  // the damage is invisible to Open
    return index.ok() ? *std::move(index) : nullptr;
  }

  // Every run of `terms` answers DATA_LOSS naming `term` and saying `why`.
  void ExpectDataLoss(const index::Index& index, std::vector<std::string> terms,
                      const std::string& term, const std::string& why) {
    for (const EngineRun& run : Runs()) {
      SCOPED_TRACE(run.name);
      auto engine = *DaatEngine::Create(index, run.options);
      auto got = engine->Search(MakeQuery(terms, run.mode), SearchContext{});
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
      EXPECT_THAT(
          std::string(got.status().message()),
          HasSubstr(absl::StrCat("index '", index.directory(), "', list of term '", term, "': ")));
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(why));
    }
  }

  testing::TempDir tmp_;
};

TEST_F(DamagedListTest, ScoreAboveTheStoredBlockMaximumIsDataLoss) {
  auto index = Open(Damage::kRaisedFreq);
  ASSERT_NE(index, nullptr);
  ExpectDataLoss(*index, {"aaa", "ccc"}, "aaa",
                 "a posting scores above its block's stored maximum");
  // A query without the damaged list is answered.
  auto engine = *DaatEngine::Create(*index);
  EXPECT_TRUE(engine->Search(MakeQuery({"bbb", "ccc"}, QueryMode::kOr), SearchContext{}).ok());
}

TEST_F(DamagedListTest, CompactListScoringAboveTheListMaximumIsDataLoss) {
  auto index = Open(Damage::kCompactRaised);
  ASSERT_NE(index, nullptr);
  ExpectDataLoss(*index, {"bbb", "ccc"}, "bbb",
                 "a posting scores above its block's stored maximum");
}

TEST_F(DamagedListTest, FrequenciesNotSummingToCfAreDataLoss) {
  auto index = Open(Damage::kLoweredFreq);
  ASSERT_NE(index, nullptr);
  ExpectDataLoss(*index, {"aaa", "ccc"}, "aaa",
                 "the frequencies sum to 1199, the lexicon's cf is 1200");
  // inspect's full check sees the same damage.
  EXPECT_THAT(std::string(index->VerifyPostings().message()),
              HasSubstr("frequencies sum to 1199, the lexicon's cf is 1200"));
}

TEST_F(DamagedListTest, OneBlockPastCfIsCaughtBeforeTheListEnds) {
  auto index = Open(Damage::kHugeFirstFreq);
  ASSERT_NE(index, nullptr);
  auto list = index->postings(*index->Lookup("aaa"));
  ASSERT_TRUE(list.ok());
  Cursor cursor(*list, index->codec(), nullptr);
  EXPECT_TRUE(cursor.status().ok());
  EXPECT_EQ(cursor.freq(), 1'000'000u);
  EXPECT_EQ(cursor.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(cursor.status().message()),
              HasSubstr("block 0: the frequencies decoded so far sum to 1000254, past the "
                        "lexicon's cf 1200"));
}

TEST_F(DamagedListTest, UndamagedListsAnswerAsTheReference) {
  auto index = Open(Damage::kNone);
  ASSERT_NE(index, nullptr);
  ReferenceEngine reference(*index);
  for (const EngineRun& run : Runs()) {
    SCOPED_TRACE(run.name);
    auto engine = *DaatEngine::Create(*index, run.options);
    for (auto terms : std::vector<std::vector<std::string>>{
             {"aaa", "ccc"}, {"bbb", "ccc"}, {"aaa", "bbb", "ccc"}}) {
      for (uint32_t k : {1u, 10u, kDocs}) {
        Query q = MakeQuery(terms, run.mode);
        q.k = k;
        auto got = engine->Search(q, SearchContext{});
        auto want = reference.Search(q, SearchContext{});
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(want.ok());
        ASSERT_EQ(got->hits.size(), want->hits.size());
        for (size_t i = 0; i < got->hits.size(); ++i) {
          EXPECT_EQ(got->hits[i].docid, want->hits[i].docid);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem::cpu
