// File: cost_predictor.h
//
// What the hybrid scheduler asks of a cost model (Ding et al. 2009, section 9): for one query, the
// predicted execution time on each processor, and afterwards the measured time, so the model can
// keep refining itself from live timings. `CostModel` (M5 model trees, cost_model.h) implements it;
// tests use fakes with known costs.
//
//   CostEstimate estimate = predictor.Predict(query);   // {.cpu_ms = 3.1, .gpu_ms = 0.4}
//   ... run on the GPU ...
//   predictor.Observe(query, Processor::kGpu, measured_ms);
#pragma once

#include "absl/strings/string_view.h"
#include "index/prepared_query.h"

namespace tandem::cost_model {

enum class Processor { kCpu, kGpu };

inline absl::string_view ProcessorName(Processor p) { return p == Processor::kCpu ? "cpu" : "gpu"; }

struct CostEstimate {
  double cpu_ms = 0;  // predicted execution time on the CPU engine (one thread), milliseconds
  double gpu_ms = 0;  // predicted execution time on the GPU engine (one query context)
  double ms(Processor p) const { return p == Processor::kCpu ? cpu_ms : gpu_ms; }
};

class CostPredictor {
 public:
  virtual ~CostPredictor() = default;
  // Thread-safe; cheap (called once per query on the submitting thread). Never negative.
  virtual CostEstimate Predict(const index::PreparedQuery& query) const = 0;
  // Thread-safe; a measured execution of `query` on `processor`. Implementations may ignore it.
  virtual void Observe(const index::PreparedQuery& query, Processor processor,
                       double measured_ms) = 0;
};

}  // namespace tandem::cost_model
