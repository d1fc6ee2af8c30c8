#include "scheduler/query_run.h"

#include <algorithm>
#include <string>

namespace tandem::scheduler {
namespace {

absl::Status TestingDelay(const index::SearchContext& context, absl::Duration delay) {
  const absl::Time end = absl::Now() + delay;
  for (absl::Time now = absl::Now(); now < end; now = absl::Now()) {
    if (absl::Status s = context.Check(); !s.ok()) return s;
    absl::SleepFor(std::min(absl::Milliseconds(1), end - now));
  }
  return context.Check();
}

}  // namespace

bool IsEngineFault(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

absl::Status NoGpuEngineError() {
  return absl::FailedPreconditionError(
      "engine: GPU requested but this node has no GPU engine (see GetIndexInfo.engines)");
}

std::optional<absl::Duration> RunQuery(const index::PreparedQuery& query,
                                       const index::Engine& engine, const index::Engine& cpu,
                                       const index::SearchContext& context,
                                       absl::Duration testing_query_delay, QueryOutcome& outcome) {
  const absl::Time start = absl::Now();
  std::optional<absl::Duration> measured;
  outcome.engine = std::string(engine.name());
  if (absl::Status ready = context.Check(); !ready.ok()) {
    outcome.result = ready;  // expired or cancelled while queued: never run it
  } else {
    outcome.started = true;
    absl::Status delayed = absl::OkStatus();
    if (testing_query_delay > absl::ZeroDuration())
      delayed = TestingDelay(context, testing_query_delay);
    if (delayed.ok()) {
      const absl::Time search_start = absl::Now();
      outcome.result = engine.Search(query, context);
      if (outcome.result.ok()) measured = absl::Now() - search_start;
    } else {
      outcome.result = delayed;
    }
    // A GPU fault is the engine's problem, not the query's: answer it on the CPU instead, while
    // the call still has time.
    if (&engine != &cpu && IsEngineFault(outcome.result.status()) && context.Check().ok()) {
      outcome.gpu_fallback = true;
      outcome.engine = std::string(cpu.name());
      outcome.result = cpu.Search(query, context);
    }
  }
  outcome.executed = absl::Now() - start;
  return measured;
}

}  // namespace tandem::scheduler
