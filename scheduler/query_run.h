// File: query_run.h
//
// Running one admitted query once an executor has chosen its engine: what every QueryExecutor
// shares, so that PoolQueryExecutor and HybridQueryExecutor answer alike. A query whose caller gave
// up or whose deadline passed while it waited is never started; a GPU engine fault (out of memory,
// CUDA error) is answered on the CPU engine while the call still has time.
//
//   QueryOutcome outcome;
//   std::optional<absl::Duration> measured =
//       RunQuery(task.query, *gpu, *cpu, context, /*testing_query_delay=*/absl::ZeroDuration(),
//       outcome);
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "index/engine.h"
#include "index/query.h"
#include "scheduler/query_executor.h"

namespace tandem::scheduler {

// Failures of the engine itself (device out of memory, CUDA errors), as opposed to answers about
// the query (invalid, deadline, cancelled) or damage the CPU would hit too (DATA_LOSS).
bool IsEngineFault(const absl::Status& status);

// FAILED_PRECONDITION for a query that asked for the GPU on a node without a GPU engine.
absl::Status NoGpuEngineError();

// Runs `query` on `engine` under `context`, first waiting `testing_query_delay` (testing only; the
// wait honours the context). When `context` already says stop, the query is not started and the
// outcome carries that status. When `engine` is not `cpu` and fails with an engine fault, `cpu`
// answers instead (outcome.gpu_fallback). Sets outcome's result, engine, started, gpu_fallback and
// executed (from this call on); leaves queued to the caller.
//
// Returns how long `engine.Search` took when it answered the query itself, successfully: the
// measurement a cost model may learn from. Nothing for queries not run, failed, stopped by their
// context or answered by the fallback.
std::optional<absl::Duration> RunQuery(const index::PreparedQuery& query,
                                       const index::Engine& engine, const index::Engine& cpu,
                                       const index::SearchContext& context,
                                       absl::Duration testing_query_delay, QueryOutcome& outcome);

}  // namespace tandem::scheduler
