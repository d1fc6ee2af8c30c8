#include "cost_model/cost_features.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/enum_names.h"
#include "index/resolved_query.h"

namespace tandem::cost_model {
namespace {

// The heuristic, used for an engine with no trained model. Constants from the 25M-document
// GOV2-like workload on the H100 machine (1.78M postings per query on average; the GPU's figures
// are those of bench/results/gpu_query_25m.json's first run of that engine):
//
//   CPU OR     47.9 ms a query: every posting decoded, scored and offered to the top-k,
//              about 25 ns each. By MaxScore (the CPU engine's default OR) the same queries took
//              0.24 of that time for k = 10 and 0.47 for k = 1,000 (bench/results/
//              query_cpu.json); the factor is interpolated in log k between the two.
//   CPU AND    6.5 ms: the shortest list leads and each other list decodes at most one 128-posting
//              block per candidate, so it touches s + (t-1) min(mean other length, 128 s)
//              postings (s shortest, t terms), a few ns each (decoding, little scoring): about 4
//              there, 1.2 on a 300k-document index of the same kind on a 2-core development VM
//              (21 ns per OR posting there); 1.5 is taken, plus 1 us a query for lookups.
//   AND+OR     the AND, plus the OR when the AND cannot fill k, which is certain when s < k.
//   GPU        0.1 ms per query for launches and synchronization; OR 0.69 ms, so (0.69 - 0.1) /
//              1.78M = 0.33 ns a posting; AND 0.24 ms over the same touched postings, 0.1 ns each;
//              lists not in the device cache are transcoded on the host and copied first,
//              about 2 ns a posting.
// They say which processor is faster by how much, roughly; a trained model replaces them.
constexpr double kCpuOverheadMs = 0.001;  // lexicon lookups, cursors, top-k set-up
constexpr double kCpuOrMsPerPosting = 25e-6;
constexpr double kCpuAndMsPerPosting = 1.5e-6;
constexpr double kGpuOverheadMs = 0.1;
constexpr double kGpuOrMsPerPosting = 0.33e-6;
constexpr double kGpuAndMsPerPosting = 0.1e-6;
constexpr double kGpuColdMsPerPosting = 2e-6;
constexpr double kAndBlock = 128;  // postings a candidate can make a longer list decode
constexpr double kMaxScoreShareK10 = 0.24;
constexpr double kMaxScoreShareK1000 = 0.47;

double MaxScoreShare(double k) {
  const double t = std::clamp((std::log10(std::max(k, 1.0)) - 1.0) / 2.0, 0.0, 1.0);
  return kMaxScoreShareK10 + t * (kMaxScoreShareK1000 - kMaxScoreShareK10);
}

double AndPostingsTouched(const QueryFeatures& f) {
  if (f.num_terms <= 1) return f.sum_lengths;
  const double others = f.num_terms - 1;
  const double mean_other = std::max(0.0, f.sum_lengths - f.shortest) / others;
  return f.shortest + others * std::min(mean_other, kAndBlock * f.shortest);
}

}  // namespace

const std::vector<std::string>& CostFeatureNames() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "shortest", "second_shortest", "sum_lengths",       "num_terms", "mode",
      "k",        "gpu_resident",    "filter_selectivity"};
  return *names;
}

bool CostFeaturesPrefixOk(const std::vector<std::string>& attributes) {
  const std::vector<std::string>& names = CostFeatureNames();
  if (attributes.size() != kNumCostFeatures && attributes.size() != kNumCostFeaturesWithoutFilter) {
    return false;
  }
  return std::equal(attributes.begin(), attributes.end(), names.begin());
}

std::vector<double> FeatureValues(const QueryFeatures& f) {
  return {f.shortest, f.second_shortest, f.sum_lengths,       f.num_terms, f.mode,
          f.k,        f.gpu_resident,    f.filter_selectivity};
}

QueryFeatures FeaturesFromValues(std::span<const double> v) {
  QueryFeatures f;
  f.shortest = v[0];
  f.second_shortest = v[1];
  f.sum_lengths = v[2];
  f.num_terms = v[3];
  f.mode = v[4];
  f.k = v[5];
  f.gpu_resident = v[6];
  if (v.size() > kNumCostFeaturesWithoutFilter) f.filter_selectivity = v[7];
  return f;
}

