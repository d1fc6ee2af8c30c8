#include "cost_model/cost_model.h"

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "cost_model/cost_training.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "tests/test_collection.h"

namespace tandem::cost_model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

index::Query MakeQuery(std::vector<std::string> terms, index::QueryMode mode, uint32_t k) {
  index::Query q;
  for (std::string& t : terms) q.terms.push_back({std::move(t), 1.0f});
  q.mode = mode;
  q.k = k;
  return q;
}

// `q` prepared against `index`, as the node prepares a query at admission.
index::PreparedQuery Prepared(const index::Index& index, index::Query q) {
  absl::StatusOr<index::PreparedQuery> prepared =
      index::PreparedQuery::Prepare(index, std::move(q));
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return *std::move(prepared);
}

CostModelOptions OptionsFor(const index::Index* index) {
  CostModelOptions options;
  options.index = index;
  return options;
}

// A small real index: apple in 3 documents, bear in 2, cat in 1.
class CostModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::BuildIndex({{"apple", "bear"}, {"apple"}, {"apple", "cat"}, {"bear"}},
                                    dir_.path() + "/i", "pfor")
                    .ok());
    auto index = index::Index::Open(dir_.path() + "/i");
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = *std::move(index);
  }
  testing::TempDir dir_;
  std::unique_ptr<index::Index> index_;
};

// Random features shaped like real queries: list lengths log-uniform over 10..10^7.
std::vector<QueryFeatures> RandomFeatures(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(1, 7);
  std::vector<QueryFeatures> out;
  for (size_t i = 0; i < n; ++i) {
    const int terms = 1 + static_cast<int>(rng() % 4);
    std::vector<double> lengths;
    for (int t = 0; t < terms; ++t) lengths.push_back(std::round(std::pow(10, exponent(rng))));
    std::sort(lengths.begin(), lengths.end());
    QueryFeatures f;
    f.shortest = lengths[0];
    f.second_shortest = terms > 1 ? lengths[1] : 0;
    for (double l : lengths) f.sum_lengths += l;
    f.num_terms = terms;
    f.mode = static_cast<double>(rng() % 2);
    f.k = rng() % 2 ? 10 : 1000;
    out.push_back(f);
  }
  return out;
}

double SyntheticCpuMs(const QueryFeatures& f) { return 0.001 * f.sum_lengths; }
double SyntheticGpuMs(const QueryFeatures& f) { return 0.05 + 0.0001 * f.sum_lengths; }

std::vector<CostSample> Samples(const std::vector<QueryFeatures>& features,
                                double (*ms)(const QueryFeatures&)) {
  std::vector<CostSample> out;
  for (const QueryFeatures& f : features) out.push_back({f, ms(f)});
  return out;
}

