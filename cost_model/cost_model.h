// File: cost_model.h
//
// The scheduler's cost model (Ding et al. 2009, section 9): per engine, M5 rules predicting a
// query's execution time from its features (cost_features.h), trained by tandem-train-cost on the
// target machine (cost_model_file.h) and refined in the background from live timings.
//
//   - Predict computes the features (one lexicon lookup per term, the GPU cache fraction) and
//     evaluates each engine's rules; an engine without rules gets the documented heuristic, and
//     description() says so.
//   - Observe appends (features, measured ms) to a bounded ring of recent samples per engine. The
//     features are those Predict computed for the same query (remembered in a small table), so the
//     GPU cache fraction is the one the query ran under, not the one after it.
//   - Every `refine_every` observations (and no sooner than `refine_min_interval` after the last) a
//     background thread retrains the engines that have new samples on the file's training samples
//     plus the live ones, one in five held out; when the new rules predict the held-out samples at
//     least as well as those in use (or the heuristic), it swaps them in under a mutex held only
//     for the pointer copy. One retraining at a time; Predict and Observe never wait for one.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model,
//       CostModel::Load("/srv/tandem/cost-model.txt",
//                       {.index = index.get(), .resident_fraction =
//                       engines.gpu_resident_fraction}));
//   CostEstimate cost = model->Predict(query);
//   ... run it on the GPU, measure ...
//   model->Observe(query, Processor::kGpu, measured_ms);
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cost_model/cost_features.h"
#include "cost_model/cost_model_file.h"
#include "cost_model/cost_predictor.h"
#include "cost_model/m5_rules.h"
#include "index/index.h"

namespace tandem::cost_model {

struct CostModelOptions {
  const index::Index* index = nullptr;   // required; must outlive the model
  ResidentFractionFn resident_fraction;  // the GPU cache fraction of a query; empty: 1
  size_t live_samples = 4096;            // recent samples kept per engine
  size_t refine_every = 1024;            // retrain after this many observations; 0: never
  // ... and no sooner than this after the last retraining began: at 20,000 queries/s, 1,024
  // observations come every 50 ms, and each retraining keeps a core busy for tens of ms.
  absl::Duration refine_min_interval = absl::ZeroDuration();
  size_t min_train_samples = 50;  // fewer samples than this: an engine keeps what it has
  M5Options m5;
};

class CostModel : public CostPredictor {
 public:
  // The model in `path`. NOT_FOUND / INVALID_ARGUMENT (naming file and line) when it cannot be
  // read.
  static absl::StatusOr<std::unique_ptr<CostModel>> Load(const std::string& path,
                                                         CostModelOptions options);
  // No trained model: the heuristic for both engines until live timings train one.
  static absl::StatusOr<std::unique_ptr<CostModel>> Heuristic(CostModelOptions options);
  // From a file already in memory (tandem-train-cost, tests); `origin` names it in description().
  static absl::StatusOr<std::unique_ptr<CostModel>> FromFile(CostModelFile file,
                                                             CostModelOptions options,
                                                             std::string origin);
  ~CostModel() override;  // waits for a retraining in progress

  CostEstimate Predict(const index::PreparedQuery& query) const override;
  void Observe(const index::PreparedQuery& query, Processor processor, double measured_ms) override;

  QueryFeatures Features(const index::PreparedQuery& query) const;
  CostEstimate PredictFeatures(const QueryFeatures& features) const;
  void ObserveFeatures(const QueryFeatures& features, Processor processor, double measured_ms);

  // One line: where the models come from, rules per engine, their evaluation error, refinements;
  // "heuristic" for an engine without a model.
  std::string description() const;
  bool has_model(Processor processor) const;
  // From the file's evaluation queries (tandem-train-cost); NaN when it has none.
  double mean_relative_error(Processor processor) const;
  // Over the live samples in the ring: each prediction made at Observe time against the time
  // measured; NaN before any observation.
  double live_relative_error(Processor processor) const;
  size_t refinements() const;
  // Retrainings whose rules predicted held-out samples worse than the rules in use (not swapped
  // in).
  size_t rejected_refinements() const;

  // Blocks until no retraining is pending or running (tests, tools).
  void WaitForRefinement() const;
  // The current rules and samples (file and live, thinned), for WriteCostModelFile.
  CostModelFile Snapshot() const;

 private:
  struct Ring {
    std::vector<CostSample> samples;  // capacity live_samples
    std::vector<double> errors;       // relative error of the prediction made at Observe
    size_t next = 0;
    double error_sum = 0;
    bool fresh = false;  // samples arrived since the last retraining
  };
  class FeatureMemo;

  CostModel(CostModelFile file, CostModelOptions options, std::string origin);
  void RefineLoop();
  std::shared_ptr<const M5Rules> rules(Processor p) const;

  const CostModelOptions options_;
  const std::string origin_;
  CostModelFile file_;  // metadata, evaluation figures and training samples; rules live below
  std::unique_ptr<FeatureMemo> memo_;

  mutable std::mutex models_mu_;
  std::shared_ptr<const M5Rules> rules_[2];  // by Processor; null: heuristic
  // Bumped under models_mu_ whenever rules_ change. Predict runs per query on every worker and
  // submitting thread: each thread keeps the rules it last read (thread_local, keyed by id_) and
  // takes models_mu_ only when the generation moved, so predictions neither lock nor touch the
  // shared reference counts.
  std::atomic<uint64_t> rules_generation_{1};
  const uint64_t id_;  // unique per CostModel in the process

  mutable std::mutex samples_mu_;
  mutable std::condition_variable refine_cv_, idle_cv_;
  Ring live_[2];
  size_t since_refine_ = 0;
  absl::Time last_refine_ = absl::InfinitePast();
  bool refine_requested_ = false;
  bool stopping_ = false;
  size_t refinements_ = 0;
  size_t rejected_refinements_ = 0;
  std::thread refiner_;
};

}  // namespace tandem::cost_model
