#include "server/metrics.h"

#include <string>

#include "absl/time/time.h"
#include "server/status_mapping.h"

namespace tandem::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// 50 µs to 10 s, about three buckets per decade: a cached term lookup lands in the first buckets, a
// long OR over a big index in the last ones.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  return *buckets;
}

// Measured / predicted time: a factor of 8 either way, finer near 1.
const prometheus::Histogram::BucketBoundaries& RatioBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.125, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.11, 1.25, 1.5, 2.0, 4.0, 8.0};
  return *buckets;
}

std::string Str(absl::string_view s) { return std::string(s.data(), s.size()); }

}  // namespace

ServerMetrics::ServerMetrics(const BuildInfo& build, const std::vector<std::string>& engines)
    : registry_(std::make_shared<prometheus::Registry>()),
      queries_(BuildCounter()
                   .Name("tandem_queries_total")
                   .Help("Queries answered, by query mode, engine and gRPC status code.")
                   .Register(*registry_)),
      queue_wait_(BuildHistogram()
                      .Name("tandem_query_queue_wait_seconds")
                      .Help("Time queries waited in the admission queue.")
                      .Register(*registry_)),
      execution_(BuildHistogram()
                     .Name("tandem_query_execution_seconds")
                     .Help("Time queries ran on an engine.")
                     .Register(*registry_)),
      duration_(BuildHistogram()
                    .Name("tandem_query_duration_seconds")
                    .Help("Time from a query's arrival to its answer.")
                    .Register(*registry_)),
      postings_(BuildCounter()
                    .Name("tandem_postings_decoded_total")
                    .Help("DocIDs decoded from compressed posting-list blocks.")
                    .Register(*registry_)),
      rejected_(BuildCounter()
                    .Name("tandem_rejected_queries_total")
                    .Help("Queries not run, by reason.")
                    .Register(*registry_)),
      gpu_fallbacks_(
          BuildCounter()
              .Name("tandem_gpu_fallbacks_total")
              .Help("Queries the GPU engine failed (out of memory, CUDA fault) and the CPU "
                    "engine answered instead.")
              .Register(*registry_)
              .Add({})),
      in_flight_(BuildGauge()
                     .Name("tandem_queries_in_flight")
                     .Help("Queries admitted and not yet answered.")
                     .Register(*registry_)
                     .Add({})),
      queue_depth_(BuildGauge()
                       .Name("tandem_admission_queue_depth")
                       .Help("Jobs (queries or batches) waiting for a worker.")
                       .Register(*registry_)
                       .Add({})),
      queue_capacity_(BuildGauge()
                          .Name("tandem_admission_queue_capacity")
                          .Help("Jobs the admission queue holds before it refuses new ones.")
                          .Register(*registry_)
                          .Add({})),
      index_documents_(BuildGauge()
                           .Name("tandem_index_documents")
                           .Help("Documents in the served index.")
                           .Register(*registry_)
                           .Add({})),
      index_terms_(BuildGauge()
                       .Name("tandem_index_terms")
                       .Help("Distinct terms in the served index.")
                       .Register(*registry_)
                       .Add({})),
      index_postings_(BuildGauge()
                          .Name("tandem_index_postings")
                          .Help("Postings in the served index.")
                          .Register(*registry_)
                          .Add({})),
      index_bytes_(BuildGauge()
                       .Name("tandem_index_size_bytes")
                       .Help("Bytes of the served index's files.")
                       .Register(*registry_)
                       .Add({})),
      decisions_(BuildCounter()
                     .Name("tandem_scheduler_decisions_total")
                     .Help("Queries the hybrid scheduler handed to a processor, by the queue they "
                           "waited in (cpu, gpu, shared; pinned: an engine hint) and processor.")
                     .Register(*registry_)),
      steals_(BuildCounter()
                  .Name("tandem_scheduler_steals_total")
                  .Help("Queries a processor took from the other processor's queue.")
                  .Register(*registry_)),
      urgent_(BuildCounter()
                  .Name("tandem_scheduler_urgent_total")
                  .Help("Queries run ahead of their queue because their deadline was near.")
                  .Register(*registry_)),
      cost_ratio_(BuildHistogram()
                      .Name("tandem_scheduler_cost_ratio")
                      .Help("Measured over predicted execution time of queries, by engine.")
                      .Register(*registry_)),
      deadline_misses_(BuildCounter()
                           .Name("tandem_scheduler_deadline_misses_total")
                           .Help("Queries answered after their scheduling deadline (the call's, "
                                 "or arrival + --default-deadline when earlier).")
                           .Register(*registry_)
                           .Add({})),
      scheduler_queue_depth_(BuildGauge()
                                 .Name("tandem_scheduler_queue_depth")
                                 .Help("Queries waiting in each of the scheduler's queues.")
                                 .Register(*registry_)),
      workers_(BuildGauge()
                   .Name("tandem_processor_workers")
                   .Help("Worker threads per processor (GPU: queries in flight at once).")
                   .Register(*registry_)),
      busy_workers_(BuildGauge()
                        .Name("tandem_processor_busy_workers")
                        .Help("Workers of each processor running a query now.")
                        .Register(*registry_)),
      busy_seconds_(BuildCounter()
                        .Name("tandem_processor_busy_seconds_total")
                        .Help("Worker time spent running queries, per processor; divided by the "
                              "workers, its rate is the processor's utilization.")
                        .Register(*registry_)),
      cost_model_error_(BuildGauge()
                            .Name("tandem_cost_model_mean_relative_error")
                            .Help("Mean relative error of the cost model's predictions, by engine; "
                                  "source: training (the model file's evaluation queries) or "
                                  "live (recent queries).")
                            .Register(*registry_)) {
  BuildGauge()
      .Name("tandem_build_info")
      .Help("Build of this server; the value is always 1.")
      .Register(*registry_)
      .Add({{"version", build.version},
            {"commit", build.commit},
            {"gpu", build.gpu ? "true" : "false"}})
      .Set(1);
  for (absl::string_view reason :
       {reject_reason::kInvalidArgument, reject_reason::kQueueFull, reject_reason::kDraining,
        reject_reason::kExpiredInQueue, reject_reason::kNoGpu}) {
    rejected_.Add({{"reason", Str(reason)}});
  }
  for (const std::string& engine : engines) {
    postings_.Add({{"engine", engine}});
    for (const char* mode : {"and", "or", "and_or"}) {
      queries_.Add({{"mode", mode}, {"engine", engine}, {"code", "OK"}});
      queue_wait_.Add({{"mode", mode}, {"engine", engine}}, LatencyBuckets());
      execution_.Add({{"mode", mode}, {"engine", engine}}, LatencyBuckets());
      duration_.Add({{"mode", mode}, {"engine", engine}}, LatencyBuckets());
    }
  }
}

