// File: executor_factory.h
//
// Chooses and creates the server's QueryExecutor: PoolQueryExecutor (one FIFO, CPU unless a
// request asks for the GPU) or HybridQueryExecutor (three queues, cost-model routing, work
// stealing), with the cost model the hybrid one needs and the metrics that observe it.
//
// --scheduler=auto picks the hybrid scheduler when a GPU engine serves queries and the pool
// otherwise: with the CPU alone there is nothing to route, and the pool's FIFO is the simpler
// contract. --scheduler=hybrid on a CPU-only node still orders work shortest-predicted-first with
// deadlines; --scheduler=serial runs one query at a time on the processor the cost model says is
// cheaper (the paper's "CPU+GPU serialized" baseline, Figure 7).
//
//   TANDEM_ASSIGN_OR_RETURN(ExecutorSet set,
//                           CreateExecutor(options, *index, engines, *registry, query_metrics));
//   set.executor->Submit(...);   // set.summary: "hybrid scheduler (16 CPU workers, ...)"
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cost_model/cost_model.h"
#include "index/index.h"
#include "prometheus/registry.h"
#include "scheduler/executor_options.h"
#include "scheduler/query_executor.h"
#include "server/engine_factory.h"
#include "server/query_metrics.h"
#include "server/scheduler_metrics.h"

namespace tandem::server {

// Which QueryExecutor serves queries.
enum class SchedulerKind {
  kAuto,    // hybrid when a GPU engine serves queries, pool otherwise
  kPool,    // PoolQueryExecutor: one FIFO; CPU unless a request asks for the GPU
  kHybrid,  // HybridQueryExecutor: three queues, cost-model routing, work stealing
  kSerial,  // HybridQueryExecutor, one query at a time on the cheaper processor (Figure 7)
};
// "auto", "pool", "hybrid" or "serial" (tandem-server's --scheduler).
bool AbslParseFlag(absl::string_view text, SchedulerKind* kind, std::string* error);
std::string AbslUnparseFlag(SchedulerKind kind);

// The hybrid scheduler's cost model.
struct CostModelSettings {
  std::string file;  // a trained model (tandem-train-cost, on this machine); empty: the heuristic
  size_t refine_every = 1024;  // retrain from live timings after this many queries; 0: never
  absl::Duration refine_interval = absl::Seconds(10);  // ... and at most once per this interval
};

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::kAuto;
  // cpu_threads, queue_capacity and testing_query_delay apply to both executors; gpu_threads is
  // also the GPU engine's query contexts (Server sets EngineOptions::gpu_contexts from it).
  scheduler::ExecutorOptions executor;
  CostModelSettings cost_model;
};

struct ExecutorSet {
  // Declared before the executor, so the executor (whose workers use them) is destroyed first.
  std::unique_ptr<cost_model::CostModel> cost_model;  // hybrid only
  std::unique_ptr<SchedulerMetrics> metrics;          // the executor's observer
  std::unique_ptr<scheduler::QueryExecutor> executor;
  // One line for the startup log: which scheduler, its workers and, for the hybrid one, the cost
  // model (trained from which file, or the heuristic).
  std::string summary;
};

// `index`, `engines`, `registry` and `query_metrics` must outlive the returned set. Errors: an
// unreadable or invalid cost model file, unusable executor options (INVALID_ARGUMENT naming the
// option).
absl::StatusOr<ExecutorSet> CreateExecutor(const SchedulerOptions& options,
                                           const index::Index& index, const EngineSet& engines,
                                           prometheus::Registry& registry,
                                           QueryMetrics& query_metrics);

}  // namespace tandem::server
