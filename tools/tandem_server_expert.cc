// tandem-server's expert and tuning flags (tandem_server_expert.h), grouped by the part of the
// node that owns them; --helpfull lists them under these groups' titles.
#include "tools/tandem_server_expert.h"

#include "absl/flags/flag.h"

// Request limits.
ABSL_FLAG(uint32_t, max_query_terms, 64, "Most terms in one query (after analysis, for text).");
ABSL_FLAG(uint32_t, max_query_bytes, 4096, "Most bytes of query text (or of all terms together).");
ABSL_FLAG(uint32_t, max_batch, 1024, "Most queries in one SearchBatch call.");
ABSL_FLAG(uint32_t, max_batch_hits, 100000,
          "Most hits one SearchBatch call may ask for (its queries' k summed).");
ABSL_FLAG(int32_t, max_receive_message_bytes, 16 << 20, "Largest request message accepted.");
ABSL_FLAG(int32_t, max_send_message_bytes, 256 << 20, "Largest response message sent.");

// Memory.
ABSL_FLAG(uint64_t, filter_cache_bytes, uint64_t{256} << 20,
          "Bytes the cache of evaluated filters may hold (keys, bitmaps and bookkeeping), least "
          "recently used out beyond; counted against --memory-breaker-bytes, and emptied first "
          "when queries need the room. 0 caches nothing.");

// The gRPC transport.
ABSL_FLAG(uint32_t, grpc_max_concurrent_streams, 256,
          "Most calls one client connection may have open at once; more wait in the client.");
ABSL_FLAG(uint64_t, grpc_memory_quota_bytes, uint64_t{1} << 30,
          "Memory gRPC may take for connections and calls in transit (its resource quota).");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(60),
          "Idle time after which the server pings a client to check it is still there.");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(20),
          "How long a keepalive ping may go unanswered before the connection is closed.");
ABSL_FLAG(tandem::base::CountOrAuto, tune_rpc_nice, tandem::base::CountOrAuto{},
          "Nice levels below the query workers for the threads that accept calls (0..19); auto: "
          "10 without a GPU engine, so that under overload the workers keep their cores, 0 with "
          "one.");

// Standing queries (tandem.v1.SubscriptionService).
ABSL_FLAG(uint32_t, match_threads, 0,
          "Threads of the CPU matcher (one Match call's documents are split over them), at most "
          "256; 0 means one per CPU core.");
ABSL_FLAG(uint32_t, max_filters_per_subscription, 64,
          "Most filters (ORed groups of constraints) in one subscription.");
ABSL_FLAG(uint32_t, max_constraints_per_filter, 32,
          "Most constraints in one filter, after `terms contains` is analyzed into terms "
          "(1..255).");
ABSL_FLAG(uint32_t, max_match_documents, 1024, "Most documents in one Match call.");
ABSL_FLAG(int64_t, subscriptions_compact_bytes, 1 << 20,
          "The --subscriptions file's change log is rewritten into a new snapshot, in the "
          "background, once it holds more bytes than this and than the snapshot (at least 1).");
ABSL_FLAG(uint32_t, watch_queue, 1024,
          "Matched documents each Watch stream may queue for a client that reads slowly; newer "
          "ones are dropped (and counted) beyond.");
ABSL_FLAG(uint64_t, watch_queue_bytes, uint64_t{64} << 20,
          "Bytes the events queued for all Watch streams together may take, counted against "
          "--memory-breaker-bytes; beyond, the streams holding the most lose events first "
          "(counted as drops). At least 1 MiB.");

// The scheduler.
ABSL_FLAG(tandem::base::CountOrAuto, tune_answer_threads, tandem::base::CountOrAuto{},
          "Threads that answer the queries the GPU ran (build the response, complete the RPC), so "
          "GPU workers go back to the device at once; auto: one per GPU query in flight, at most "
          "16; 0: GPU workers answer their own queries.");
ABSL_FLAG(tandem::base::CpuList, tune_cpu_worker_cpus, tandem::base::CpuList{},
          "The CPUs the CPU query workers may run on, as for taskset -c (0-3,8,10-11); empty: "
          "any. With --tune-gpu-worker-cpus on other CPUs, a CPU query never takes the core of a "
          "GPU worker that is launching kernels.");
ABSL_FLAG(tandem::base::CpuList, tune_gpu_worker_cpus, tandem::base::CpuList{},
          "The CPUs the GPU workers may run on, as for --tune-cpu-worker-cpus; empty: any.");
ABSL_FLAG(absl::Duration, tune_default_deadline, absl::Milliseconds(500),
          "The deadline a query is scheduled by when its call has none or a later one (urgency, "
          "tandem_scheduler_deadline_misses_total). Only a call's own deadline stops a query.");