void ServerMetrics::SetWorkers(absl::string_view processor, size_t workers) {
  const prometheus::Labels labels{{"processor", Str(processor)}};
  workers_.Add(labels).Set(static_cast<double>(workers));
  busy_workers_.Add(labels);
  busy_seconds_.Add(labels);
  steals_.Add(labels);
  urgent_.Add(labels);
  for (const char* queue : {"cpu", "gpu", "shared", "pinned"}) {
    decisions_.Add({{"queue", queue}, {"processor", Str(processor)}});
  }
  cost_ratio_.Add({{"engine", Str(processor)}}, RatioBuckets());
  scheduler_queue_depth_.Add({{"queue", Str(processor)}});
  scheduler_queue_depth_.Add({{"queue", "shared"}});
}

void ServerMetrics::RecordDecision(absl::string_view queue, absl::string_view processor,
                                   bool stolen, bool urgent) {
  decisions_.Add({{"queue", Str(queue)}, {"processor", Str(processor)}}).Increment();
  if (stolen) steals_.Add({{"processor", Str(processor)}}).Increment();
  if (urgent) urgent_.Add({{"processor", Str(processor)}}).Increment();
}

void ServerMetrics::RecordCostRatio(absl::string_view engine, double predicted_ms,
                                    double measured_ms) {
  if (!(predicted_ms > 0)) return;  // no prediction to compare with
  cost_ratio_.Add({{"engine", Str(engine)}}, RatioBuckets()).Observe(measured_ms / predicted_ms);
}

void ServerMetrics::RecordDeadlineMiss() { deadline_misses_.Increment(); }

void ServerMetrics::SetSchedulerQueueDepth(absl::string_view queue, size_t depth) {
  scheduler_queue_depth_.Add({{"queue", Str(queue)}}).Set(static_cast<double>(depth));
}

void ServerMetrics::SetBusyWorkers(absl::string_view processor, size_t busy) {
  busy_workers_.Add({{"processor", Str(processor)}}).Set(static_cast<double>(busy));
}

void ServerMetrics::AddBusyTime(absl::string_view processor, absl::Duration busy) {
  busy_seconds_.Add({{"processor", Str(processor)}}).Increment(absl::ToDoubleSeconds(busy));
}

void ServerMetrics::SetCostModelError(absl::string_view engine, absl::string_view source,
                                      double mean_relative_error) {
  cost_model_error_.Add({{"engine", Str(engine)}, {"source", Str(source)}})
      .Set(mean_relative_error);
}

void ServerMetrics::SetIndex(const index::Index& index) {
  index_documents_.Set(index.num_docs());
  index_terms_.Set(static_cast<double>(index.num_terms()));
  index_postings_.Set(static_cast<double>(index.stats().num_postings));
  index_bytes_.Set(static_cast<double>(index.index_bytes()));
}

void ServerMetrics::SetQueueCapacity(size_t capacity) {
  queue_capacity_.Set(static_cast<double>(capacity));
}

void ServerMetrics::SetQueueDepth(size_t depth) { queue_depth_.Set(static_cast<double>(depth)); }

void ServerMetrics::SetInFlight(int64_t queries) { in_flight_.Set(static_cast<double>(queries)); }

void ServerMetrics::RecordQuery(const QueryRecord& record) {
  const std::string mode = Str(record.mode);
  const std::string engine = Str(record.engine);
  queries_.Add({{"mode", mode}, {"engine", engine}, {"code", Str(GrpcCodeName(record.code))}})
      .Increment();
  if (record.gpu_fallback) gpu_fallbacks_.Increment();
  if (!record.reached_engine) return;
  const prometheus::Labels labels{{"mode", mode}, {"engine", engine}};
  queue_wait_.Add(labels, LatencyBuckets()).Observe(absl::ToDoubleSeconds(record.queued));
  if (record.started) {
    execution_.Add(labels, LatencyBuckets()).Observe(absl::ToDoubleSeconds(record.executed));
  }
  duration_.Add(labels, LatencyBuckets()).Observe(absl::ToDoubleSeconds(record.total));
  if (record.postings_decoded > 0) {
    postings_.Add({{"engine", engine}}).Increment(static_cast<double>(record.postings_decoded));
  }
}

void ServerMetrics::RecordRejection(absl::string_view reason, uint64_t queries) {
  rejected_.Add({{"reason", Str(reason)}}).Increment(static_cast<double>(queries));
}

}  // namespace tandem::server
