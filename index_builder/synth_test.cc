#include "index_builder/synth.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index_builder/synth_lists.h"
#include "tests/data_dir.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

using ::testing::HasSubstr;

using Lists = testing::DecodedLists;

testing::DecodedLists Dump(const index::Index& idx) {
  absl::StatusOr<testing::DecodedLists> lists = testing::DecodeAllLists(idx);
  EXPECT_TRUE(lists.ok()) << lists.status();
  return lists.ok() ? *std::move(lists) : testing::DecodedLists();
}

// Tiny statistics over 100 source documents: "the" is a stop word, "gamma" is rare.
class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write("stats.tsv",
          "# tiny sample: 100 articles\n# term\tdf\tcf\n"
          "alpha\t50\t150\nbeta\t10\t10\ngamma\t1\t5\nthe\t90\t900\nzeta\t20\t30\n");
    Write("lengths.tsv", "# length\tcount\n1\t10\n10\t40\n100\t50\n");
    Write("queries.txt", "1:Alpha BETA's unknownword\n2:the zeta\n3:zeta ZETA\n");
    options_.num_docs = 20000;
    options_.termstats_path = Path("stats.tsv");
    options_.doclengths_path = Path("lengths.tsv");
    options_.vocabulary = SynthVocabulary::kAll;
    options_.threads = 2;
  }
  std::string Path(const std::string& name) const { return tmp_.path() + "/" + name; }
  void Write(const std::string& name, const std::string& contents) {
    std::ofstream(Path(name)) << contents;
  }
  absl::StatusOr<std::unique_ptr<index::Index>> Build(const SynthOptions& o,
                                                      const std::string& name) {
    absl::StatusOr<SynthSummary> s = BuildSyntheticIndex(o, Path(name));
    if (!s.ok()) return s.status();
    return index::Index::Open(Path(name), {.verify_lists = true});
  }

  testing::TempDir tmp_;
  SynthOptions options_;
};

TEST(SynthFormulaTest, ScaleAndDfFollowTheIssue) {
  // GOV2 calibration: 240 / (20,295,043 / 30,729) = 0.3634.
  EXPECT_NEAR(SynthScale(240, 20295043, 30729), 0.36339, 1e-5);
  EXPECT_EQ(SynthScale(0, 20295043, 30729), 1.0);
  EXPECT_EQ(SynthDf(50, 100, 20000, 1.0), 10000u);
  EXPECT_EQ(SynthDf(50, 100, 20000, 0.5), 5000u);
  EXPECT_EQ(SynthDf(1, 30729, 1000, 1.0), 1u);     // round(0.03) clamped up to 1
  EXPECT_EQ(SynthDf(100, 100, 1000, 3.0), 1000u);  // clamped to N
  EXPECT_EQ(SynthDf(3, 4, 10, 1.0), 8u);           // round(7.5) = 8
}

TEST(SampleSortedTest, ExactSizeSortedDistinctForEveryRegime) {
  SynthRng rng(7);
  std::vector<uint32_t> out;
  for (uint32_t n : {1u, 2u, 65u, 1000u, 100000u}) {
    for (uint32_t k : {0u, 1u, 64u, 65u, n / 10, n / 2, n / 2 + 1, n - 1, n}) {
      if (k > n) continue;
      SampleSorted(n, k, rng, &out);
      ASSERT_EQ(out.size(), k) << n << " " << k;
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_LT(out[i], n);
        if (i > 0) {
          ASSERT_LT(out[i - 1], out[i]);
        }
      }
    }
  }
}

TEST(SampleSortedTest, EveryValueEquallyLikely) {
  // Floyd (k <= 64), sparse Bernoulli with fix-up, dense scan and complement.
  for (auto [n, k] : {std::pair{200u, 40u}, {1000u, 100u}, {1000u, 300u}, {1000u, 800u}}) {
    SynthRng rng(n * 31 + k);
    std::vector<uint32_t> hits(n, 0), out;
    const int reps = 4000;
    for (int r = 0; r < reps; ++r) {
      SampleSorted(n, k, rng, &out);
      for (uint32_t v : out) ++hits[v];
    }
    const double p = static_cast<double>(k) / n;
    const double sigma = std::sqrt(p * (1 - p) / reps);
    for (uint32_t v = 0; v < n; ++v) {
      ASSERT_NEAR(static_cast<double>(hits[v]) / reps, p, 5.5 * sigma) << n << " " << k << " " << v;
    }
  }
}

TEST(GenerateListTest, TfMeanFollowsCfOverDf) {
  for (double mean : {1.0, 1.5, 3.9, 20.0}) {
    SynthRng rng(3);
    std::vector<uint32_t> docs, freqs;
    GenerateList(ListSpec{1000000, 200000, mean}, rng, &docs, &freqs);
    ASSERT_EQ(docs.size(), 200000u);
    ASSERT_EQ(freqs.size(), 200000u);
    double sum = 0;
    for (uint32_t f : freqs) {
      ASSERT_GE(f, 1u);
      sum += f;
    }
    // Geometric: standard deviation sqrt(mean (mean - 1)); 6 sigma of the mean of 200,000.
    EXPECT_NEAR(sum / 200000, mean, 6 * std::sqrt(mean * (mean - 1) / 200000) + 1e-12) << mean;
  }
}

