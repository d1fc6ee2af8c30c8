#include "live/segment_merge.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cpu/daat_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index_writer.h"
#include "index/prepared_query.h"
#include "index_builder/inverter.h"
#include "tests/test_collection.h"

namespace tandem::live {
namespace {

namespace fs = std::filesystem;
using index::Index;
using index_builder::AttributeSpec;
using index_builder::AttributeType;
using ::testing::HasSubstr;

struct TestDoc {
  std::string id;
  std::vector<std::string> terms;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::pair<std::string, std::string>> attributes;
};

// Serves documents from memory; the terms are joined with spaces so the analyzer sees them again.
class VectorReader : public index_builder::DocumentReader {
 public:
  explicit VectorReader(std::vector<TestDoc> docs) : docs_(std::move(docs)) {}
  absl::StatusOr<bool> Next(index_builder::Document* doc) override {
    if (next_ == docs_.size()) return false;
    doc->Clear();
    const TestDoc& d = docs_[next_++];
    doc->external_id = d.id;
    doc->text = absl::StrJoin(d.terms, " ");
    doc->fields = d.fields;
    doc->attributes = d.attributes;
    return true;
  }

 private:
  std::vector<TestDoc> docs_;
  size_t next_ = 0;
};

struct CorpusSpec {
  uint32_t docs = 300;
  uint64_t seed = 1;
  uint32_t max_length = 60;
  int year_values = 31;  // "year" takes values 1990 .. 1990 + year_values - 1
};

// Random words of a small vocabulary ("w0" most frequent, so long multi-block lists occur), random
// lengths (some empty), a stored field on some documents, a multi-valued keyword "label", an
// integer "year" (sometimes missing or not a number), and one word of the segment's own ("only"
// followed by the seed) in its first document.
std::vector<TestDoc> RandomDocs(const CorpusSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::vector<TestDoc> docs(spec.docs);
  for (uint32_t d = 0; d < spec.docs; ++d) {
    TestDoc& doc = docs[d];
    doc.id = absl::StrCat("s", spec.seed, "-d", d);
    const uint32_t length = rng() % (spec.max_length + 1);
    for (uint32_t t = 0; t < length; ++t) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      doc.terms.push_back(absl::StrCat("w", static_cast<int>(u * u * u * 200)));
    }
    if (d == 0) doc.terms.push_back(absl::StrCat("only", spec.seed));
    // Words past ASCII: the lexicons merge in byte order, as the writer orders terms.
    static const char* kWide[] = {"zürich", "éclair", "naïve", "日本", "zz"};
    if (rng() % 4 == 0) doc.terms.push_back(kWide[rng() % 5]);
    if (rng() % 3 == 0) doc.fields.emplace_back("title", absl::StrCat("title of ", doc.id));
    if (rng() % 5 == 0) doc.fields.emplace_back("url", absl::StrCat("http://x/", d));
    static const char* kLabels[] = {"red", "green", "blue", "gray", "z"};
    for (int l = rng() % 3; l > 0; --l) doc.attributes.emplace_back("label", kLabels[rng() % 5]);
    switch (rng() % 8) {
      case 0:
        break;
      case 1:
        doc.attributes.emplace_back("year", "unknown");
        break;
      default:
        doc.attributes.emplace_back("year", absl::StrCat(1990 + rng() % spec.year_values));
    }
  }
  return docs;
}

const std::vector<AttributeSpec> kAttributes = {{"label", AttributeType::kKeyword},
                                                {"year", AttributeType::kInteger},
                                                {"length", AttributeType::kInteger}};

struct BuildSpec {
  std::string codec = "pfor";
  std::vector<AttributeSpec> attributes = kAttributes;
  index::Bm25Params bm25;
};

BuildSpec WithCodec(std::string codec) {
  BuildSpec spec;
  spec.codec = std::move(codec);
  return spec;
}

BuildSpec WithAttributes(std::vector<AttributeSpec> attributes) {
  BuildSpec spec;
  spec.attributes = std::move(attributes);
  return spec;
}

std::unique_ptr<Index> Build(const std::vector<TestDoc>& docs, const std::string& dir,
                             const BuildSpec& spec = {}) {
  VectorReader reader(docs);
  index::IndexWriterOptions w;
  w.codec = spec.codec;
  w.bm25 = spec.bm25;
  index_builder::InverterOptions options;
  options.threads = 1;
  options.attributes = spec.attributes;
  absl::StatusOr<index_builder::BuildSummary> s =
      index_builder::BuildIndex(reader, dir, w, options);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(dir);
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *std::move(index) : nullptr;
}

// Every `every`-th document of the segment and a few at random, and document 0 (the one with the
// segment's own word).
std::vector<uint32_t> SomeDeletes(uint32_t num_docs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> deleted;
  for (uint32_t d = 0; d < num_docs; ++d) {
    if (d == 0 || d % 7 == 3 || rng() % 10 == 0) deleted.push_back(d);
  }
  return deleted;
}

std::vector<TestDoc> Live(const std::vector<TestDoc>& docs, const std::vector<uint32_t>& deleted) {
  std::vector<TestDoc> live;
  size_t next = 0;
  for (uint32_t d = 0; d < docs.size(); ++d) {
    if (next < deleted.size() && deleted[next] == d) {
      ++next;
    } else {
      live.push_back(docs[d]);
    }
  }
  return live;
}

// Whether some bucket of an integer field holds several values (then its documents' own values
// are gone).
bool SpansSeveralValues(const filter::AttributeField& field) {
  return std::any_of(field.buckets.begin(), field.buckets.end(),
                     [](const filter::IntegerBucket& b) { return b.lo < b.hi; });
}

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// The merged index against a fresh build: statistics, lexicon, lists with their skip tables, the
// document table, attributes, every file byte for byte, and the answers of the CPU engine.
void ExpectSameIndex(const Index& got, const Index& want) {
  EXPECT_EQ(got.stats().num_docs, want.stats().num_docs);
  EXPECT_EQ(got.stats().num_terms, want.stats().num_terms);
  EXPECT_EQ(got.stats().num_postings, want.stats().num_postings);
  EXPECT_EQ(got.stats().total_doc_length, want.stats().total_doc_length);
  EXPECT_EQ(Bits(got.stats().avg_doc_length), Bits(want.stats().avg_doc_length));
  EXPECT_EQ(got.manifest().codec, want.manifest().codec);
  EXPECT_TRUE(got.manifest().analyzer == want.manifest().analyzer);
  EXPECT_EQ(Bits(got.manifest().bm25.k1), Bits(want.manifest().bm25.k1));
  ASSERT_EQ(got.num_terms(), want.num_terms());
  for (uint64_t t = 0; t < want.num_terms(); ++t) {
    const index::TermInfo g = got.term_at(t), w = want.term_at(t);
    ASSERT_EQ(g.term, w.term) << t;
    EXPECT_EQ(g.df, w.df) << w.term;
    EXPECT_EQ(g.cf, w.cf) << w.term;
    EXPECT_EQ(Bits(g.max_score), Bits(w.max_score)) << w.term;
    EXPECT_EQ(g.list_bytes, w.list_bytes) << w.term;
    absl::StatusOr<index::PostingListView> gl = got.postings(g), wl = want.postings(w);
    ASSERT_TRUE(gl.ok() && wl.ok()) << w.term;
    ASSERT_EQ(gl->num_blocks(), wl->num_blocks()) << w.term;
    for (uint32_t b = 0; b < wl->num_blocks(); ++b) {
      EXPECT_EQ(gl->last_docid(b), wl->last_docid(b)) << w.term << " block " << b;
      EXPECT_EQ(Bits(gl->block_max(b)), Bits(wl->block_max(b))) << w.term << " block " << b;
    }
  }
  absl::StatusOr<testing::DecodedLists> gl = testing::DecodeAllLists(got);
  absl::StatusOr<testing::DecodedLists> wl = testing::DecodeAllLists(want);
  ASSERT_TRUE(gl.ok() && wl.ok());
  EXPECT_TRUE(*gl == *wl);
  ASSERT_EQ(got.num_docs(), want.num_docs());
  for (uint32_t d = 0; d < want.num_docs(); ++d) {
    EXPECT_EQ(got.doc_length(d), want.doc_length(d)) << d;
    EXPECT_EQ(got.external_id(d), want.external_id(d)) << d;
    EXPECT_EQ(got.stored_fields(d), want.stored_fields(d)) << d;
  }
  ASSERT_EQ(got.attributes() == nullptr, want.attributes() == nullptr);
  if (want.attributes() != nullptr) {
    EXPECT_TRUE(got.attributes()->Encode() == want.attributes()->Encode());
  }
  // Every file but the manifest (its id and time are the build's own) is the same bytes.
  ASSERT_TRUE(got.manifest().files.has_value() && want.manifest().files.has_value());
  EXPECT_TRUE(*got.manifest().files == *want.manifest().files);

  absl::StatusOr<std::unique_ptr<cpu::DaatEngine>> ge = cpu::DaatEngine::Create(got);
  absl::StatusOr<std::unique_ptr<cpu::DaatEngine>> we = cpu::DaatEngine::Create(want);
  ASSERT_TRUE(ge.ok() && we.ok());
  const std::vector<std::vector<std::string>> queries = {
      {"w0", "w1"}, {"w2", "w30"}, {"w5", "w9", "w60"}, {"w150", "w3"}, {"w0"}};
  for (const auto& terms : queries) {
    for (index::QueryMode mode : {index::QueryMode::kAnd, index::QueryMode::kOr}) {
      index::Query q;
      for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
      q.mode = mode;
      q.k = 20;
      absl::StatusOr<index::PreparedQuery> gp = index::PreparedQuery::Prepare(got, q);
      absl::StatusOr<index::PreparedQuery> wp = index::PreparedQuery::Prepare(want, q);
      ASSERT_TRUE(gp.ok() && wp.ok());
      absl::StatusOr<index::SearchResult> gr = (*ge)->Search(*gp, {});
      absl::StatusOr<index::SearchResult> wr = (*we)->Search(*wp, {});
      ASSERT_TRUE(gr.ok() && wr.ok());
      const std::string what =
          absl::StrCat(absl::StrJoin(terms, " "), " ", index::QueryModeName(mode));
      ASSERT_EQ(gr->hits.size(), wr->hits.size()) << what;
      for (size_t h = 0; h < wr->hits.size(); ++h) {
        EXPECT_EQ(gr->hits[h].docid, wr->hits[h].docid) << what << " rank " << h;
        EXPECT_EQ(Bits(gr->hits[h].score), Bits(wr->hits[h].score)) << what << " rank " << h;
      }
    }
  }
}

// Segments, their deletes, and the fresh build over their live documents.
struct Segments {
  std::vector<std::vector<TestDoc>> docs;
  std::vector<std::unique_ptr<Index>> indexes;
  std::vector<std::vector<uint32_t>> deleted;

