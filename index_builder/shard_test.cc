// tandem-index shard: shards of 1, 2, 3 and 7 answer every query, merged by (score desc, docID
// asc), exactly as the index they were cut from (same documents, bit-equal scores) on every OR
// algorithm; their stored maxima are the source's for the same postings and bound every score;
// documents keep their ids and fields; damaged or inconsistent shard statistics fail Open naming
// the file; bad requests fail with a clear status and write nothing.
#include "index_builder/shard.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cpu/daat_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/bm25.h"
#include "index/index_writer.h"
#include "index/posting_list.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint32_t kDocs = 1200;
constexpr uint32_t kVocabulary = 250;

// Builds the source collection: random Zipf documents ("doc{d}", some with stored fields), under
// `bm25` and `codec`.
absl::Status BuildSource(const std::vector<std::vector<std::string>>& docs, const std::string& dir,
                         const std::string& codec, index::Bm25Params bm25) {
  index::IndexWriterOptions options;
  options.codec = codec;
  options.bm25 = bm25;
  options.analyzer.stemmer = "none";
  options.source_format = "test";
  options.source_input = "/srv/corpora/shard-test.txt";
  absl::StatusOr<std::unique_ptr<index::IndexWriter>> writer =
      index::IndexWriter::Create(dir, options);
  if (!writer.ok()) return writer.status();
  for (uint32_t d = 0; d < docs.size(); ++d) {
    std::vector<std::pair<std::string, std::string>> fields;
    if (d % 3 != 0) fields.emplace_back("title", absl::StrCat("Title of ", d));
    if (d % 5 == 0) fields.emplace_back("url", absl::StrCat("https://example.org/", d));
    absl::Status s = (*writer)->AddDocument(absl::StrCat("doc", d),
                                            static_cast<uint32_t>(docs[d].size()), fields);
    if (!s.ok()) return s;
  }
  if (absl::Status s = testing::AddPostingLists(docs, **writer); !s.ok()) return s;
  return (*writer)->Finish();
}

std::unique_ptr<index::Index> OpenOrDie(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(dir);
  EXPECT_TRUE(idx.ok()) << idx.status();
  return idx.ok() ? *std::move(idx) : nullptr;
}

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CollectionSpec spec;
    spec.num_docs = kDocs;
    spec.vocabulary = kVocabulary;
    spec.mean_length = 30;
    spec.seed = 7;
    docs_ = testing::RandomDocuments(spec);
    source_dir_ = tmp_.path() + "/source";
    ASSERT_TRUE(BuildSource(docs_, source_dir_, "pfor", {}).ok());
    source_ = OpenOrDie(source_dir_);
    ASSERT_NE(source_, nullptr);
  }

  // Cuts the source into `shards` under `out` and opens them.
  std::vector<std::unique_ptr<index::Index>> Shard(uint32_t shards, const std::string& out) {
    absl::StatusOr<ShardSummary> summary =
        ShardIndex(*source_, out, {.shards = shards, .threads = 2});
    EXPECT_TRUE(summary.ok()) << summary.status();
    std::vector<std::unique_ptr<index::Index>> opened;
    if (!summary.ok()) return opened;
    EXPECT_EQ(summary->directories.size(), shards);
    for (uint32_t i = 0; i < shards; ++i) {
      opened.push_back(OpenOrDie(absl::StrCat(out, "/", ShardDirectoryName(i))));
      if (opened.back() == nullptr) opened.clear();
      if (opened.empty()) break;
    }
    return opened;
  }

  testing::TempDir tmp_;
  std::vector<std::vector<std::string>> docs_;
  std::string source_dir_;
  std::unique_ptr<index::Index> source_;
};

// What a broker does with the shards' answers: docIDs shifted to the collection's, merged by rank
// (score desc, docID asc), the top k kept.
std::vector<index::Hit> Merge(const std::vector<std::vector<index::Hit>>& per_shard,
                              const std::vector<uint32_t>& first_docids, uint32_t k) {
  std::vector<index::Hit> all;
  for (size_t s = 0; s < per_shard.size(); ++s) {
    for (index::Hit h : per_shard[s]) {
      h.docid += first_docids[s];
      all.push_back(h);
    }
  }
  std::sort(all.begin(), all.end(), index::RanksBefore);
  if (all.size() > k) all.resize(k);
  return all;
}