TEST(GenerateListTest, ClusteringConcentratesPostingsInFewBlocks) {
  std::vector<uint32_t> docs, freqs;
  auto blocks_touched = [&](double clustering) {
    SynthRng rng(5);
    GenerateList(ListSpec{1000500, 10000, 1.0, clustering, 1000}, rng, &docs, &freqs);
    EXPECT_EQ(docs.size(), 10000u);
    EXPECT_TRUE(std::is_sorted(docs.begin(), docs.end()));
    EXPECT_LT(docs.back(), 1000500u);
    std::set<uint32_t> blocks;
    for (uint32_t d : docs) blocks.insert(d / 1000);
    return blocks.size();
  };
  EXPECT_GT(blocks_touched(1.0), 990u);  // uniform: almost every one of 1001 blocks
  EXPECT_LE(blocks_touched(8.0), 126u);  // a fraction 1/8 of them
  EXPECT_GE(blocks_touched(8.0), 110u);
  EXPECT_LE(blocks_touched(1000.0), 11u);  // as dense as possible: ceil(df / 1000) + 1 blocks
}

TEST(LengthSamplerTest, FollowsTheHistogramScaled) {
  LengthHistogram h{{1, 10, 100}, {10, 40, 50}, 100};
  const LengthSampler sampler(h, 0.5);
  EXPECT_DOUBLE_EQ(sampler.mean(), (1 * 10 + 5 * 40 + 50 * 50) / 100.0);  // round(0.5) = 1 at least
  std::vector<uint32_t> lengths = DrawDocumentLengths(sampler, 100000, 9, 3);
  std::map<uint32_t, int> counts;
  for (uint32_t l : lengths) ++counts[l];
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_NEAR(counts[1] / 1e5, 0.10, 0.006);
  EXPECT_NEAR(counts[5] / 1e5, 0.40, 0.008);
  EXPECT_NEAR(counts[50] / 1e5, 0.50, 0.008);
  EXPECT_EQ(DrawDocumentLengths(sampler, 100000, 9, 1), lengths);  // thread count does not matter
}

