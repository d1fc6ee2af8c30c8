// File: cost_features.h
//
// What the cost model knows about a query before running it: the four features of Ding et al. 2009,
// section 9 (shortest list, second-shortest list, sum of list lengths, number of terms) plus the
// query mode, k, the fraction of its postings already in the GPU's device cache and the fraction
// of documents its filter allows. Lengths are postings (document frequencies) from the lexicon, so
// computing them costs one Index::Lookup per term and decodes nothing; the filter's count is
// computed once per filter bitmap (Bitmap::Count).
//
// Also the documented heuristic used when an engine has no trained model, and the two spaces the
// M5 rules can be trained in (FeatureSpace).
//
//   QueryFeatures f = ComputeFeatures(prepared, engines.gpu_resident_fraction);
//   double cpu_ms = HeuristicMs(f, Processor::kCpu);
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost_model/cost_predictor.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "index/query.h"

namespace tandem::cost_model {

struct QueryFeatures {
  double shortest = 0;         // postings in the shortest list; 0 when a term is not in the index
  double second_shortest = 0;  // the second-shortest list; 0 for a one-term query
  double sum_lengths = 0;      // postings in all lists
  double num_terms = 0;        // distinct query terms, those not in the index included
  double mode = 0;             // QueryMode as a number: and 0, or 1, and_or 2
  double k = 10;
  double gpu_resident = 1;  // fraction (0..1) of the lists' bytes in the GPU cache; 1 without one
  double filter_selectivity = 1;  // fraction (0..1) of the documents the filter allows; 1: none

  friend bool operator==(const QueryFeatures&, const QueryFeatures&) = default;
};

inline constexpr size_t kNumCostFeatures = 8;
// The attribute names of the models, in QueryFeatures order:
// shortest second_shortest sum_lengths num_terms mode k gpu_resident filter_selectivity.
const std::vector<std::string>& CostFeatureNames();
// Models trained before filters had the first 7 (kNumCostFeaturesWithoutFilter) and predict every
// query as unfiltered: a model's attributes must be a prefix of CostFeatureNames() this long or
// whole (CostFeaturesPrefixOk).
inline constexpr size_t kNumCostFeaturesWithoutFilter = 7;
bool CostFeaturesPrefixOk(const std::vector<std::string>& attributes);

// The features as a row, in CostFeatureNames() order.
std::vector<double> FeatureValues(const QueryFeatures& f);
// The inverse: `values` holds kNumCostFeatures values, or kNumCostFeaturesWithoutFilter (the filter
// selectivity is then 1).
QueryFeatures FeaturesFromValues(std::span<const double> values);

// Where the GPU-resident fraction comes from: the GPU engine's own answer
// (gpu::GpuEngine::ResidentFraction, wired by the server). An empty function means "no GPU cache"
// (fraction 1).
using ResidentFractionFn = std::function<double(const index::PreparedQuery&)>;

// The features of a prepared query: its list lengths from the resolved terms (no lookups), its
// mode, k and filter, and the resident fraction when `resident_fraction` is set.
QueryFeatures ComputeFeatures(const index::PreparedQuery& query,
                              const ResidentFractionFn& resident_fraction);

// The space the M5 rules see. Query times span five decades and the scheduler needs them right
// relatively, so the default is kLog: list lengths and k as ln(1 + x), the time as ln(ms), a linear
// model there being a power law (ms ~ postings^b). kLinear is the paper's: raw features, ms.
enum class FeatureSpace { kLinear, kLog };
absl::string_view FeatureSpaceName(FeatureSpace space);  // "linear", "log"
absl::StatusOr<FeatureSpace> ParseFeatureSpace(absl::string_view name);

std::vector<double> ModelInputs(const QueryFeatures& f, FeatureSpace space);
double ModelTarget(double ms, FeatureSpace space);
// The model's output back in milliseconds, never negative.
double MsFromModel(double y, FeatureSpace space);

// The heuristic, in milliseconds (documented with its constants in cost_features.cc); the CPU
// engine's OR prunes by MaxScore.
double HeuristicMs(const QueryFeatures& f, Processor processor);
// One line saying what it assumes, for CostModel::description().
std::string HeuristicDescription();

}  // namespace tandem::cost_model
