#include "cost_model/cost_model_file.h"

#include <fstream>

#include "cost_model/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::cost_model {
namespace {

using ::testing::HasSubstr;

CostModelFile TrainedFile() {
  CostModelFile file;
  file.metadata = {{"machine", "testhost: Some CPU, 2 cores"},
                   {"date", "2026-11-22T08:00:00Z"},
                   {"train_queries", "40"}};
  std::vector<CostSample> samples;
  for (int i = 1; i <= 40; ++i) {
    const double sum = 1e4 * i * i;
    samples.push_back({QueryFeatures{1e3 * i, 3e3 * i, sum, 2, double(i % 2), 10, 1}, 1e-5 * sum});
  }
  file.cpu.rules = std::make_shared<const M5Rules>(*TrainCostRules(samples, file.space));
  file.cpu.trained_samples = samples.size();
  file.cpu.evaluated_samples = 10;
  file.cpu.mean_relative_error = 0.125;
  file.cpu.heuristic_relative_error = 3.5;
  file.cpu.samples = samples;
  return file;  // no GPU model: the heuristic for the GPU
}

TEST(CostModelFileTest, SaveParseRoundTrip) {
  const CostModelFile file = TrainedFile();
  const absl::StatusOr<std::string> text = file.Save();
  ASSERT_TRUE(text.ok());
  auto back = CostModelFile::Parse(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Save().value(), *text);
  EXPECT_EQ(back->meta("machine"), "testhost: Some CPU, 2 cores");
  EXPECT_EQ(back->meta("absent"), "");
  EXPECT_EQ(back->space, FeatureSpace::kLog);
  EXPECT_EQ(back->cpu.samples, file.cpu.samples);
  EXPECT_EQ(back->cpu.mean_relative_error, 0.125);
  EXPECT_EQ(back->gpu.rules, nullptr);
  EXPECT_LT(back->gpu.mean_relative_error, 0);
  const QueryFeatures f{7e3, 9e3, 5e5, 2, 1, 10, 1};
  EXPECT_EQ(PredictMs(*back->cpu.rules, back->space, f), PredictMs(*file.cpu.rules, file.space, f));
}

TEST(CostModelFileTest, CostModelLoadsTheFile) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"apple"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok());
  const std::string path = dir.path() + "/model.txt";
  ASSERT_TRUE(WriteCostModelFile(TrainedFile(), path).ok());
  CostModelOptions options;
  options.index = index->get();
  auto model = CostModel::Load(path, options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->has_model(Processor::kCpu));
  EXPECT_FALSE((*model)->has_model(Processor::kGpu));
  EXPECT_EQ((*model)->mean_relative_error(Processor::kCpu), 0.125);
  const std::string description = (*model)->description();
  EXPECT_THAT(description, HasSubstr(path));
  EXPECT_THAT(description, HasSubstr("trained on testhost"));
  EXPECT_THAT(description, HasSubstr("evaluation error 12.5%"));
  EXPECT_THAT(description, HasSubstr("gpu heuristic"));
  const QueryFeatures f{7e3, 21e3, 49e4, 2, 1, 10, 1};  // training sample i = 7
  EXPECT_NEAR((*model)->PredictFeatures(f).cpu_ms, 4.9, 0.1);
  EXPECT_EQ((*model)->PredictFeatures(f).gpu_ms, HeuristicMs(f, Processor::kGpu));
  // What the model knows now can be written back and read again.
  ASSERT_TRUE(WriteCostModelFile((*model)->Snapshot(), path).ok());
  auto again = ReadCostModelFile(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->meta("refinements"), "0");
  EXPECT_EQ(again->cpu.samples.size(), 40u);

  EXPECT_EQ(CostModel::Load(dir.path() + "/absent.txt", options).status().code(),
            absl::StatusCode::kNotFound);
  std::ofstream(dir.path() + "/bad.txt") << "tandem-cost-model 1\nspace log\nengine tpu\n";
  auto bad = CostModel::Load(dir.path() + "/bad.txt", options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(dir.path() + "/bad.txt: line 3"));
}