  void Add(const std::string& dir, std::vector<TestDoc> d, std::vector<uint32_t> del,
           const BuildSpec& spec = {}) {
    indexes.push_back(Build(d, dir, spec));
    docs.push_back(std::move(d));
    deleted.push_back(std::move(del));
  }
  std::vector<MergeInput> Inputs() const {
    std::vector<MergeInput> inputs;
    for (size_t i = 0; i < indexes.size(); ++i) inputs.push_back({indexes[i].get(), deleted[i]});
    return inputs;
  }
  std::vector<TestDoc> LiveDocs() const {
    std::vector<TestDoc> all;
    for (size_t i = 0; i < docs.size(); ++i) {
      for (TestDoc& d : Live(docs[i], deleted[i])) all.push_back(std::move(d));
    }
    return all;
  }
};

std::unique_ptr<Index> Open(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(dir, {.verify_lists = true});
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *std::move(index) : nullptr;
}

// Paths beside `dir` whose names start with its own: the writer's temporary directories.
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> found;
  const std::string name = fs::path(dir).filename().string();
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path())) {
    const std::string n = e.path().filename().string();
    if (n.starts_with(name)) found.push_back(n);
  }
  return found;
}

// --- Unhappy paths first. ---

class SegmentMergeErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = Build(RandomDocs({.docs = 40, .seed = 1}), tmp_.path() + "/a");
    b_ = Build(RandomDocs({.docs = 30, .seed = 2}), tmp_.path() + "/b");
    ASSERT_TRUE(a_ && b_);
  }
  absl::Status Merge(std::vector<MergeInput> inputs) {
    absl::Status s = MergeSegments(inputs, out()).status();
    EXPECT_FALSE(fs::exists(out())) << s;
    EXPECT_THAT(Leftovers(out()), ::testing::IsEmpty());
    return s;
  }
  std::string out() const { return tmp_.path() + "/out"; }

  testing::TempDir tmp_;
  std::unique_ptr<Index> a_, b_;
};