ABSL_FLAG(absl::Duration, tune_max_wait, absl::Milliseconds(20),
          "Each processor runs its queue shortest predicted time first, but a query that has "
          "waited this long goes first (0: oldest first).");
ABSL_FLAG(tandem::scheduler::DispatchProtocol, tune_dispatch,
          tandem::scheduler::DispatchProtocol::kCombining,
          "How workers get their next query: locked (each takes the scheduler's lock) or "
          "combining (whoever holds it serves every waiting worker).");
ABSL_FLAG(uint32_t, tune_cost_model_refine_every, 1024,
          "Retrain the cost model from live timings (in a background thread) after this many "
          "measured queries; 0 turns live refinement off.");
ABSL_FLAG(absl::Duration, tune_cost_model_refine_interval, absl::Seconds(10),
          "Retrain the cost model at most once per this interval.");

// The engines.
ABSL_FLAG(tandem::cpu::OrAlgorithm, cpu_or, tandem::cpu::DaatEngineOptions{}.or_algorithm,
          "How the CPU engine runs OR and the OR pass of AND+OR, all rank-safe: maxscore, "
          "block-max-maxscore, wand, block-max-wand, or exhaustive (every posting scored).");
ABSL_FLAG(tandem::server::GpuWait, tune_gpu_wait, tandem::server::GpuWait::kAuto,
          "How a thread waiting for the GPU holds its core: spin (lowest latency, a core per "
          "waiting query), yield, blocking (sleeps until the device signals), auto (CUDA's "
          "default: spin).");
ABSL_FLAG(bool, tune_gpu_batch_compressed, false,
          "GPU batches search the lists' docIDs compressed in SegLRC (Ao et al. 2011, section "
          "4.3) instead of plain: a smaller device cache per list, slower searches.");
ABSL_FLAG(uint64_t, tune_gpu_batch_threshold, uint64_t{16} << 20,
          "A GPU batch starts once its queries' work reaches this many postings (an AND's "
          "shortest list, an OR's lists).");
ABSL_FLAG(absl::Duration, tune_gpu_batch_wait, absl::Microseconds(500),
          "The longest a GPU query waits for others to share its batch; a query at low load runs "
          "at once on its own.");
ABSL_FLAG(uint32_t, tune_gpu_batch_runners, 4,
          "GPU batches that may run at once (device scratch and pinned memory each).");
ABSL_FLAG(uint64_t, tune_gpu_filter_min_words, tandem::server::kDefaultGpuFilterMinWords,
          "Filters that combine attribute bitmaps holding at least this many compressed words "
          "(an IN, a range, AND, OR) are evaluated on the GPU, others on the CPU. Only with a GPU "
          "engine.");
ABSL_FLAG(uint32_t, tune_live_gpu_min_docs, 1u << 20,
          "With writes and a GPU engine, segments of at least this many documents (merged ones) "
          "are searched on the GPU, smaller fresh ones on the CPU, merged exactly.");

// Tests only; --help leaves testing_* flags out.
ABSL_FLAG(absl::Duration, testing_query_delay, absl::ZeroDuration(),
          "Tests only: every query waits this long (honouring its deadline and cancellation) "
          "before it runs.");

namespace tandem::tools {

std::vector<base::FlagGroup> ServerExpertFlagGroups() {
  return {
      {.title = "Request limits",
       .flags = {"max-query-terms", "max-query-bytes", "max-batch", "max-batch-hits",
                 "max-receive-message-bytes", "max-send-message-bytes"}},
      {.title = "Memory", .flags = {"filter-cache-bytes"}},
      {.title = "gRPC transport",
       .flags = {"grpc-max-concurrent-streams", "grpc-memory-quota-bytes", "keepalive-time",
                 "keepalive-timeout", "tune-rpc-nice"}},
      {.title = "Standing queries",
       .flags = {"match-threads", "max-filters-per-subscription", "max-constraints-per-filter",
                 "max-match-documents", "watch-queue", "watch-queue-bytes",
                 "subscriptions-compact-bytes"}},
      {.title = "Scheduler",
       .flags = {"tune-max-wait", "tune-default-deadline", "tune-answer-threads",
                 "tune-cpu-worker-cpus", "tune-gpu-worker-cpus", "tune-dispatch",
                 "tune-cost-model-refine-every", "tune-cost-model-refine-interval"}},
      {.title = "CPU engine", .flags = {"cpu-or"}},
      {.title = "GPU engine",
       .flags = {"tune-gpu-wait", "tune-gpu-filter-min-words", "tune-gpu-batch-threshold",
                 "tune-gpu-batch-wait", "tune-gpu-batch-runners", "tune-gpu-batch-compressed"}},
      {.title = "Tests only", .flags = {"testing-query-delay"}},
  };
}

}  // namespace tandem::tools