QueryFeatures ComputeFeatures(const index::PreparedQuery& prepared,
                              const ResidentFractionFn& resident_fraction) {
  const index::Query& query = prepared.query();
  // Lengths of the distinct terms; a term not in the index has an empty list.
  const index::ResolvedQuery& resolved = prepared.resolved();
  std::vector<double> lengths(resolved.num_absent(), 0.0);
  for (const index::ResolvedTerm& t : resolved.terms) lengths.push_back(t.info.df);
  std::sort(lengths.begin(), lengths.end());
  QueryFeatures f;
  f.shortest = lengths.empty() ? 0 : lengths[0];
  f.second_shortest = lengths.size() < 2 ? 0 : lengths[1];
  for (double l : lengths) f.sum_lengths += l;
  f.num_terms = static_cast<double>(lengths.size());
  f.mode = static_cast<double>(query.mode);
  f.k = query.k;
  if (resident_fraction) {
    const double r = resident_fraction(prepared);
    f.gpu_resident = std::isfinite(r) ? std::clamp(r, 0.0, 1.0) : 1.0;
  }
  if (query.filter != nullptr && query.filter->num_rows() > 0) {
    f.filter_selectivity =
        static_cast<double>(query.filter->Count()) / static_cast<double>(query.filter->num_rows());
  }
  return f;
}

constexpr base::EnumName<FeatureSpace> kFeatureSpaceNames[] = {{FeatureSpace::kLinear, "linear"},
                                                               {FeatureSpace::kLog, "log"}};

absl::string_view FeatureSpaceName(FeatureSpace space) {
  return base::NameOf(kFeatureSpaceNames, space);
}

absl::StatusOr<FeatureSpace> ParseFeatureSpace(absl::string_view name) {
  if (const std::optional<FeatureSpace> space = base::ValueOfName(kFeatureSpaceNames, name)) {
    return *space;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown feature space '", name, "' (expected log or linear)"));
}

std::vector<double> ModelInputs(const QueryFeatures& f, FeatureSpace space) {
  if (space == FeatureSpace::kLinear) return FeatureValues(f);
  return {std::log1p(f.shortest),
          std::log1p(f.second_shortest),
          std::log1p(f.sum_lengths),
          f.num_terms,
          f.mode,
          std::log1p(f.k),
          f.gpu_resident,
          f.filter_selectivity};
}

// Times below 0.1 us are taken as 0.1 us in log space (ln 0 is not a target).
constexpr double kMinLogMs = 1e-4;

double ModelTarget(double ms, FeatureSpace space) {
  return space == FeatureSpace::kLog ? std::log(std::max(ms, kMinLogMs)) : ms;
}

double MsFromModel(double y, FeatureSpace space) {
  const double ms = space == FeatureSpace::kLog ? std::exp(std::min(y, 30.0)) : y;
  return std::isfinite(ms) ? std::max(0.0, ms) : 0.0;
}

double HeuristicMs(const QueryFeatures& f, Processor processor) {
  const bool and_part = f.mode != static_cast<double>(index::QueryMode::kOr);
  const bool or_part =
      f.mode == static_cast<double>(index::QueryMode::kOr) ||
      (f.mode == static_cast<double>(index::QueryMode::kAndOr) && f.shortest < f.k);
  const double touched = and_part ? AndPostingsTouched(f) : 0;
  const double all = or_part ? f.sum_lengths : 0;
  if (processor == Processor::kCpu) {
    return kCpuOverheadMs + kCpuAndMsPerPosting * touched +
           MaxScoreShare(f.k) * kCpuOrMsPerPosting * all;
  }
  return kGpuOverheadMs + kGpuAndMsPerPosting * touched + kGpuOrMsPerPosting * all +
         kGpuColdMsPerPosting * (1 - f.gpu_resident) * f.sum_lengths;
}

std::string HeuristicDescription() {
  return absl::StrCat(
      "heuristic (no trained model): CPU ", kCpuOrMsPerPosting * 1e6, " ns per OR posting (x",
      kMaxScoreShareK10, " at k 10 to x", kMaxScoreShareK1000, " at k 1000 for MaxScore), ",
      kCpuAndMsPerPosting * 1e6, " ns per AND posting touched; GPU ", kGpuOverheadMs, " ms + ",
      kGpuOrMsPerPosting * 1e6, " / ", kGpuAndMsPerPosting * 1e6, " ns per OR / AND posting + ",
      kGpuColdMsPerPosting * 1e6, " ns per posting not in the device cache");
}

}  // namespace tandem::cost_model