// A file written before filters had a selectivity feature: 7 features per sample, rules over 7
// attributes. It still loads; its rules predict every query as unfiltered, and it is saved again in
// the current version.
TEST(CostModelFileTest, ReadsVersionOneFiles) {
  M5Dataset data;
  data.attributes.assign(CostFeatureNames().begin(),
                         CostFeatureNames().begin() + kNumCostFeaturesWithoutFilter);
  for (int i = 1; i <= 40; ++i) {
    const QueryFeatures f{1e3 * i, 3e3 * i, 1e4 * i * i, 2, double(i % 2), 10, 1};
    std::vector<double> row = ModelInputs(f, FeatureSpace::kLog);
    row.resize(kNumCostFeaturesWithoutFilter);
    data.rows.push_back(row);
    data.targets.push_back(ModelTarget(1e-5 * f.sum_lengths, FeatureSpace::kLog));
  }
  const absl::StatusOr<M5Rules> rules = M5Rules::Build(data);
  ASSERT_TRUE(rules.ok()) << rules.status();
  const std::string v1 = absl::StrCat(
      "tandem-cost-model 1\nspace log\nengine cpu\ntrained 40\nevaluated 0 - -\nmodel m5rules\n",
      rules->Save(), "samples 2\n7000 21000 490000 2 1 10 1 4.9\n17 17 17 1 0 1000 0 0.004\n");
  auto file = CostModelFile::Parse(v1, "old.txt");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->cpu.samples.size(), 2u);
  EXPECT_EQ(file->cpu.samples[0].features, (QueryFeatures{7e3, 21e3, 49e4, 2, 1, 10, 1, 1}));
  EXPECT_EQ(file->cpu.samples[1].features.gpu_resident, 0);
  EXPECT_EQ(file->cpu.samples[1].features.filter_selectivity, 1);
  QueryFeatures filtered{7e3, 21e3, 49e4, 2, 1, 10, 1, 0.01};
  QueryFeatures unfiltered = filtered;
  unfiltered.filter_selectivity = 1;
  const double ms = PredictMs(*file->cpu.rules, file->space, unfiltered);
  EXPECT_NEAR(ms, 4.9, 0.2);
  EXPECT_EQ(PredictMs(*file->cpu.rules, file->space, filtered), ms);
  // Saved again: version 2, the old rules kept, the samples with selectivity 1.
  const std::string v2 = file->Save().value();
  EXPECT_THAT(v2, ::testing::StartsWith("tandem-cost-model 2\n"));
  EXPECT_THAT(v2, HasSubstr("\n7000 21000 490000 2 1 10 1 1 4.9"));
  auto back = CostModelFile::Parse(v2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->cpu.samples, file->cpu.samples);
  EXPECT_EQ(PredictMs(*back->cpu.rules, back->space, filtered), ms);
  // Rules over 8 attributes need a version 2 file.
  std::vector<CostSample> samples;
  for (int i = 1; i <= 40; ++i) {
    samples.push_back(
        {QueryFeatures{1e3 * i, 3e3 * i, 1e4 * i * i, 2, 1, 10, 1, 0.1 * (i % 10)}, 1e-5 * i});
  }
  const absl::StatusOr<M5Rules> rules8 = TrainCostRules(samples, FeatureSpace::kLog);
  ASSERT_TRUE(rules8.ok());
  const std::string v1_with_8 = absl::StrCat(
      "tandem-cost-model 1\nspace log\nengine cpu\ntrained 40\nevaluated 0 - -\nmodel m5rules\n",
      rules8->Save(), "samples 0\n");
  EXPECT_THAT(CostModelFile::Parse(v1_with_8).status().message(),
              HasSubstr("not the cost features of this file's version"));
}