TEST_F(SynthTest, SameSeedSameIndexWhateverTheThreads) {
  auto a = Build(options_, "a");
  options_.threads = 3;
  auto b = Build(options_, "b");
  options_.seed = 2;
  auto c = Build(options_, "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status() << b.status() << c.status();
  EXPECT_EQ(Dump(**a), Dump(**b));
  EXPECT_NE(Dump(**a), Dump(**c));
  for (uint32_t d = 0; d < 20000; ++d) ASSERT_EQ((*a)->doc_length(d), (*b)->doc_length(d));
}

TEST_F(SynthTest, StatisticsFollowTheInputs) {
  options_.postings_per_doc = 0.855;  // s = 0.855 / (171 / 100) = 0.5
  absl::StatusOr<SynthSummary> s = BuildSyntheticIndex(options_, Path("idx"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NEAR(s->scale, 0.5, 1e-12);
  EXPECT_EQ(s->dropped_terms, 1u);  // "the"
  auto idx = index::Index::Open(Path("idx"), {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_EQ((*idx)->manifest().analyzer, SyntheticAnalyzerConfig());
  EXPECT_FALSE((*idx)->Lookup("the").has_value());
  const std::map<std::string, std::pair<uint32_t, double>> want = {
      {"alpha", {5000, 3.0}}, {"beta", {1000, 1.0}}, {"gamma", {100, 5.0}}, {"zeta", {2000, 1.5}}};
  EXPECT_EQ((*idx)->num_terms(), want.size());
  uint64_t postings = 0;
  for (const auto& [term, df_tf] : want) {
    std::optional<index::TermInfo> t = (*idx)->Lookup(term);
    ASSERT_TRUE(t.has_value()) << term;
    EXPECT_EQ(t->df, df_tf.first) << term;  // exact: each list has the formula's df
    const double mean = df_tf.second;
    EXPECT_NEAR(static_cast<double>(t->cf) / t->df, mean,
                6 * std::sqrt(mean * (mean - 1) / t->df) + 1e-12)
        << term;
    postings += t->df;
  }
  EXPECT_EQ(s->postings, postings);
  EXPECT_EQ((*idx)->stats().num_postings, postings);
  // Lengths: 10% of 1 (0.5 rounds to 1, the minimum), 40% of 5, 50% of 50 -> mean 27.1.
  EXPECT_NEAR((*idx)->avg_doc_length(), 27.1, 0.6);
  std::map<uint32_t, int> lengths;
  for (uint32_t d = 0; d < 20000; ++d) ++lengths[(*idx)->doc_length(d)];
  EXPECT_NEAR(lengths[1] / 2e4, 0.10, 0.012);
  EXPECT_NEAR(lengths[5] / 2e4, 0.40, 0.018);
  EXPECT_NEAR(lengths[50] / 2e4, 0.50, 0.018);
}

TEST_F(SynthTest, QueryTermsVocabularyHoldsExactlyTheKnownQueryTerms) {
  options_.vocabulary = SynthVocabulary::kQueryTerms;
  options_.query_files = {Path("queries.txt")};
  absl::StatusOr<SynthSummary> s = BuildSyntheticIndex(options_, Path("idx"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->queries, 3u);
  // alpha, beta, s, unknownword, zeta ("the" is a stop word); "s" and "unknownword" have no stats.
  EXPECT_EQ(s->query_terms, 5u);
  EXPECT_EQ(s->unknown_query_terms, 2u);
  auto idx = index::Index::Open(Path("idx"), {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  std::vector<std::string> terms;
  for (uint64_t i = 0; i < (*idx)->num_terms(); ++i) terms.emplace_back((*idx)->term_at(i).term);
  EXPECT_THAT(terms, ::testing::ElementsAre("alpha", "beta", "zeta"));
  std::vector<std::string> analyzed;
  (*idx)->analyzer().Analyze("ALPHA, the Zeta!", &analyzed);
  EXPECT_THAT(analyzed, ::testing::ElementsAre("alpha", "zeta"));
  // A list is the same whichever vocabulary it was generated in.
  options_.vocabulary = SynthVocabulary::kAll;
  auto all = Build(options_, "all");
  ASSERT_TRUE(all.ok()) << all.status();
  Lists from_all = Dump(**all);
  for (const auto& [term, list] : Dump(**idx)) EXPECT_EQ(list, from_all[term]) << term;
}

TEST_F(SynthTest, BadInputsGiveClearErrors) {
  auto error = [&](const SynthOptions& o) { return BuildSyntheticIndex(o, Path("bad")).status(); };
  SynthOptions o = options_;
  o.termstats_path = Path("missing.tsv");
  EXPECT_EQ(error(o).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(error(o).message(), HasSubstr("missing.tsv"));

  Write("malformed.tsv", "alpha\t5\t9\nbeta 3 4\n");
  o = options_;
  o.termstats_path = Path("malformed.tsv");
  EXPECT_EQ(error(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error(o).message(), HasSubstr("malformed.tsv:2: expected term<TAB>df<TAB>cf"));
  for (const char* bad :
       {"alpha\t5\t4\n", "alpha\t0\t0\n", "alpha\t5\t9\nalpha\t5\t9\n", "# empty\n"}) {
    Write("bad.tsv", bad);
    o.termstats_path = Path("bad.tsv");
    EXPECT_EQ(error(o).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  Write("badlengths.tsv", "10\tmany\n");
  o = options_;
  o.doclengths_path = Path("badlengths.tsv");
  EXPECT_THAT(error(o).message(), HasSubstr("badlengths.tsv:1: expected length<TAB>count"));

  o = options_;
  o.num_docs = 0;
  EXPECT_EQ(error(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error(o).message(), HasSubstr("--docs"));
  o = options_;
  o.vocabulary = SynthVocabulary::kQueryTerms;
  EXPECT_THAT(error(o).message(), HasSubstr("--queries"));
  o = options_;
  o.clustering = 0.5;
  EXPECT_EQ(error(o).code(), absl::StatusCode::kInvalidArgument);
  Write("other.tsv", "1\t7\n");  // 7 documents, but the statistics say 100
  o = options_;
  o.doclengths_path = Path("other.tsv");
  EXPECT_THAT(error(o).message(), HasSubstr("same collection"));
  EXPECT_EQ(ParseSynthVocabulary("some").status().code(), absl::StatusCode::kInvalidArgument);
}

// The GOV2-like workload on real statistics, at 100,000 documents instead of 25 million.
TEST(SynthDataTest, Trec05VocabularyOnRealStatistics) {
  const std::string stats = testing::DataFile("stats/wikipedia-termstats.tsv.gz");
  const std::string lengths = testing::DataFile("stats/wikipedia-doclengths.tsv");
  const std::string queries = testing::DataFile("queries/trec05-efficiency.txt");
  if (stats.empty() || lengths.empty() || queries.empty()) GTEST_SKIP() << "shared data absent";
  testing::TempDir tmp;
  SynthOptions o;
  o.num_docs = 100000;
  o.termstats_path = stats;
  o.doclengths_path = lengths;
  o.query_files = {queries};
  o.postings_per_doc = 240;
  absl::StatusOr<SynthSummary> s = BuildSyntheticIndex(o, tmp.path() + "/gov2like");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NEAR(s->scale, 0.3634, 1e-4);
  EXPECT_EQ(s->terms, 20868u);  // the TREC 2005 efficiency terms the statistics know
  EXPECT_EQ(s->queries, 50000u);
  auto idx = index::Index::Open(tmp.path() + "/gov2like", {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  std::vector<std::string> terms;
  (*idx)->analyzer().Analyze("Pierson's Twin Lakes MARINA", &terms);
  EXPECT_THAT(terms, ::testing::ElementsAre("pierson", "s", "twin", "lakes", "marina"));
  for (const char* t : {"pierson", "twin", "lakes", "marina"}) EXPECT_TRUE((*idx)->Lookup(t)) << t;
}

}  // namespace
}  // namespace tandem::index_builder