TEST_F(CostModelTest, FeaturesFromTheLexicon) {
  // apple twice (one term), a term the index lacks (length 0).
  QueryFeatures f = ComputeFeatures(
      Prepared(*index_, MakeQuery({"apple", "bear", "zebra", "apple"}, index::QueryMode::kAnd, 5)),
      {});
  EXPECT_EQ(f.shortest, 0);
  EXPECT_EQ(f.second_shortest, 2);
  EXPECT_EQ(f.sum_lengths, 5);
  EXPECT_EQ(f.num_terms, 3);
  EXPECT_EQ(f.mode, 0);
  EXPECT_EQ(f.k, 5);
  EXPECT_EQ(f.gpu_resident, 1);

  f = ComputeFeatures(Prepared(*index_, MakeQuery({"cat"}, index::QueryMode::kAndOr, 10)),
                      [](const index::PreparedQuery&) { return 0.25; });
  EXPECT_EQ(f, (QueryFeatures{1, 0, 1, 1, 2, 10, 0.25}));
  f = ComputeFeatures(Prepared(*index_, MakeQuery({"bear", "apple"}, index::QueryMode::kOr, 10)),
                      [](const index::PreparedQuery&) { return 7.0; });
  EXPECT_EQ(f, (QueryFeatures{2, 3, 5, 2, 1, 10, 1}));  // fraction clamped to 1
  EXPECT_EQ(ComputeFeatures(Prepared(*index_, MakeQuery({}, index::QueryMode::kOr, 10)), {}),
            (QueryFeatures{0, 0, 0, 0, 1, 10, 1}));

  // A filter's selectivity: the share of the index's 4 documents it allows.
  index::Query filtered = MakeQuery({"apple"}, index::QueryMode::kOr, 10);
  filtered.filter = std::make_shared<const filter::Bitmap>(
      *filter::FromRows(filter::BitmapCodec::kPlwah, 4, std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(ComputeFeatures(Prepared(*index_, filtered), {}).filter_selectivity, 0.75);
  filtered.filter =
      std::make_shared<const filter::Bitmap>(filter::NoRows(filter::BitmapCodec::kWah, 4));
  EXPECT_EQ(ComputeFeatures(Prepared(*index_, filtered), {}).filter_selectivity, 0);
  filtered.filter = nullptr;
  EXPECT_EQ(ComputeFeatures(Prepared(*index_, filtered), {}).filter_selectivity, 1);
}

TEST_F(CostModelTest, HeuristicWithoutAModelAndSaysSo) {
  auto model = CostModel::Heuristic(OptionsFor(index_.get()));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->has_model(Processor::kCpu));
  EXPECT_FALSE((*model)->has_model(Processor::kGpu));
  EXPECT_THAT((*model)->description(), HasSubstr("cpu heuristic, gpu heuristic"));
  EXPECT_THAT((*model)->description(), HasSubstr("no trained model"));
  EXPECT_TRUE(std::isnan((*model)->mean_relative_error(Processor::kGpu)));

  const index::PreparedQuery q =
      Prepared(*index_, MakeQuery({"apple", "bear"}, index::QueryMode::kOr, 10));
  const QueryFeatures f = (*model)->Features(q);
  const CostEstimate e = (*model)->Predict(q);
  EXPECT_EQ(e.cpu_ms, HeuristicMs(f, Processor::kCpu));
  EXPECT_EQ(e.gpu_ms, HeuristicMs(f, Processor::kGpu));
  // What the heuristic must get right: big ORs belong on the GPU, tiny queries on the CPU, and
  // lists not in the device cache cost the GPU a copy.
  QueryFeatures big{1e6, 2e6, 5e6, 3, 1, 10, 1};
  EXPECT_GT(HeuristicMs(big, Processor::kCpu), 10 * HeuristicMs(big, Processor::kGpu));
  QueryFeatures tiny{10, 20, 30, 2, 0, 10, 1};
  EXPECT_LT(HeuristicMs(tiny, Processor::kCpu), HeuristicMs(tiny, Processor::kGpu));
  QueryFeatures cold = big;
  cold.gpu_resident = 0;
  EXPECT_GT(HeuristicMs(cold, Processor::kGpu), 2 * HeuristicMs(big, Processor::kGpu));
  // AND touches far less than OR; an AND+OR that cannot fill k pays for the OR too.
  QueryFeatures and_query = big;
  and_query.mode = 0;
  EXPECT_LT(HeuristicMs(and_query, Processor::kCpu), HeuristicMs(big, Processor::kCpu));
  QueryFeatures short_and_or{5, 1e6, 2e6, 2, 2, 10, 1};
  QueryFeatures short_and{5, 1e6, 2e6, 2, 0, 10, 1};
  EXPECT_GT(HeuristicMs(short_and_or, Processor::kCpu),
            10 * HeuristicMs(short_and, Processor::kCpu));
  // The CPU's OR by MaxScore: about a quarter of scoring every posting (25 ns each) at k = 10,
  // about half at k = 1,000 (bench/results/query_cpu.json).
  const double every_posting_ms = 25e-6 * big.sum_lengths;
  EXPECT_NEAR(HeuristicMs(big, Processor::kCpu) / every_posting_ms, 0.24, 0.01);
  QueryFeatures big_k1000 = big;
  big_k1000.k = 1000;
  EXPECT_NEAR(HeuristicMs(big_k1000, Processor::kCpu) / every_posting_ms, 0.47, 0.01);
  EXPECT_THAT((*model)->description(), HasSubstr("for MaxScore"));

  EXPECT_EQ(CostModel::Heuristic(OptionsFor(nullptr)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CostTrainingTest, SyntheticTimingsArePredictedWithinAFewPercent) {
  const std::vector<QueryFeatures> train = RandomFeatures(2000, 1), eval = RandomFeatures(500, 2);
  for (FeatureSpace space : {FeatureSpace::kLog, FeatureSpace::kLinear}) {
    SCOPED_TRACE(FeatureSpaceName(space));
    auto cpu = TrainCostRules(Samples(train, SyntheticCpuMs), space);
    auto gpu = TrainCostRules(Samples(train, SyntheticGpuMs), space);
    ASSERT_TRUE(cpu.ok() && gpu.ok());
    const double cpu_error = MeanRelativeError(*cpu, space, Samples(eval, SyntheticCpuMs));
    const double gpu_error = MeanRelativeError(*gpu, space, Samples(eval, SyntheticGpuMs));
    std::printf("%s space: cpu %zu rules, MRE %.4f; gpu %zu rules, MRE %.4f\n",
                std::string(FeatureSpaceName(space)).c_str(), cpu->rules().size(), cpu_error,
                gpu->rules().size(), gpu_error);
    EXPECT_LT(cpu_error, 0.03);
    EXPECT_LT(gpu_error, 0.05);
  }
  EXPECT_EQ(TrainCostRules({}, FeatureSpace::kLog).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrainCostRules({{QueryFeatures{}, -1.0}}, FeatureSpace::kLog).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CostTrainingTest, MeanRelativeErrorByHand) {
  const std::vector<CostSample> samples = {
      {QueryFeatures{}, 2.0}, {QueryFeatures{}, 4.0}, {QueryFeatures{}, 0.0}};
  // Predicting 3 ms: |3-2|/2 = 0.5, |3-4|/4 = 0.25; the 0 ms sample has no relative error.
  EXPECT_DOUBLE_EQ(MeanRelativeError([](const QueryFeatures&) { return 3.0; }, samples), 0.375);
  EXPECT_TRUE(std::isnan(MeanRelativeError([](const QueryFeatures&) { return 1.0; }, {})));
  std::vector<CostSample> many(10);
  for (int i = 0; i < 10; ++i) many[i].ms = i;
  const std::vector<CostSample> thin = ThinSamples(many, 4);
  ASSERT_EQ(thin.size(), 4u);
  EXPECT_EQ(thin[0].ms, 0);
  EXPECT_EQ(thin[1].ms, 2);
  EXPECT_EQ(thin[3].ms, 7);
}

TEST_F(CostModelTest, ObservationsRefineTheModelInTheBackground) {
  CostModelOptions options = OptionsFor(index_.get());
  options.refine_every = 300;
  options.min_train_samples = 50;
  auto model = CostModel::Heuristic(options);
  ASSERT_TRUE(model.ok());
  const std::vector<QueryFeatures> seen = RandomFeatures(300, 5), unseen = RandomFeatures(200, 6);
  const CostEstimate before = (*model)->PredictFeatures(unseen[0]);
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    (*model)->ObserveFeatures(seen[i], Processor::kCpu, SyntheticCpuMs(seen[i]));
  }
  (*model)->WaitForRefinement();
  EXPECT_EQ((*model)->refinements(), 0u);  // 299 observations: not yet
  EXPECT_FALSE((*model)->has_model(Processor::kCpu));
  (*model)->ObserveFeatures(seen.back(), Processor::kCpu, SyntheticCpuMs(seen.back()));
  (*model)->WaitForRefinement();
  EXPECT_EQ((*model)->refinements(), 1u);
  EXPECT_TRUE((*model)->has_model(Processor::kCpu));
  EXPECT_FALSE((*model)->has_model(Processor::kGpu));  // no GPU timings: still the heuristic
  EXPECT_THAT((*model)->description(), HasSubstr("refined 1 times"));
  EXPECT_THAT((*model)->description(), HasSubstr("gpu heuristic"));
  const CostEstimate after = (*model)->PredictFeatures(unseen[0]);
  EXPECT_NE(after.cpu_ms, before.cpu_ms);
  EXPECT_EQ(after.gpu_ms, before.gpu_ms);
  double error = 0;
  for (const QueryFeatures& f : unseen) {
    error += std::fabs((*model)->PredictFeatures(f).cpu_ms - SyntheticCpuMs(f)) / SyntheticCpuMs(f);
  }
  EXPECT_LT(error / unseen.size(), 0.05);
  // The live error was measured against the heuristic's predictions (before the model existed).
  EXPECT_GT((*model)->live_relative_error(Processor::kCpu), 0.1);
  EXPECT_TRUE(std::isnan((*model)->live_relative_error(Processor::kGpu)));
}

TEST_F(CostModelTest, ObserveUsesTheFeaturesPredictSaw) {
  // The GPU cache fills when a query runs: Observe must train on the fraction seen before the run.
  std::atomic<double> resident{0.0};
  CostModelOptions options = OptionsFor(index_.get());
  options.resident_fraction = [&resident](const index::PreparedQuery&) { return resident.load(); };
  options.refine_every = 0;
  auto model = CostModel::Heuristic(options);
  ASSERT_TRUE(model.ok());
  const index::PreparedQuery q =
      Prepared(*index_, MakeQuery({"apple", "cat"}, index::QueryMode::kOr, 10));
  (*model)->Predict(q);
  resident = 1.0;
  (*model)->Observe(q, Processor::kGpu, 1.5);
  // A query Predict never saw gets its features computed at Observe.
  (*model)->Observe(Prepared(*index_, MakeQuery({"bear"}, index::QueryMode::kOr, 10)),
                    Processor::kGpu, 2.5);
  const CostModelFile snapshot = (*model)->Snapshot();
  ASSERT_EQ(snapshot.gpu.samples.size(), 2u);
  EXPECT_EQ(snapshot.gpu.samples[0].ms, 1.5);
  EXPECT_EQ(snapshot.gpu.samples[0].features.gpu_resident, 0.0);
  EXPECT_EQ(snapshot.gpu.samples[0].features.sum_lengths, 4);
  EXPECT_EQ(snapshot.gpu.samples[1].features.gpu_resident, 1.0);
  EXPECT_TRUE(snapshot.cpu.samples.empty());
  // Not a time: ignored.
  (*model)->Observe(q, Processor::kGpu, -1);
  (*model)->Observe(q, Processor::kGpu, NAN);
  EXPECT_EQ((*model)->Snapshot().gpu.samples.size(), 2u);
}

TEST_F(CostModelTest, LiveSamplesAreBounded) {
  CostModelOptions options = OptionsFor(index_.get());
  options.live_samples = 64;
  options.refine_every = 0;
  auto model = CostModel::Heuristic(options);
  ASSERT_TRUE(model.ok());
  for (int i = 0; i < 1000; ++i) {
    (*model)->ObserveFeatures(QueryFeatures{1, 2, double(i), 2, 1, 10, 1}, Processor::kCpu, i + 1);
  }
  const CostModelFile snapshot = (*model)->Snapshot();
  ASSERT_EQ(snapshot.cpu.samples.size(), 64u);
  for (const CostSample& s : snapshot.cpu.samples) EXPECT_GT(s.ms, 1000 - 64);  // the latest
}

// A retraining whose rules predict held-out samples worse than the rules in use is not swapped in:
// a trained model, then live timings 1000 times what the model (rightly) predicts for the same
// kind of queries, as a processor slowed down for a moment would measure.
TEST_F(CostModelTest, RefinementWorseOnHeldOutSamplesIsRejected) {
  const std::vector<QueryFeatures> trained = RandomFeatures(500, 11);
  CostModelFile file;
  file.cpu.samples = Samples(trained, SyntheticCpuMs);
  auto rules = TrainCostRules(file.cpu.samples, file.space);
  ASSERT_TRUE(rules.ok()) << rules.status();
  file.cpu.rules = std::make_shared<const M5Rules>(*std::move(rules));
  CostModelOptions options = OptionsFor(index_.get());
  options.refine_every = 200;
  options.min_train_samples = 50;
  auto model = CostModel::FromFile(std::move(file), options, "test");
  ASSERT_TRUE(model.ok()) << model.status();
  const QueryFeatures probe = RandomFeatures(1, 12)[0];
  const double before = (*model)->PredictFeatures(probe).cpu_ms;
  for (const QueryFeatures& f : RandomFeatures(200, 13)) {
    (*model)->ObserveFeatures(f, Processor::kCpu, 1000 * SyntheticCpuMs(f));
  }
  (*model)->WaitForRefinement();
  EXPECT_EQ((*model)->refinements(), 0u);
  EXPECT_EQ((*model)->rejected_refinements(), 1u);
  EXPECT_EQ((*model)->PredictFeatures(probe).cpu_ms, before);  // the file's rules stay
  EXPECT_THAT((*model)->description(), HasSubstr("1 refinements rejected"));
}

// Each thread keeps the rules it last read per model: two models predicted in turn on one thread
// (and a model created after another was destroyed) each answer with their own rules.
TEST_F(CostModelTest, ModelsPredictedInTurnOnOneThreadKeepTheirOwnRules) {
  const std::vector<QueryFeatures> trained = RandomFeatures(500, 21);
  auto model_for = [&](double scale) {
    CostModelFile file;
    std::vector<CostSample> samples = Samples(trained, SyntheticCpuMs);
    for (CostSample& sample : samples) sample.ms *= scale;
    auto rules = TrainCostRules(samples, file.space);
    EXPECT_TRUE(rules.ok()) << rules.status();
    file.cpu.rules = std::make_shared<const M5Rules>(*std::move(rules));
    CostModelOptions options = OptionsFor(index_.get());
    options.refine_every = 0;
    auto model = CostModel::FromFile(std::move(file), options, "test");
    EXPECT_TRUE(model.ok()) << model.status();
    return *std::move(model);
  };
  const QueryFeatures probe = RandomFeatures(1, 22)[0];
  std::unique_ptr<CostModel> slow = model_for(10.0), fast = model_for(1.0);
  const double slow_ms = slow->PredictFeatures(probe).cpu_ms;
  const double fast_ms = fast->PredictFeatures(probe).cpu_ms;
  EXPECT_NEAR(slow_ms, 10 * fast_ms, 0.5 * fast_ms);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(slow->PredictFeatures(probe).cpu_ms, slow_ms);
    EXPECT_EQ(fast->PredictFeatures(probe).cpu_ms, fast_ms);
  }
  slow.reset();
  std::unique_ptr<CostModel> heuristic = CostModel::Heuristic(OptionsFor(index_.get())).value();
  EXPECT_EQ(heuristic->PredictFeatures(probe).cpu_ms, HeuristicMs(probe, Processor::kCpu));
  EXPECT_EQ(fast->PredictFeatures(probe).cpu_ms, fast_ms);
}

// refine_min_interval spaces retrainings in time whatever the query rate.
TEST_F(CostModelTest, RefinementsAreAtLeastTheMinimumIntervalApart) {
  CostModelOptions options = OptionsFor(index_.get());
  options.refine_every = 100;
  options.min_train_samples = 50;
  options.refine_min_interval = absl::Hours(1);
  auto model = CostModel::Heuristic(options);
  ASSERT_TRUE(model.ok());
  const std::vector<QueryFeatures> seen = RandomFeatures(1000, 7);
  for (const QueryFeatures& f : seen) {
    (*model)->ObserveFeatures(f, Processor::kCpu, SyntheticCpuMs(f));
    (*model)->WaitForRefinement();
  }
  EXPECT_EQ((*model)->refinements(), 1u);  // the first after 100 observations, no other within 1 h
  EXPECT_TRUE((*model)->has_model(Processor::kCpu));
}

TEST_F(CostModelTest, ConcurrentPredictAndObserveWhileRefining) {
  CostModelOptions options = OptionsFor(index_.get());
  options.refine_every = 100;
  options.min_train_samples = 20;
  options.live_samples = 512;
  auto created = CostModel::Heuristic(options);
  ASSERT_TRUE(created.ok());
  CostModel& model = **created;
  std::vector<index::PreparedQuery> queries;
  for (index::Query q : {MakeQuery({"apple"}, index::QueryMode::kOr, 10),
                         MakeQuery({"apple", "bear"}, index::QueryMode::kAnd, 10),
                         MakeQuery({"bear", "cat", "zebra"}, index::QueryMode::kAndOr, 1000),
                         MakeQuery({"cat"}, index::QueryMode::kOr, 1000)}) {
    queries.push_back(Prepared(*index_, std::move(q)));
  }
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 3000; ++i) {
        const index::PreparedQuery& q = queries[rng() % queries.size()];
        const CostEstimate e = model.Predict(q);
        if (!(e.cpu_ms >= 0) || !(e.gpu_ms >= 0) || !std::isfinite(e.cpu_ms)) bad = true;
        if (t % 2 == 0) {
          const Processor p = rng() % 2 ? Processor::kCpu : Processor::kGpu;
          model.Observe(q, p, 0.01 * (1 + q.query().terms.size()) * (p == Processor::kCpu ? 3 : 1));
        }
        if (i % 500 == 0) model.description();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  model.WaitForRefinement();
  EXPECT_FALSE(bad);
  EXPECT_GE(model.refinements(), 1u);
  EXPECT_TRUE(model.has_model(Processor::kCpu));
  EXPECT_TRUE(model.has_model(Processor::kGpu));
  // Times depend only on the number of terms here: the refined model has learnt them.
  const CostEstimate e = model.Predict(queries[2]);
  EXPECT_NEAR(e.cpu_ms, 0.12, 0.012);
  EXPECT_NEAR(e.gpu_ms, 0.04, 0.004);
}

}  // namespace
}  // namespace tandem::cost_model
