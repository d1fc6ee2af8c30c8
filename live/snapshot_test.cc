// A snapshot of segments with deletes answers as one index built from scratch over its live
// documents: same documents, same order, bit-equal scores, for AND, OR and AND+OR at several k,
// on every codec, with and without a filter.
#include "live/snapshot.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/temp_dir.h"
#include "gtest/gtest.h"
#include "index_builder/inverter.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using testing::Document;

absl::Status Build(const std::vector<Document>& docs, const std::string& dir,
                   const std::string& codec) {
  return testing::BuildDocuments(docs, dir, codec);
}

// Words with a skewed frequency, so that lists span blocks and block maxima prune.
std::vector<Document> RandomDocuments(std::mt19937& rng, int n, int first_id) {
  std::vector<Document> docs;
  for (int i = 0; i < n; ++i) {
    Document d;
    d.external_id = absl::StrCat("d", first_id + i);
    d.text = testing::RandomText(rng, {.max_words = 60, .p = 0.08, .vocabulary = 90});
    docs.push_back(std::move(d));
  }
  return docs;
}

std::vector<std::pair<std::string, float>> Named(const index::SearchResult& r,
                                                 const std::function<std::string(uint32_t)>& id) {
  std::vector<std::pair<std::string, float>> out;
  for (const index::Hit& h : r.hits) out.emplace_back(id(h.docid), h.score);
  return out;
}

class SnapshotTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SnapshotTest, AnswersAsAFreshBuildOverTheLiveDocuments) {
  std::mt19937 rng(7);
  base::TempDir tmp;
  // Three segments of 400, 150 and 20 documents, with deletes in the first two.
  std::vector<std::vector<Document>> parts = {
      RandomDocuments(rng, 400, 0), RandomDocuments(rng, 150, 400), RandomDocuments(rng, 20, 550)};
  std::vector<SegmentView> views;
  std::vector<Document> live;
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string dir = absl::StrCat(tmp.path(), "/_", p);
    ASSERT_TRUE(Build(parts[p], dir, GetParam()).ok());
    absl::StatusOr<std::shared_ptr<Segment>> segment = Segment::Open(dir, absl::StrCat("_", p), {});
    ASSERT_TRUE(segment.ok()) << segment.status();
    auto deleted = std::make_shared<std::vector<uint32_t>>();
    for (uint32_t d = 0; d < parts[p].size(); ++d) {
      if (p < 2 && rng() % 4 == 0) {
        deleted->push_back(d);
      } else {
        live.push_back(parts[p][d]);
      }
    }
    absl::StatusOr<SegmentView> view = SegmentView::Make(*segment, deleted);
    ASSERT_TRUE(view.ok()) << view.status();
    views.push_back(*std::move(view));
  }
  const Snapshot snapshot(std::move(views), 1);
  ASSERT_TRUE(Build(live, tmp.path() + "/fresh", GetParam()).ok());
  absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(tmp.path() + "/fresh", "f", {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const index::Index& want_index = (*fresh)->index();
  EXPECT_EQ(snapshot.num_docs(), want_index.num_docs());
  EXPECT_EQ(snapshot.avg_doc_length(), want_index.avg_doc_length());

  int compared = 0;
  for (int q = 0; q < 300; ++q) {
    index::Query query;
    const int terms = 1 + static_cast<int>(rng() % 4);
    for (int t = 0; t < terms; ++t) {
      query.terms.push_back({absl::StrCat("w", rng() % 95), t == 0 ? 1.0f : 1.5f});
    }
    query.mode = static_cast<index::QueryMode>(rng() % 3);
    query.k = std::vector<uint32_t>{1, 3, 10, 100}[rng() % 4];
    SCOPED_TRACE(
        absl::StrCat("query ", q, " mode ", index::QueryModeName(query.mode), " k ", query.k));
    absl::StatusOr<index::SearchResult> got = snapshot.Search(query, {});
    absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(query, {});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    const auto got_named =
        Named(*got, [&](uint32_t d) { return std::string(snapshot.external_id(d)); });
    const auto want_named =
        Named(*want, [&](uint32_t d) { return std::string(want_index.external_id(d)); });
    ASSERT_EQ(got_named, want_named);
    compared += static_cast<int>(want_named.size());
  }
  EXPECT_GT(compared, 1000);
}

TEST_P(SnapshotTest, AFilterOverTheSnapshotSelectsAsItDoesOverTheFreshBuild) {
  std::mt19937 rng(11);
  base::TempDir tmp;
  std::vector<Document> a = RandomDocuments(rng, 200, 0), b = RandomDocuments(rng, 100, 200);
  ASSERT_TRUE(Build(a, tmp.path() + "/_1", GetParam()).ok());
  ASSERT_TRUE(Build(b, tmp.path() + "/_2", GetParam()).ok());
  auto s1 = Segment::Open(tmp.path() + "/_1", "_1", {});
  auto s2 = Segment::Open(tmp.path() + "/_2", "_2", {});
  ASSERT_TRUE(s1.ok() && s2.ok());
  // Documents 0..9 of the first segment deleted; the filter allows every third snapshot docID.
  auto deleted = std::make_shared<std::vector<uint32_t>>();
  for (uint32_t d = 0; d < 10; ++d) deleted->push_back(d);
  std::vector<SegmentView> views;
  views.push_back(*SegmentView::Make(*s1, deleted));
  views.push_back(*SegmentView::Make(*s2, nullptr));
  const Snapshot snapshot(std::move(views), 1);
  std::vector<uint32_t> rows, fresh_rows;
  std::vector<Document> live;
  for (uint32_t d = 0; d < 300; ++d) {
    if (d < 10) continue;
    if (d % 3 == 0) {
      rows.push_back(d);
      fresh_rows.push_back(static_cast<uint32_t>(live.size()));
    }
    live.push_back(d < 200 ? a[d] : b[d - 200]);
  }
  ASSERT_TRUE(Build(live, tmp.path() + "/fresh", GetParam()).ok());
  auto fresh = Segment::Open(tmp.path() + "/fresh", "f", {});
  ASSERT_TRUE(fresh.ok());
  for (const char* word : {"w0", "w1", "w5", "w20"}) {
    index::Query query;
    query.terms = {{word, 1.0f}};
    query.k = 20;
    query.filter = std::make_shared<const filter::Bitmap>(
        *filter::FromRows(filter::BitmapCodec::kWah, snapshot.docid_limit(), rows));
    absl::StatusOr<index::SearchResult> got = snapshot.Search(query, {});
    query.filter = std::make_shared<const filter::Bitmap>(
        *filter::FromRows(filter::BitmapCodec::kWah, 290, fresh_rows));
    absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(query, {});
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(
        Named(*got, [&](uint32_t d) { return std::string(snapshot.external_id(d)); }),
        Named(*want, [&](uint32_t d) { return std::string((*fresh)->index().external_id(d)); }))
        << word;
  }
  // A filter over another number of documents is refused.
  index::Query query;
  query.terms = {{"w0", 1.0f}};
  query.filter = std::make_shared<const filter::Bitmap>(
      *filter::FromRows(filter::BitmapCodec::kWah, 290, fresh_rows));
  EXPECT_EQ(snapshot.Search(query, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SegmentViewTest, RefusesDeletesOutOfOrderOrPastTheSegment) {
  std::mt19937 rng(3);
  base::TempDir tmp;
  ASSERT_TRUE(Build(RandomDocuments(rng, 10, 0), tmp.path() + "/_1", "pfor").ok());
  auto segment = Segment::Open(tmp.path() + "/_1", "_1", {});
  ASSERT_TRUE(segment.ok());
  for (std::vector<uint32_t> bad : {std::vector<uint32_t>{3, 2}, {4, 4}, {10}}) {
    EXPECT_EQ(SegmentView::Make(*segment, std::make_shared<const std::vector<uint32_t>>(bad))
                  .status()
                  .code(),
              absl::StatusCode::kDataLoss);
  }
  EXPECT_EQ((*segment)->Find("d3"), std::vector<uint32_t>{3});
  EXPECT_TRUE((*segment)->Find("nope").empty());
}

INSTANTIATE_TEST_SUITE_P(Codecs, SnapshotTest,
                         ::testing::Values("pfor", "rice", "simdbp", "parapfor", "seglrc"));

}  // namespace
}  // namespace tandem::live
