// tandem-server's expert and tuning flags, defined in tandem_server_expert.cc so that --help
// leaves them out and --helpfull lists them by owner: request limits, the gRPC transport, standing
// queries, the scheduler, the engines. Their defaults suit every node; tandem_server.cc reads them
// into ServerOptions with the operator's flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "base/thread_affinity.h"
#include "cpu/daat_engine.h"
#include "scheduler/executor_options.h"
#include "server/engine_factory.h"

// Request limits.
ABSL_DECLARE_FLAG(uint32_t, max_query_terms);
ABSL_DECLARE_FLAG(uint32_t, max_query_bytes);
ABSL_DECLARE_FLAG(uint32_t, max_batch);
ABSL_DECLARE_FLAG(uint32_t, max_batch_hits);
ABSL_DECLARE_FLAG(int32_t, max_receive_message_bytes);
ABSL_DECLARE_FLAG(int32_t, max_send_message_bytes);

// Memory.
ABSL_DECLARE_FLAG(uint64_t, filter_cache_bytes);

// The gRPC transport.
ABSL_DECLARE_FLAG(uint32_t, grpc_max_concurrent_streams);
ABSL_DECLARE_FLAG(uint64_t, grpc_memory_quota_bytes);
ABSL_DECLARE_FLAG(absl::Duration, keepalive_time);
ABSL_DECLARE_FLAG(absl::Duration, keepalive_timeout);
ABSL_DECLARE_FLAG(tandem::base::CountOrAuto, tune_rpc_nice);

// Standing queries.
ABSL_DECLARE_FLAG(uint32_t, match_threads);
ABSL_DECLARE_FLAG(uint32_t, max_filters_per_subscription);
ABSL_DECLARE_FLAG(int64_t, subscriptions_compact_bytes);
ABSL_DECLARE_FLAG(uint32_t, max_constraints_per_filter);
ABSL_DECLARE_FLAG(uint32_t, max_match_documents);
ABSL_DECLARE_FLAG(uint32_t, watch_queue);
ABSL_DECLARE_FLAG(uint64_t, watch_queue_bytes);

// The scheduler.
ABSL_DECLARE_FLAG(tandem::base::CountOrAuto, tune_answer_threads);
ABSL_DECLARE_FLAG(tandem::base::CpuList, tune_cpu_worker_cpus);
ABSL_DECLARE_FLAG(tandem::base::CpuList, tune_gpu_worker_cpus);
ABSL_DECLARE_FLAG(absl::Duration, tune_default_deadline);
ABSL_DECLARE_FLAG(absl::Duration, tune_max_wait);
ABSL_DECLARE_FLAG(tandem::scheduler::DispatchProtocol, tune_dispatch);
ABSL_DECLARE_FLAG(uint32_t, tune_cost_model_refine_every);
ABSL_DECLARE_FLAG(absl::Duration, tune_cost_model_refine_interval);

// The engines: the CPU engine's OR, the GPU engine and its batches.
ABSL_DECLARE_FLAG(tandem::cpu::OrAlgorithm, cpu_or);
ABSL_DECLARE_FLAG(tandem::server::GpuWait, tune_gpu_wait);
ABSL_DECLARE_FLAG(bool, tune_gpu_batch_compressed);
ABSL_DECLARE_FLAG(uint64_t, tune_gpu_batch_threshold);
ABSL_DECLARE_FLAG(absl::Duration, tune_gpu_batch_wait);
ABSL_DECLARE_FLAG(uint32_t, tune_gpu_batch_runners);
ABSL_DECLARE_FLAG(uint64_t, tune_gpu_filter_min_words);
ABSL_DECLARE_FLAG(uint32_t, tune_live_gpu_min_docs);

// Tests only.
ABSL_DECLARE_FLAG(absl::Duration, testing_query_delay);

namespace tandem::tools {

// The groups above, as --helpfull lists them (base::AppInfo::groups).
std::vector<base::FlagGroup> ServerExpertFlagGroups();

}  // namespace tandem::tools
