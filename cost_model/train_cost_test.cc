// tandem-train-cost end to end on a small generated collection, CPU only: the model file it writes
// loads, and its JSON holds the evaluation figures.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cost_model/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "nlohmann/json.hpp"
#include "tests/test_collection.h"

namespace tandem::cost_model {
namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string output;
};

Result RunTool(const std::string& args, const std::string& dir) {
  const std::string log = dir + "/tool.log";
  const std::string command =
      absl::StrCat(TANDEM_TRAIN_COST_BINARY, " ", args, " > ", log, " 2>&1");
  const int status = std::system(command.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  r.output = text.str();
  return r;
}

TEST(CostTrainToolTest, TrainsTheCpuModelAndWritesALoadableFile) {
  testing::TempDir dir;
  testing::CollectionSpec spec;
  spec.num_docs = 3000;
  spec.vocabulary = 400;
  const std::string index_dir = dir.path() + "/index";
  ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments(spec), index_dir, "pfor").ok());
  {
    std::ofstream queries(dir.path() + "/queries.txt");
    std::mt19937_64 rng(11);
    for (int i = 0; i < 120; ++i) {
      queries << i << ":";
      for (int t = 0, n = 1 + static_cast<int>(rng() % 3); t < n; ++t)
        queries << " t" << rng() % 400;
      queries << "\n";
    }
    queries << "500: nothingmatches\n";  // no index term: not in the pool
  }
  const std::string model = dir.path() + "/model.txt", json = dir.path() + "/out.json";
  const Result r = RunTool(
      absl::StrCat("--index ", index_dir, " --queries ", dir.path(),
                   "/queries.txt --gpu off --repeat 1 --k 10 --out ", model, " --json ", json),
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no GPU engine: training the CPU model only"));
  EXPECT_THAT(r.output, HasSubstr("121 queries read, 120 with an index term; 90 training and 30 "
                                  "evaluation queries"));

  auto index = index::Index::Open(index_dir);
  ASSERT_TRUE(index.ok());
  CostModelOptions options;
  options.index = index->get();
  auto loaded = CostModel::Load(model, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->has_model(Processor::kCpu));
  EXPECT_FALSE((*loaded)->has_model(Processor::kGpu));
  EXPECT_GE((*loaded)->mean_relative_error(Processor::kCpu), 0);
  EXPECT_THAT((*loaded)->description(), HasSubstr("gpu heuristic"));
  index::Query q;
  q.terms = {{"t1", 1.0f}, {"t2", 1.0f}};
  EXPECT_GT((*loaded)->Predict(*index::PreparedQuery::Prepare(**index, q)).cpu_ms, 0);

  auto file = ReadCostModelFile(model);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->cpu.trained_samples, 180u);  // 90 queries x (and, or) x k = 10
  EXPECT_EQ(file->cpu.evaluated_samples, 60u);
  EXPECT_EQ(file->cpu.samples.size(), 180u);
  EXPECT_EQ(file->meta("train_queries"), "90");
  EXPECT_EQ(file->meta("gpu"), "none (CPU engine)");

  std::ifstream in(json);
  const nlohmann::json out = nlohmann::json::parse(in);
  EXPECT_EQ(out["benchmark"], "cost_model");
  EXPECT_TRUE(out["machine"].contains("commit"));
  EXPECT_FALSE(out["engines"].contains("gpu"));
  const nlohmann::json& cpu = out["engines"]["cpu"];
  EXPECT_EQ(cpu["eval_samples"], 60);
  EXPECT_DOUBLE_EQ(cpu["mean_relative_error"].get<double>(),
                   (*loaded)->mean_relative_error(Processor::kCpu));
  EXPECT_TRUE(cpu["by_mode"].contains("and"));
  EXPECT_TRUE(cpu["by_mode"]["or"]["heuristic_mean_relative_error"].is_number());
}

// With --filters the queries take turns with each filter and with none, and the samples carry
// each filter's selectivity.
TEST(CostTrainToolTest, FiltersGiveSamplesTheirSelectivity) {
  testing::TempDir dir;
  testing::CollectionSpec spec;
  spec.num_docs = 2000;
  spec.vocabulary = 300;
  // "part": a for every 10th document, b for the rest.
  std::vector<uint32_t> part(spec.num_docs);
  for (uint32_t d = 0; d < spec.num_docs; ++d) part[d] = d % 10 == 0 ? 0 : 1;
  filter::AttributeField field;
  field.name = "part";
  field.values = {"a", "b"};
  field.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, spec.num_docs, part);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(field));
  auto attributes =
      filter::AttributeIndex::Create(spec.num_docs, filter::BitmapCodec::kPlwah, std::move(fields));
  ASSERT_TRUE(attributes.ok()) << attributes.status();
  const std::string index_dir = dir.path() + "/index";
  ASSERT_TRUE(
      testing::BuildIndex(testing::RandomDocuments(spec), index_dir, "pfor", *std::move(attributes))
          .ok());
  {
    std::ofstream queries(dir.path() + "/queries.txt");
    for (int i = 0; i < 60; ++i) queries << i << ": t" << i << " t" << i + 1 << "\n";
    std::ofstream(dir.path() + "/filters.txt") << "# one in ten\npart = a\n\npart IN (a, b)\n";
    std::ofstream(dir.path() + "/bad.txt") << "part = a\npart = zzz\n";
  }
  const std::string model = dir.path() + "/model.txt";
  const std::string common = absl::StrCat("--index ", index_dir, " --queries ", dir.path(),
                                          "/queries.txt --gpu off --repeat 1 --k 10 --modes and");
  Result r = RunTool(absl::StrCat(common, " --filters ", dir.path(), "/filters.txt --out ", model),
                     dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("filter 1 allows 10.00% of the documents: part = a"));
  EXPECT_THAT(r.output, HasSubstr("filter 2 allows 100.00% of the documents: part IN (a, b)"));
  auto file = ReadCostModelFile(model);
  ASSERT_TRUE(file.ok()) << file.status();
  std::map<double, int> by_selectivity;
  for (const CostSample& s : file->cpu.samples) ++by_selectivity[s.features.filter_selectivity];
  // 45 training queries: turns of none (1), part = a (0.1) and the whole IN (1).
  EXPECT_EQ(by_selectivity, (std::map<double, int>{{0.1, 15}, {1.0, 30}}));
  EXPECT_EQ(file->meta("filters"), "2");

  r = RunTool(absl::StrCat(common, " --filters ", dir.path(), "/bad.txt"), dir.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("bad.txt: line 2: "));
  EXPECT_THAT(r.output, HasSubstr("zzz"));
  r = RunTool(absl::StrCat(common, " --filters ", dir.path(), "/absent.txt"), dir.path());
  EXPECT_THAT(r.output, HasSubstr("cannot open --filters file"));
}

TEST(CostTrainToolTest, BadArgumentsFailWithAMessage) {
  testing::TempDir dir;
  Result r = RunTool("--queries x.txt", dir.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--index and --queries are required"));
  r = RunTool("--index /nonexistent --queries x.txt", dir.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("tandem-train-cost: "));
  r = RunTool("--index /nonexistent --queries x.txt --train-fraction 1.5", dir.path());
  EXPECT_THAT(r.output, HasSubstr("--train-fraction must lie between 0 and 1"));
  r = RunTool("--index /x --queries x.txt --modes and,xor", dir.path());
  EXPECT_THAT(r.output, HasSubstr("unknown mode 'xor'"));
}

}  // namespace
}  // namespace tandem::cost_model
