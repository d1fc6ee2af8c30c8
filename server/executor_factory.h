// File: executor_factory.h
//
// Chooses and creates the server's QueryExecutor: PoolQueryExecutor (one FIFO, CPU unless a
// request asks for the GPU) or HybridQueryExecutor (three queues, cost-model routing, work
// stealing), with the cost model the hybrid one needs and the metrics hooks of both.
//
// --scheduler=auto picks the hybrid scheduler when a GPU engine serves queries and the pool
// otherwise: with the CPU alone there is nothing to route, and the pool's FIFO is the simpler
// contract. --scheduler=hybrid on a CPU-only node still orders work shortest-predicted-first with
// deadlines.
//
//   TANDEM_ASSIGN_OR_RETURN(ExecutorSet set, CreateExecutor(options, *index, engines, *metrics));
//   set.executor->Submit(...);   // set.summary: "hybrid scheduler (16 CPU workers, ...)"
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "index/index.h"
#include "cost_model/cost_model.h"
#include "server/engine_factory.h"
#include "server/metrics.h"
#include "scheduler/query_executor.h"
#include "server/server.h"

namespace tandem::server {

struct ExecutorSet {
  // Declared before the executor, so the executor (whose workers use it) is destroyed first.
  std::unique_ptr<cost_model::CostModel> cost_model;  // hybrid only
  std::unique_ptr<scheduler::QueryExecutor> executor;
  // One line for the startup log: which scheduler, its workers and, for the hybrid one, the cost
  // model (trained from which file, or the heuristic).
  std::string summary;
};

// `index`, `engines` and `metrics` must outlive the returned set. Errors: an unreadable or invalid
// --cost-model file, bad executor options.
absl::StatusOr<ExecutorSet> CreateExecutor(const ServerOptions& options, const index::Index& index,
                                           const server::EngineSet& engines,
                                           ServerMetrics& metrics);

}  // namespace tandem::server