index::Query RandomQuery(std::mt19937_64& rng) {
  index::Query q;
  const uint32_t ks[] = {1, 10, 100, 1000};
  q.k = ks[rng() % 4];
  const uint32_t num_terms = 1 + rng() % 5;
  for (uint32_t i = 0; i < num_terms; ++i) {
    index::QueryTerm t;
    // Mostly frequent terms (long lists over every shard), some rare ones (in a few shards
    // only), some the collection lacks.
    const uint32_t pick = rng() % 10;
    const uint32_t term = pick < 6 ? rng() % 20 : pick < 9 ? rng() % kVocabulary : 1000 + rng() % 5;
    t.term = absl::StrCat("t", term);
    if (rng() % 3 == 0) t.weight = 0.25f + static_cast<float>(rng() % 12) / 4.0f;
    q.terms.push_back(t);
    if (rng() % 6 == 0) q.terms.push_back(t);  // a repeated term
  }
  switch (rng() % 4) {
    case 0:
      q.bm25 = {.k1 = 1.2f, .b = 0.75f};
      break;
    case 1:
      q.bm25 = {.k1 = 2.0f, .b = 1.0f};
      break;
    default:
      break;  // the index's own parameters: its norms and stored maxima apply
  }
  return q;
}

TEST_F(ShardTest, ShardsAnswerExactlyAsTheWholeIndex) {
  std::mt19937_64 rng(42);
  std::vector<index::Query> queries;
  for (int i = 0; i < 120; ++i) queries.push_back(RandomQuery(rng));
  // How many hits were compared, and how often AND+OR's merged AND pass sufficed or fell short.
  uint64_t hits_compared = 0, and_sufficed = 0, and_fell_short = 0;
  for (uint32_t shards : {1u, 2u, 3u, 7u}) {
    SCOPED_TRACE(absl::StrCat(shards, " shards"));
    const std::vector<std::unique_ptr<index::Index>> parts =
        Shard(shards, absl::StrCat(tmp_.path(), "/shards-", shards));
    ASSERT_EQ(parts.size(), shards);
    std::vector<uint32_t> first_docids;
    uint32_t next = 0;
    for (uint32_t s = 0; s < shards; ++s) {
      const index::ShardManifest* place = parts[s]->shard();
      ASSERT_NE(place, nullptr);
      EXPECT_EQ(place->shard, s);
      EXPECT_EQ(place->shards, shards);
      EXPECT_EQ(place->first_docid, next);
      EXPECT_EQ(place->collection_num_docs, kDocs);
      EXPECT_EQ(place->collection_index_id, source_->manifest().index_id);
      // Balanced: sizes differ by at most one.
      EXPECT_LE(parts[s]->num_docs(), kDocs / shards + 1);
      EXPECT_GE(parts[s]->num_docs(), kDocs / shards);
      EXPECT_EQ(parts[s]->bm25_num_docs(), kDocs);
      EXPECT_EQ(parts[s]->avg_doc_length(), source_->avg_doc_length());
      first_docids.push_back(next);
      next += parts[s]->num_docs();
    }
    EXPECT_EQ(next, kDocs);

    for (cpu::OrAlgorithm algorithm : cpu::AllOrAlgorithms()) {
      SCOPED_TRACE(cpu::OrAlgorithmName(algorithm));
      auto whole = cpu::DaatEngine::Create(*source_, {.or_algorithm = algorithm});
      ASSERT_TRUE(whole.ok());
      std::vector<std::unique_ptr<cpu::DaatEngine>> engines;
      for (const auto& part : parts) {
        auto engine = cpu::DaatEngine::Create(*part, {.or_algorithm = algorithm});
        ASSERT_TRUE(engine.ok());
        engines.push_back(*std::move(engine));
      }
      const auto run_shards = [&](const index::Query& q) {
        std::vector<std::vector<index::Hit>> hits;
        for (const auto& engine : engines) {
          auto r = engine->Search(q, {});
          EXPECT_TRUE(r.ok()) << r.status();
          hits.push_back(r.ok() ? r->hits : std::vector<index::Hit>{});
        }
        return hits;
      };
      for (size_t i = 0; i < queries.size(); ++i) {
        for (index::QueryMode mode :
             {index::QueryMode::kAnd, index::QueryMode::kOr, index::QueryMode::kAndOr}) {
          index::Query q = queries[i];
          q.mode = mode;
          SCOPED_TRACE(absl::StrCat("query ", i, " mode ", index::QueryModeName(mode), " k ", q.k));
          auto want = (*whole)->Search(q, {});
          ASSERT_TRUE(want.ok()) << want.status();
          std::vector<index::Hit> got;
          if (mode != index::QueryMode::kAndOr) {
            got = Merge(run_shards(q), first_docids, q.k);
          } else {
            // AND on every shard; when all of them together found fewer than k, OR on every one.
            index::Query and_query = q;
            and_query.mode = index::QueryMode::kAnd;
            const std::vector<std::vector<index::Hit>> and_hits = run_shards(and_query);
            size_t total = 0;
            for (const auto& h : and_hits) total += h.size();
            if (total >= q.k) {
              ++and_sufficed;
              got = Merge(and_hits, first_docids, q.k);
            } else {
              ++and_fell_short;
              index::Query or_query = q;
              or_query.mode = index::QueryMode::kOr;
              got = Merge(run_shards(or_query), first_docids, q.k);
            }
          }
          ASSERT_EQ(got.size(), want->hits.size());
          hits_compared += got.size();
          for (size_t h = 0; h < got.size(); ++h) {
            ASSERT_EQ(got[h].docid, want->hits[h].docid) << "rank " << h;
            // Bit-equal: the same floats summed in the same order.
            ASSERT_EQ(got[h].score, want->hits[h].score) << "rank " << h;
          }
        }
      }
    }
  }
  EXPECT_GT(hits_compared, 100000u);
  EXPECT_GT(and_sufficed, 100u);
  EXPECT_GT(and_fell_short, 100u);
}