TEST(CostModelFileTest, MalformedFilesNameTheLine) {
  const std::string head = "tandem-cost-model 2\nspace log\n";
  const std::string engine = "engine cpu\ntrained 1\nevaluated 1 0.5 -\nmodel none\n";
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"", "expected 'tandem-cost-model 2'"},
      {"tandem-cost-model 3\n", "line 1: unsupported tandem-cost-model version"},
      {"tandem-cost-model 0\n", "line 1: unsupported tandem-cost-model version"},
      {"tandem-cost-model 2\nspace cubic\n", "line 2: unknown feature space 'cubic'"},
      {head + "meta\n", "line 3: expected 'meta <key> <value>' or 'engine cpu|gpu'"},
      {head + "engine cpu\ntrained x\n", "line 4: expected 'trained <samples>'"},
      {head + "engine cpu\ntrained 1\nevaluated 1 -0.5 -\n", "line 5: expected 'evaluated"},
      {head + "engine cpu\ntrained 1\nevaluated 1 - -\nmodel tree\n", "line 6: expected 'model"},
      {head + engine + "samples 1\n1 2 3 4 5 6 7 1\n", "line 8: a sample is 8 features and a time"},
      {"tandem-cost-model 1\nspace log\n" + engine + "samples 1\n1 2 3 4 5 6 7 1 1\n",
       "line 8: a sample is 7 features and a time"},
      {head + engine + "samples 1\n1 2 3 4 5 6 1 1 -1\n", "line 8: negative time"},
      {head + engine + "samples 1\n1 2 3 4 5 6 x 1 1\n", "line 8: not a finite number: 'x'"},
      {head + engine + "samples 1\n1 2 3 4 5 6 1 1.5 1\n", "line 8: filter selectivity 1.5"},
      {head + engine + "samples 2\n1 2 3 4 5 6 1 1 1\n", "end of text: expected sample 2 of 2"},
      {head + engine + "samples 99999\n", "line 7: 99999 samples; a model file holds at most"},
      {head + engine + "samples 0\n" + engine + "samples 0\n", "line 8: engine cpu appears twice"},
      {head + "engine gpu\ntrained 1\nevaluated 1 - -\nmodel m5rules\nm5rules 1\n"
              "attributes 1 x\nrules 1\nrule 1 0\nthen 1 2\nend\nsamples 0\n",
       "line 12: the model's attributes are not the cost features of this file's version"},
      {head + "engine gpu\ntrained 1\nevaluated 1 - -\nmodel m5rules\nm5rules 1\n",
       "end of text: expected 'attributes"},
  };
  for (const Case& c : cases) {
    auto file = CostModelFile::Parse(c.text, "m.txt");
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(file.status().message(), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(file.status().message(), HasSubstr("m.txt")) << c.text;
  }
  // Metadata must stay one line, keyed by one word.
  CostModelFile file;
  // An evaluation without a measurable sample (NaN) is written as not evaluated.
  file.gpu.mean_relative_error = NAN;
  auto nan_back = CostModelFile::Parse(file.Save().value());
  ASSERT_TRUE(nan_back.ok()) << nan_back.status();
  EXPECT_LT(nan_back->gpu.mean_relative_error, 0);
  file.metadata = {{"two words", "x"}};
  EXPECT_EQ(file.Save().status().code(), absl::StatusCode::kInvalidArgument);
  file.metadata = {{"key", "line\nbreak"}};
  EXPECT_EQ(file.Save().status().code(), absl::StatusCode::kInvalidArgument);
  // Engines without any section are engines without a model.
  auto minimal = CostModelFile::Parse(head + "meta note hello world\n");
  ASSERT_TRUE(minimal.ok()) << minimal.status();
  EXPECT_EQ(minimal->meta("note"), "hello world");
  EXPECT_EQ(minimal->cpu.rules, nullptr);
}

}  // namespace
}  // namespace tandem::cost_model