TEST_F(SegmentMergeErrorTest, NoInputsIsInvalid) {
  EXPECT_EQ(Merge({}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SegmentMergeErrorTest, NullSegmentIsInvalid) {
  EXPECT_EQ(Merge({{a_.get(), {}}, {nullptr, {}}}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SegmentMergeErrorTest, DeletesMustBeSortedLocalDocids) {
  const std::vector<uint32_t> unsorted = {3, 2}, repeated = {4, 4}, past = {5, 40};
  for (const auto* deleted : {&unsorted, &repeated, &past}) {
    absl::Status s = Merge({{a_.get(), *deleted}, {b_.get(), {}}});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(a_->directory()));
  }
}

TEST_F(SegmentMergeErrorTest, NoLiveDocumentIsInvalid) {
  std::vector<uint32_t> all_a(40), all_b(30);
  std::iota(all_a.begin(), all_a.end(), 0u);
  std::iota(all_b.begin(), all_b.end(), 0u);
  absl::Status s = Merge({{a_.get(), all_a}, {b_.get(), all_b}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("deleted"));
}

TEST_F(SegmentMergeErrorTest, DifferentCodecsAreInvalidAndNamed) {
  std::unique_ptr<Index> rice =
      Build(RandomDocs({.docs = 20, .seed = 3}), tmp_.path() + "/rice", WithCodec("rice"));
  absl::Status s = Merge({{a_.get(), {}}, {rice.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(a_->directory()));
  EXPECT_THAT(s.message(), HasSubstr(rice->directory()));
  EXPECT_THAT(s.message(), HasSubstr("codec pfor and rice"));
}

TEST_F(SegmentMergeErrorTest, DifferentBm25ParametersAreInvalid) {
  BuildSpec spec;
  spec.bm25.k1 = 1.2f;
  std::unique_ptr<Index> other =
      Build(RandomDocs({.docs = 20, .seed = 3}), tmp_.path() + "/k", spec);
  absl::Status s = Merge({{a_.get(), {}}, {other.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("BM25"));
}

TEST_F(SegmentMergeErrorTest, AttributesInSomeSegmentsOnlyAreInvalid) {
  std::unique_ptr<Index> bare =
      Build(RandomDocs({.docs = 20, .seed = 3}), tmp_.path() + "/bare", WithAttributes({}));
  absl::Status s = Merge({{a_.get(), {}}, {bare.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("no attributes"));
}

TEST_F(SegmentMergeErrorTest, DifferentAttributeFieldsAreInvalid) {
  std::unique_ptr<Index> other = Build(RandomDocs({.docs = 20, .seed = 3}), tmp_.path() + "/f",
                                       WithAttributes({{"label", AttributeType::kKeyword}}));
  absl::Status s = Merge({{a_.get(), {}}, {other.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("year:integer"));
}

TEST_F(SegmentMergeErrorTest, ShardIsInvalid) {
  index::IndexWriterOptions options;
  options.shard = index::ShardManifest{.shard = 0,
                                       .shards = 2,
                                       .first_docid = 0,
                                       .collection_index_id = "c0ffee",
                                       .collection_num_docs = 10,
                                       .collection_avg_doc_length = 2.0f};
  const std::string dir = tmp_.path() + "/shard";
  {
    absl::StatusOr<std::unique_ptr<index::IndexWriter>> w =
        index::IndexWriter::Create(dir, options);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->AddDocument("d0", 2).ok());
    ASSERT_TRUE((*w)->AddPostingList("a", {0}, {2}, 3).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  std::unique_ptr<Index> shard = Open(dir);
  ASSERT_NE(shard, nullptr);
  absl::Status s = Merge({{shard.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("shard"));
}

TEST_F(SegmentMergeErrorTest, ExistingOutputIsNeverReplaced) {
  // An index there stays as it was.
  const std::string existing = tmp_.path() + "/b";
  absl::StatusOr<MergeSummary> s = MergeSegments(std::vector<MergeInput>{{a_.get(), {}}}, existing);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists) << s.status();
  std::unique_ptr<Index> still = Open(existing);
  ASSERT_NE(still, nullptr);
  EXPECT_EQ(still->manifest().index_id, b_->manifest().index_id);
  // So does a directory that holds anything else.
  const std::string other = tmp_.path() + "/other";
  fs::create_directory(other);
  std::ofstream(other + "/notes.txt") << "keep me";
  s = MergeSegments(std::vector<MergeInput>{{a_.get(), {}}}, other);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists) << s.status();
  EXPECT_TRUE(fs::exists(other + "/notes.txt"));
  EXPECT_FALSE(fs::exists(other + "/manifest.bin"));
  // An empty directory takes the merge.
  const std::string empty = tmp_.path() + "/empty";
  fs::create_directory(empty);
  s = MergeSegments(std::vector<MergeInput>{{a_.get(), {}}}, empty);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(Open(empty), nullptr);
}

TEST_F(SegmentMergeErrorTest, CancelledMergeLeavesNothing) {
  // A merge that runs to its end calls check this many times.
  int calls = 0;
  MergeOptions options;
  options.check_interval_bytes = 256;
  options.check = [&] {
    ++calls;
    return absl::OkStatus();
  };
  const std::vector<MergeInput> inputs = {{a_.get(), {}}, {b_.get(), {}}};
  ASSERT_TRUE(MergeSegments(inputs, tmp_.path() + "/whole", options).ok());
  const int total = calls;
  ASSERT_GT(total, 10);
  // Stopped at each of them in turn: while documents, then lists are written, and last before
  // the files are finished.
  absl::StatusOr<MergeSummary> s;
  for (int stop = 1; stop <= total; ++stop) {
    calls = 0;
    options.check = [&] {
      return ++calls == stop ? absl::CancelledError("shutting down") : absl::OkStatus();
    };
    s = MergeSegments(inputs, out(), options);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kCancelled) << stop << ": " << s.status();
    EXPECT_EQ(calls, stop);
    EXPECT_FALSE(fs::exists(out())) << stop;
    EXPECT_THAT(Leftovers(out()), ::testing::IsEmpty()) << stop;
  }

  // Stopped while the throttle holds it back, too.
  const auto start = std::chrono::steady_clock::now();
  options.max_bytes_per_second = 1000;  // the merge would take minutes
  options.check_interval_bytes = uint64_t{1} << 40;
  options.check = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(200)
               ? absl::CancelledError("shutting down")
               : absl::OkStatus();
  };
  s = MergeSegments(inputs, out(), options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kCancelled) << s.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_THAT(Leftovers(out()), ::testing::IsEmpty());
}

TEST_F(SegmentMergeErrorTest, IntegerBucketsOfSeveralValuesCannotBeRebuilt) {
  // About 1,000 years of 400 values: the segment's buckets span several years each.
  std::unique_ptr<Index> wide =
      Build(RandomDocs({.docs = 1200, .seed = 4, .year_values = 400}), tmp_.path() + "/wide");
  ASSERT_NE(wide, nullptr);
  const filter::AttributeField* year = wide->attributes()->Find("year");
  ASSERT_NE(year, nullptr);
  ASSERT_TRUE(SpansSeveralValues(*year));
  absl::Status s = Merge({{wide.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"year\""));
}

TEST_F(SegmentMergeErrorTest, LengthFieldThatIsNotTheLengthsCannotBeRebuilt) {
  // Documents of 2 and 1 terms whose "length" says 5.
  filter::AttributeField length;
  length.name = "length";
  length.kind = filter::AttributeKind::kInteger;
  length.buckets = {{5, 5}};
  const std::vector<uint32_t> bucket_of_row = {0, 0};
  absl::StatusOr<filter::BitmapColumns> columns =
      filter::BuildBitmaps(filter::BitmapCodec::kPlwah, 2, bucket_of_row);
  ASSERT_TRUE(columns.ok()) << columns.status();
  length.columns = *std::move(columns);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(length));
  absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> attributes =
      filter::AttributeIndex::Create(2, filter::BitmapCodec::kPlwah, std::move(fields));
  ASSERT_TRUE(attributes.ok()) << attributes.status();
  const std::string dir = tmp_.path() + "/lengths";
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"a"}}, dir, "pfor", *std::move(attributes)).ok());
  std::unique_ptr<Index> segment = Open(dir);
  ASSERT_NE(segment, nullptr);
  absl::Status s = Merge({{segment.get(), {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not hold the document's length"));
}

// --- The merged index is a fresh build. ---

class SegmentMergeCodecTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SegmentMergeCodecTest, EqualsAFreshBuildOfTheLiveDocuments) {
  testing::TempDir tmp;
  Segments segs;
  const BuildSpec spec = WithCodec(GetParam());
  const uint32_t sizes[] = {300, 250, 200};
  for (uint64_t i = 0; i < 3; ++i) {
    segs.Add(absl::StrCat(tmp.path(), "/s", i), RandomDocs({.docs = sizes[i], .seed = 10 + i}),
             SomeDeletes(sizes[i], 100 + i), spec);
  }
  MergeOptions options;
  options.threads = 3;
  absl::StatusOr<MergeSummary> s = MergeSegments(segs.Inputs(), tmp.path() + "/merged", options);
  ASSERT_TRUE(s.ok()) << s.status();
  std::unique_ptr<Index> want = Build(segs.LiveDocs(), tmp.path() + "/want", spec);
  std::unique_ptr<Index> got = Open(tmp.path() + "/merged");
  ASSERT_TRUE(got && want);
  ExpectSameIndex(*got, *want);
  // The segments' own words lived only in deleted documents.
  EXPECT_FALSE(got->Lookup("only10").has_value());
  // Terms past ASCII merged in byte order (the writer refuses any other).
  int wide = 0;
  for (uint64_t t = 0; t < got->num_terms(); ++t) {
    const std::string term = got->term_at(t).term;
    wide += std::any_of(term.begin(), term.end(), [](char c) { return (c & 0x80) != 0; });
  }
  EXPECT_GE(wide, 3);
  EXPECT_EQ(s->documents, want->num_docs());
  EXPECT_EQ(s->deleted_dropped,
            segs.deleted[0].size() + segs.deleted[1].size() + segs.deleted[2].size());
  EXPECT_EQ(s->terms, want->num_terms());
  EXPECT_EQ(s->postings, want->stats().num_postings);
  EXPECT_GT(s->bytes_read, 0u);
  EXPECT_EQ(s->bytes_written, fs::file_size(tmp.path() + "/merged/manifest.bin") +
                                  fs::file_size(tmp.path() + "/merged/lexicon.bin") +
                                  fs::file_size(tmp.path() + "/merged/postings.bin") +
                                  fs::file_size(tmp.path() + "/merged/documents.bin") +
                                  fs::file_size(tmp.path() + "/merged/attributes.bin"));
  EXPECT_EQ(s->throttled_seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, SegmentMergeCodecTest,
                         ::testing::ValuesIn(index::BlockCodecNames()),
                         [](const auto& info) { return info.param; });

TEST(SegmentMergeTest, BlockCodecsAreTheFiveKnown) {
  EXPECT_THAT(index::BlockCodecNames(),
              ::testing::ElementsAre("parapfor", "pfor", "rice", "seglrc", "simdbp"));
}

TEST(SegmentMergeTest, FiveSegmentsOneOfThemAllDeletedOnAnyThreads) {
  testing::TempDir tmp;
  Segments segs;
  for (uint64_t i = 0; i < 5; ++i) {
    const uint32_t n = 120 + 40 * i;
    std::vector<uint32_t> deleted = SomeDeletes(n, 200 + i);
    if (i == 2) {
      deleted.resize(n);
      std::iota(deleted.begin(), deleted.end(), 0u);
    }
    segs.Add(absl::StrCat(tmp.path(), "/s", i), RandomDocs({.docs = n, .seed = 20 + i}), deleted);
  }
  std::unique_ptr<Index> want = Build(segs.LiveDocs(), tmp.path() + "/want");
  for (int threads : {1, 4}) {
    const std::string out = absl::StrCat(tmp.path(), "/merged", threads);
    MergeOptions options;
    options.threads = threads;
    absl::StatusOr<MergeSummary> s = MergeSegments(segs.Inputs(), out, options);
    ASSERT_TRUE(s.ok()) << s.status();
    std::unique_ptr<Index> got = Open(out);
    ASSERT_TRUE(got && want);
    ExpectSameIndex(*got, *want);
  }
}

TEST(SegmentMergeTest, OneSegment) {
  testing::TempDir tmp;
  Segments segs;
  segs.Add(tmp.path() + "/s", RandomDocs({.docs = 300, .seed = 30}), SomeDeletes(300, 31));
  // With deletes: the segment without them.
  ASSERT_TRUE(MergeSegments(segs.Inputs(), tmp.path() + "/merged").ok());
  std::unique_ptr<Index> want = Build(segs.LiveDocs(), tmp.path() + "/want");
  std::unique_ptr<Index> got = Open(tmp.path() + "/merged");
  ASSERT_TRUE(got && want);
  ExpectSameIndex(*got, *want);
  // Without: the segment itself, file for file.
  ASSERT_TRUE(MergeSegments({{segs.indexes[0].get(), {}}}, tmp.path() + "/copy").ok());
  std::unique_ptr<Index> copy = Open(tmp.path() + "/copy");
  ASSERT_NE(copy, nullptr);
  ExpectSameIndex(*copy, *segs.indexes[0]);
}

TEST(SegmentMergeTest, MergedSegmentsMergeAgainWithLengthsAndYearsRebucketed) {
  // Long documents of spread lengths and 150 years: each segment has at most 256 distinct years
  // and lengths, the merges more, so their buckets span several values. "length" is rebuilt from
  // the documents' lengths; "year" of one-value buckets is exact.
  testing::TempDir tmp;
  Segments segs;
  for (uint64_t i = 0; i < 3; ++i) {
    segs.Add(absl::StrCat(tmp.path(), "/s", i),
             RandomDocs({.docs = 250, .seed = 40 + i, .max_length = 900, .year_values = 150}),
             SomeDeletes(250, 300 + i));
  }
  ASSERT_TRUE(MergeSegments(segs.Inputs(), tmp.path() + "/m1").ok());
  std::unique_ptr<Index> m1 = Open(tmp.path() + "/m1");
  ASSERT_NE(m1, nullptr);
  const filter::AttributeField* length = m1->attributes()->Find("length");
  ASSERT_NE(length, nullptr);
  ASSERT_TRUE(SpansSeveralValues(*length));
  {
    std::unique_ptr<Index> want = Build(segs.LiveDocs(), tmp.path() + "/want1");
    ASSERT_NE(want, nullptr);
    ExpectSameIndex(*m1, *want);
  }
  // The merge merged again, with deletes, beside a new segment.
  std::vector<TestDoc> merged_docs = segs.LiveDocs();
  const std::vector<uint32_t> deleted = SomeDeletes(m1->num_docs(), 400);
  std::vector<TestDoc> fresh = RandomDocs({.docs = 200, .seed = 50, .max_length = 900});
  std::unique_ptr<Index> s3 = Build(fresh, tmp.path() + "/s3");
  ASSERT_NE(s3, nullptr);
  absl::StatusOr<MergeSummary> s =
      MergeSegments({{m1.get(), deleted}, {s3.get(), {}}}, tmp.path() + "/m2");
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<TestDoc> live = Live(merged_docs, deleted);
  live.insert(live.end(), fresh.begin(), fresh.end());
  std::unique_ptr<Index> want = Build(live, tmp.path() + "/want2");
  std::unique_ptr<Index> got = Open(tmp.path() + "/m2");
  ASSERT_TRUE(got && want);
  ExpectSameIndex(*got, *want);
}

TEST(SegmentMergeTest, IndexesWithoutAttributesMerge) {
  testing::TempDir tmp;
  Segments segs;
  for (uint64_t i = 0; i < 2; ++i) {
    segs.Add(absl::StrCat(tmp.path(), "/s", i), RandomDocs({.docs = 150, .seed = 60 + i}),
             SomeDeletes(150, 500 + i), WithAttributes({}));
  }
  ASSERT_TRUE(MergeSegments(segs.Inputs(), tmp.path() + "/merged").ok());
  std::unique_ptr<Index> want = Build(segs.LiveDocs(), tmp.path() + "/want", WithAttributes({}));
  std::unique_ptr<Index> got = Open(tmp.path() + "/merged");
  ASSERT_TRUE(got && want);
  EXPECT_EQ(got->attributes(), nullptr);
  ExpectSameIndex(*got, *want);
}

TEST(SegmentMergeTest, ThrottleBoundsTheRate) {
  testing::TempDir tmp;
  Segments segs;
  for (uint64_t i = 0; i < 2; ++i) {
    segs.Add(absl::StrCat(tmp.path(), "/s", i), RandomDocs({.docs = 200, .seed = 70 + i}),
             SomeDeletes(200, 600 + i));
  }
  absl::StatusOr<MergeSummary> fast = MergeSegments(segs.Inputs(), tmp.path() + "/fast");
  ASSERT_TRUE(fast.ok()) << fast.status();
  // A rate at which the merge's bytes take at least 0.4 s.
  const uint64_t rate = fast->bytes_written * 5 / 2;
  int checks = 0;
  MergeOptions options;
  options.max_bytes_per_second = rate;
  options.check = [&] {
    ++checks;
    return absl::OkStatus();
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<MergeSummary> slow = MergeSegments(segs.Inputs(), tmp.path() + "/slow", options);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(slow->bytes_written, fast->bytes_written);
  const double floor = static_cast<double>(slow->bytes_written) / static_cast<double>(rate);
  EXPECT_GE(slow->seconds, floor);
  EXPECT_GE(wall, floor);
  EXPECT_GT(slow->throttled_seconds, 0.0);
  EXPECT_LT(fast->seconds, floor);
  EXPECT_GT(checks, 5);  // the waits ask whether to stop
  std::unique_ptr<Index> a = Open(tmp.path() + "/fast"), b = Open(tmp.path() + "/slow");
  ASSERT_TRUE(a && b);
  ExpectSameIndex(*b, *a);
}

}  // namespace
}  // namespace tandem::live