TEST_F(ShardTest, ShardsKeepTheDocumentsAndTheSourcesSettings) {
  const std::vector<std::unique_ptr<index::Index>> parts = Shard(3, tmp_.path() + "/shards");
  ASSERT_EQ(parts.size(), 3u);
  const index::IndexManifest& m = source_->manifest();
  uint32_t collection_docid = 0;
  uint64_t postings = 0;
  for (const auto& part : parts) {
    EXPECT_EQ(part->manifest().codec, m.codec);
    EXPECT_EQ(part->manifest().block_size, m.block_size);
    EXPECT_EQ(part->manifest().analyzer.Describe(), m.analyzer.Describe());
    EXPECT_EQ(part->manifest().bm25.k1, m.bm25.k1);
    EXPECT_EQ(part->manifest().bm25.b, m.bm25.b);
    EXPECT_EQ(part->manifest().source_input, m.source_input);
    EXPECT_NE(part->manifest().index_id, m.index_id);
    for (uint32_t d = 0; d < part->num_docs(); ++d, ++collection_docid) {
      ASSERT_EQ(part->external_id(d), source_->external_id(collection_docid));
      ASSERT_EQ(part->doc_length(d), source_->doc_length(collection_docid));
      ASSERT_EQ(part->stored_fields(d), source_->stored_fields(collection_docid));
      // The norms are the collection's: the same floats.
      ASSERT_EQ(part->default_doc_norms()[d], source_->default_doc_norms()[collection_docid]);
    }
    postings += part->stats().num_postings;
  }
  EXPECT_EQ(collection_docid, kDocs);
  EXPECT_EQ(postings, source_->stats().num_postings);
  EXPECT_EQ(parts[1]->stored_fields(0).size(), source_->stored_fields(400).size());
}

