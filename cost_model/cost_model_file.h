// File: cost_model_file.h
//
// The cost-model file that tandem-train-cost writes and the server loads: a text file (m5_text.h
// conventions) with the format version, the feature space, free-form training metadata, and per
// engine its M5 rules, how they scored on the evaluation queries, and the training samples kept
// for refining the model from live timings (at most kMaxFileSamples).
//
//   tandem-cost-model 2
//   space log
//   meta machine vm: Intel(R) Xeon(R) Processor, 16 cores     (key, then the rest of the line)
//   meta gpu NVIDIA H100 80GB HBM3
//   meta date 2026-11-22T08:00:00Z
//   meta train_queries 3000
//   engine cpu
//   trained 12000                      (samples the rules were fitted to)
//   evaluated 4000 0.18 0.95           (evaluation samples, model MRE, heuristic MRE; "-": none)
//   model m5rules                      (or "model none": this engine uses the heuristic)
//   m5rules 1                          (M5Rules::Save, up to its "end")
//   ...
//   end
//   samples 2
//   1200 5000 9000 2 1 10 1 1 0.53     (the 8 features in QueryFeatures order, then ms)
//   17 17 17 1 0 1000 1 0.1 0.004
//   engine gpu
//   ...
//
//   TANDEM_ASSIGN_OR_RETURN(CostModelFile file, ReadCostModelFile("/srv/tandem/cost-model.txt"));
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost_model/cost_features.h"
#include "cost_model/cost_predictor.h"
#include "cost_model/cost_training.h"
#include "cost_model/m5_rules.h"

namespace tandem::cost_model {

// Version 2 added the filter selectivity feature. Version 1 files (7 features) are still read:
// their rules predict every query as unfiltered, and their samples have selectivity 1. Saving
// always writes the current version.
inline constexpr int kCostModelFileVersion = 2;
inline constexpr size_t kMaxFileSamples = 8192;  // per engine

struct EngineCostRecord {
  std::shared_ptr<const M5Rules> rules;  // null: no model for this engine (the heuristic)
  size_t trained_samples = 0;
  size_t evaluated_samples = 0;
  double mean_relative_error = -1;       // on the evaluation samples; < 0 or NaN: not evaluated
  double heuristic_relative_error = -1;  // the heuristic's, on the same samples; likewise
  std::vector<CostSample> samples;       // for refinement; at most kMaxFileSamples
};

struct CostModelFile {
  FeatureSpace space = FeatureSpace::kLog;
  // ("machine", ...), ("date", ...): one word keys, values without line breaks.
  std::vector<std::pair<std::string, std::string>> metadata;
  EngineCostRecord cpu, gpu;

  EngineCostRecord& engine(Processor p) { return p == Processor::kCpu ? cpu : gpu; }
  const EngineCostRecord& engine(Processor p) const { return p == Processor::kCpu ? cpu : gpu; }
  // The value of a metadata key, or "" when absent.
  std::string meta(absl::string_view key) const;

  // INVALID_ARGUMENT when a metadata key is not one word or there are too many samples.
  absl::StatusOr<std::string> Save() const;
  // Errors name `source` and the line.
  static absl::StatusOr<CostModelFile> Parse(absl::string_view text,
                                             absl::string_view source = "<cost model>");
};

absl::StatusOr<CostModelFile> ReadCostModelFile(const std::string& path);
// Writes `path` through a temporary file renamed into place, so a reader never sees half a file.
absl::Status WriteCostModelFile(const CostModelFile& file, const std::string& path);

}  // namespace tandem::cost_model