TEST_F(ShardTest, StoredMaximaAreTheWholeIndexsForTheSamePostingsAndBoundEveryScore) {
  const std::vector<std::unique_ptr<index::Index>> parts = Shard(7, tmp_.path() + "/shards");
  ASSERT_EQ(parts.size(), 7u);
  uint32_t buffer[index::kBlockSize], fbuffer[index::kBlockSize];
  for (const auto& part : parts) {
    const uint32_t first = part->shard()->first_docid;
    absl::StatusOr<testing::DecodedLists> lists = testing::DecodeAllLists(*part);
    ASSERT_TRUE(lists.ok()) << lists.status();
    for (uint64_t i = 0; i < part->num_terms(); ++i) {
      const index::TermInfo t = part->term_at(i);
      const std::optional<index::TermInfo> whole = source_->Lookup(t.term);
      ASSERT_TRUE(whole.has_value()) << t.term;
      ASSERT_EQ(part->bm25_df(t), whole->df) << t.term;
      ASSERT_EQ(part->Bm25TermIdf(t), source_->Bm25TermIdf(*whole)) << t.term;
      const float idf = source_->Bm25TermIdf(*whole);
      const auto& [docids, freqs] = lists->at(t.term);
      // The single index's writer on these postings, with its norms and idf, stores these bytes:
      // the same list and block maxima.
      std::string encoded;
      absl::StatusOr<float> max_score = index::EncodePostingList(
          source_->codec(), docids, freqs, source_->default_doc_norms() + first, idf, &encoded);
      ASSERT_TRUE(max_score.ok());
      ASSERT_EQ(*max_score, t.max_score) << t.term;
      ASSERT_EQ(encoded.size(), t.list_bytes) << t.term;
      absl::StatusOr<index::PostingListView> list = part->postings(t);
      ASSERT_TRUE(list.ok());
      // Rank safety: every posting's score under the default BM25 is within its block's maximum
      // and the list's.
      for (uint32_t b = 0; b < list->num_blocks(); ++b) {
        ASSERT_TRUE(list->DecodeDocids(part->codec(), b, buffer).ok());
        ASSERT_TRUE(list->DecodeFreqs(part->codec(), b, fbuffer).ok());
        for (uint32_t j = 0; j < list->block_postings(b); ++j) {
          const float score =
              index::Bm25Score(idf, fbuffer[j], source_->default_doc_norms()[first + buffer[j]]);
          ASSERT_LE(score, list->block_max(b)) << t.term << " block " << b;
          ASSERT_LE(score, t.max_score) << t.term;
        }
      }
    }
  }
}

TEST_F(ShardTest, AnotherCodecAndBm25ParametersAreKept) {
  const std::string dir = tmp_.path() + "/simdbp";
  ASSERT_TRUE(BuildSource(docs_, dir, "simdbp", {.k1 = 1.2f, .b = 0.75f}).ok());
  std::unique_ptr<index::Index> source = OpenOrDie(dir);
  ASSERT_NE(source, nullptr);
  ASSERT_TRUE(ShardIndex(*source, tmp_.path() + "/simdbp-shards", {.shards = 2}).ok());
  std::unique_ptr<index::Index> part =
      OpenOrDie(tmp_.path() + "/simdbp-shards/" + ShardDirectoryName(1));
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->manifest().codec, "simdbp");
  EXPECT_EQ(part->manifest().bm25.k1, 1.2f);
  EXPECT_EQ(part->manifest().bm25.b, 0.75f);
  auto whole = cpu::DaatEngine::Create(*source);
  auto shard = cpu::DaatEngine::Create(*part);
  ASSERT_TRUE(whole.ok() && shard.ok());
  index::Query q;
  q.terms = {{"t3"}, {"t40"}};
  q.mode = index::QueryMode::kOr;
  q.k = 1000;
  q.bm25 = {.k1 = 1.2f, .b = 0.75f};
  auto want = (*whole)->Search(q, {});
  auto got = (*shard)->Search(q, {});
  ASSERT_TRUE(want.ok() && got.ok());
  std::vector<index::Hit> expected;
  const uint32_t first = part->shard()->first_docid;
  for (const index::Hit& h : want->hits) {
    if (h.docid >= first) expected.push_back({h.docid - first, h.score});
  }
  EXPECT_EQ(got->hits, expected);
  EXPECT_FALSE(expected.empty());
}

TEST_F(ShardTest, BadRequestsFailAndWriteNothing) {
  const std::string out = tmp_.path() + "/out";
  absl::StatusOr<ShardSummary> r = ShardIndex(*source_, out, {.shards = 0});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("--shards must be at least 1"));
  r = ShardIndex(*source_, out, {.shards = kDocs + 1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot cut 1200 documents into 1201 shards"));
  EXPECT_FALSE(fs::exists(out));

  // A shard is not cut again.
  ASSERT_TRUE(ShardIndex(*source_, out, {.shards = 3}).ok());
  std::unique_ptr<index::Index> part = OpenOrDie(out + "/shard-001");
  ASSERT_NE(part, nullptr);
  r = ShardIndex(*part, tmp_.path() + "/again", {.shards = 2});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("is already a shard (shard 1 of 3 of index " +
                                              source_->manifest().index_id));
  EXPECT_FALSE(fs::exists(tmp_.path() + "/again"));

  // An output holding something else is refused and left alone, the source included.
  r = ShardIndex(*source_, source_dir_, {.shards = 2});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(r.status().message(), HasSubstr("is not empty and holds no shards"));
  EXPECT_NE(OpenOrDie(source_dir_), nullptr);
  fs::create_directory(tmp_.path() + "/busy");
  std::ofstream(tmp_.path() + "/busy/notes.txt") << "keep me";
  r = ShardIndex(*source_, tmp_.path() + "/busy", {.shards = 2});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(fs::exists(tmp_.path() + "/busy/notes.txt"));
  EXPECT_FALSE(fs::exists(tmp_.path() + "/busy/shard-000"));

  // The shards of an earlier run are replaced whole; nothing temporary is left beside them.
  ASSERT_TRUE(ShardIndex(*source_, out, {.shards = 2}).ok());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"shard-000", "shard-001"}));
  for (const auto& e : fs::directory_iterator(tmp_.path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::AnyOf("source", "out", "busy", "again"));
  }
  // An empty directory is fine.
  fs::create_directory(tmp_.path() + "/empty");
  EXPECT_TRUE(ShardIndex(*source_, tmp_.path() + "/empty", {.shards = 1}).ok());
}

// The shard files of an index a test damages: collection_df.bin and the manifest, rewritten
// validly framed but with other contents.
class ShardOpenTest : public ShardTest {
 protected:
  void SetUp() override {
    ShardTest::SetUp();
    ASSERT_TRUE(ShardIndex(*source_, tmp_.path() + "/shards", {.shards = 4}).ok());
    dir_ = tmp_.path() + "/shards/shard-002";
    std::unique_ptr<index::Index> part = OpenOrDie(dir_);
    ASSERT_NE(part, nullptr);
    manifest_ = part->manifest();
    for (uint64_t i = 0; i < part->num_terms(); ++i) {
      const index::TermInfo t = part->term_at(i);
      dfs_.push_back(part->bm25_df(t));
      shard_dfs_.push_back(t.df);
    }
    // A manifest that names its files refuses any other collection_df.bin before its contents
    // are read (BoundCollectionDfsOfAnotherShardAreRefused); the checks below are those of a
    // manifest written before manifests named their files.
    named_files_ = *manifest_.files;
    manifest_.files.reset();
    part.reset();
    WriteManifest(manifest_);
  }

  void WriteFile(const char* name, index::FileKind kind, const std::string& payload) {
    auto f = index::FileWriter::Create(dir_ + "/" + name, kind);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(payload).ok());
    ASSERT_TRUE((*f)->Finish().ok());
  }
  void WriteDfs(const std::vector<uint32_t>& dfs) {
    WriteFile(index::kCollectionDfFile, index::FileKind::kCollectionDfs,
              index::EncodeCollectionDfs(dfs));
  }
  void WriteManifest(const index::IndexManifest& m) {
    WriteFile(index::kManifestFile, index::FileKind::kManifest, m.ToJson());
  }

  absl::Status OpenStatus() { return index::Index::Open(dir_).status(); }

  std::string dir_;
  index::IndexManifest manifest_;
  std::map<std::string, index::ManifestFile> named_files_;
  std::vector<uint32_t> dfs_, shard_dfs_;
};

TEST_F(ShardOpenTest, BoundCollectionDfsOfAnotherShardAreRefused) {
  index::IndexManifest m = manifest_;
  m.files = named_files_;
  WriteManifest(m);
  ASSERT_TRUE(OpenStatus().ok()) << OpenStatus();
  std::vector<uint32_t> dfs = dfs_;
  dfs[0] += 1;
  WriteDfs(dfs);
  absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("collection_df.bin' is not the one"));
  fs::remove(dir_ + "/" + index::kCollectionDfFile);
  s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("collection_df.bin' is missing"));
}

TEST_F(ShardOpenTest, RewrittenUnchangedOpens) {
  WriteDfs(dfs_);
  WriteManifest(manifest_);
  EXPECT_TRUE(OpenStatus().ok()) << OpenStatus();
}

TEST_F(ShardOpenTest, MissingOrDamagedStatisticsFileFailsNamingIt) {
  const std::string path = dir_ + "/" + index::kCollectionDfFile;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("checksum mismatch"));

  fs::resize_file(path, 20);
  s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));

  fs::remove(path);
  s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("is missing: the index is a shard"));
}

TEST_F(ShardOpenTest, InconsistentStatisticsFailNamingTheFile) {
  const std::string path = dir_ + "/" + index::kCollectionDfFile;
  std::vector<uint32_t> dfs = dfs_;
  dfs.pop_back();  // one term short
  WriteDfs(dfs);
  absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("not the collection document frequencies of the lexicon's"));

  dfs = dfs_;
  dfs.push_back(5);  // one term too many
  WriteDfs(dfs);
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kDataLoss);

  // Below the shard's own df.
  size_t term = 0;
  while (shard_dfs_[term] < 2) ++term;
  dfs = dfs_;
  dfs[term] = shard_dfs_[term] - 1;
  WriteDfs(dfs);
  s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("impossible with df"));

  // More than the shard's df plus every document of the other shards.
  dfs = dfs_;
  dfs[term] = shard_dfs_[term] + (kDocs - 300) + 1;
  WriteDfs(dfs);
  EXPECT_THAT(OpenStatus().message(), HasSubstr("impossible with df"));
}

TEST_F(ShardOpenTest, InconsistentManifestFailsNamingIt) {
  const std::string path = dir_ + "/" + index::kManifestFile;
  index::IndexManifest m = manifest_;
  m.shard->collection_num_docs = m.stats.num_docs - 1;  // fewer than the shard holds
  WriteManifest(m);
  absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("do not fit the collection's"));

  m = manifest_;
  m.shard->first_docid = kDocs - m.stats.num_docs + 1;  // runs past the collection's end
  WriteManifest(m);
  EXPECT_THAT(OpenStatus().message(), HasSubstr("do not fit the collection's"));

  m = manifest_;
  m.shard->shard = 4;  // of 4
  WriteManifest(m);
  EXPECT_THAT(OpenStatus().message(), HasSubstr("shard 4 of 4 does not exist"));

  m = manifest_;
  m.shard->collection_avg_doc_length = 0.0f;
  WriteManifest(m);
  EXPECT_THAT(OpenStatus().message(), HasSubstr("collection statistics are incomplete"));

  // Without the shard section, the statistics file does not belong.
  m = manifest_;
  m.shard.reset();
  WriteManifest(m);
  s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(dir_ + "/" + index::kCollectionDfFile));
  EXPECT_THAT(s.message(), HasSubstr("the index is not a shard"));
}

TEST_F(ShardOpenTest, WriterRefusesImpossibleCollectionDfs) {
  index::IndexWriterOptions options;
  options.shard = index::ShardManifest{.shard = 0,
                                       .shards = 2,
                                       .first_docid = 0,
                                       .collection_index_id = "abc",
                                       .collection_num_docs = 10,
                                       .collection_avg_doc_length = 3.0f};
  auto writer = index::IndexWriter::Create(tmp_.path() + "/w", options);
  ASSERT_TRUE(writer.ok());
  for (int d = 0; d < 4; ++d) ASSERT_TRUE((*writer)->AddDocument("d", 3).ok());
  const std::vector<uint32_t> docids = {0, 2}, freqs = {1, 1};
  EXPECT_FALSE((*writer)->AddPostingList("a", docids, freqs, 1).ok());  // below the list's df
  EXPECT_FALSE((*writer)->AddPostingList("b", docids, freqs, 9).ok());  // more than 2 + 6 others
  EXPECT_FALSE((*writer)->AddPostingList("c", docids, freqs, 0).ok());  // none given
  EXPECT_TRUE((*writer)->AddPostingList("d", docids, freqs, 8).ok());
  index::IndexWriterOptions no_place = options;
  no_place.shard->collection_index_id.clear();
  EXPECT_FALSE(index::IndexWriter::Create(tmp_.path() + "/w2", no_place).ok());
  // An index that is no shard takes no collection df.
  auto plain = index::IndexWriter::Create(tmp_.path() + "/w3", {});
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->AddDocument("d", 3).ok());
  EXPECT_FALSE((*plain)->AddPostingList("a", {0}, {1}, 1).ok());
}

}  // namespace
}  // namespace tandem::index_builder
