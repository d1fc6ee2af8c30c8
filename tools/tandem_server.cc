// tandem-server: serves one index over gRPC (tandem.v1.SearchService, its standing queries in
// tandem.v1.SubscriptionService, grpc.health.v1, reflection) and Prometheus metrics over HTTP.
// --help lists the flags an operator sets; --helpfull adds the expert and tuning ones
// (tandem_server_expert.h).
//
// On startup it prints one line to stdout, "tandem-server listening on HOST:PORT (metrics on
// HOST:PORT)", with the real ports when 0 was asked for. SIGTERM or SIGINT drains: health goes
// NOT_SERVING, new queries get UNAVAILABLE, in-flight ones finish within --drain-timeout, exit 0.
// A second signal during the drain exits 1 at once. Startup failures print one line to stderr and
// exit 1; a malformed flag exits 2.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "base/thread_affinity.h"
#include "index/index.h"
#include "match/subscription_registry.h"
#include "scheduler/executor_options.h"
#include "server/engine_factory.h"
#include "server/executor_factory.h"
#include "server/search_service.h"
#include "server/server.h"
#include "server/serving_index.h"
#include "tools/serve_main.h"
#include "tools/tandem_server_expert.h"

using tandem::server::GpuMode;
using tandem::server::SchedulerKind;

// --match-engine: match::MatchEngine as a flag (the match layer's enum has no flag functions).
struct MatchEngineFlag {
  tandem::match::MatchEngine engine = tandem::match::MatchEngine::kAuto;
};
bool AbslParseFlag(absl::string_view text, MatchEngineFlag* flag, std::string* error) {
  absl::StatusOr<tandem::match::MatchEngine> engine = tandem::match::ParseMatchEngine(text);
  if (!engine.ok()) {
    *error = absl::StrCat("must be auto, cpu or gpu, got '", text, "'");
    return false;
  }
  flag->engine = *engine;
  return true;
}
std::string AbslUnparseFlag(const MatchEngineFlag& flag) {
  switch (flag.engine) {
    case tandem::match::MatchEngine::kCpu:
      return "cpu";
    case tandem::match::MatchEngine::kGpu:
      return "gpu";
    case tandem::match::MatchEngine::kAuto:
      break;
  }
  return "auto";
}

// The flags an operator sets, which --help lists; the expert and tuning ones are in
// tandem_server_expert.cc.

// The index served and the gRPC service.
ABSL_FLAG(std::string, index, "",
          "Index directory to serve (required). SIGHUP re-reads it: the node switches to the index "
          "found there without a restart and without failing a query.");
ABSL_FLAG(bool, read_only, false,
          "Refuse the IndexService calls (writes, LoadIndex); SIGHUP still re-reads --index.");
ABSL_FLAG(absl::Duration, refresh_interval, absl::Seconds(1),
          "Acknowledged writes become searchable within this interval (0: only at "
          "IndexService.Refresh).");
ABSL_FLAG(std::string, live_shard, "",
          "COLLECTION:SHARD/SHARDS (\"news:0/2\"): this writable node is that shard of a "
          "collection written through tandem-broker, which sends it the ids hashing to it.");
ABSL_FLAG(bool, sync_writes, true,
          "Acknowledge a write once it is on disk (fdatasync, shared by concurrent writes); "
          "false: once the OS has it (a machine crash may lose the last 100 ms of writes).");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC address, host:port. Loopback unless told otherwise; port 0 picks a free port.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate chain; turns TLS on (with --tls-key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; when set, clients must present a certificate it signed (mutual TLS).");
ABSL_FLAG(bool, allow_insecure, false,
          "Serve gRPC without TLS, or /metrics without HTTPS and basic auth, on an address other "
          "hosts can reach (not loopback); without it the server refuses to start so exposed, "
          "and with it it logs a warning. Only for a network you trust.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "On SIGTERM/SIGINT, how long in-flight queries may run before they are cancelled.");

// Prometheus metrics.
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address, host:port; port 0 picks a free port; empty disables it.");
ABSL_FLAG(std::string, metrics_tls_cert, "",
          "PEM certificate chain of the metrics endpoint; with --metrics-tls-key it serves "
          "/metrics over HTTPS only (TLS 1.2 or later).");
ABSL_FLAG(std::string, metrics_tls_key, "", "PEM private key of --metrics-tls-cert.");
ABSL_FLAG(std::string, metrics_basic_auth_file, "",
          "File of one line user:password, readable by its owner only: scrapes of /metrics must "
          "authenticate with HTTP basic auth.");

// The engines and the scheduler.
ABSL_FLAG(uint32_t, threads, 0, "CPU query worker threads; 0 means one per CPU core.");
ABSL_FLAG(GpuMode, gpu, GpuMode::kAuto,
          "auto: use a GPU engine when one is available; off: CPU only; required: fail to start "
          "without one.");
ABSL_FLAG(tandem::server::GpuDevices, gpus, tandem::server::GpuDevices{},
          "GPUs that serve queries, each holding the index's lists in its own device cache: "
          "device numbers (0,1), all, or empty for the first. With several, each query goes to "
          "the least loaded one. To serve one shard per GPU, run one tandem-server per GPU, each "
          "with its --gpus, behind tandem-broker.");
ABSL_FLAG(tandem::base::CountOrAuto, gpu_threads, tandem::base::CountOrAuto{},
          "Queries in flight on the GPUs at once (in the hybrid scheduler, one GPU worker thread "
          "each); auto: 128 per GPU, so that queries that arrive together can share a batch.");
ABSL_FLAG(SchedulerKind, scheduler, SchedulerKind::kAuto,
          "pool: one FIFO queue, queries on the CPU unless a request asks for the GPU; hybrid: "
          "the CPU+GPU scheduler (three queues by predicted cost ratio, work stealing, deadlines); "
          "serial: one query at a time on the processor the cost model says is cheaper; auto: "
          "hybrid when a GPU engine serves queries, pool otherwise.");
ABSL_FLAG(std::string, cost_model, "",
          "Hybrid scheduler: cost model file written by tandem-train-cost on this machine; "
          "without it a heuristic predicts costs until live timings train a model.");
ABSL_FLAG(uint32_t, queue_capacity, 0,
          "Queries (a batch counts as one) that may wait for a worker before new ones are refused "
          "with RESOURCE_EXHAUSTED; 0 means 4 x the workers (CPU workers, plus GPU queries in "
          "flight when a GPU engine serves), about four query times of waiting.");

// Standing queries (tandem.v1.SubscriptionService).
ABSL_FLAG(std::string, subscriptions, "",
          "File that keeps the subscriptions (standing queries) across restarts, each change "
          "appended to FILE.log and fsynced before it is acknowledged; empty keeps them in memory "
          "only. A damaged file stops the server from starting.");
ABSL_FLAG(MatchEngineFlag, match_engine, MatchEngineFlag{},
          "What matches documents against the subscriptions: cpu; gpu (Margara & Cugola's CCM; "
          "fails to start without a GPU); auto: the faster by prediction, the GPU taking part "
          "where a GPU engine serves queries.");
ABSL_FLAG(int64_t, max_subscriptions, 1'000'000,
          "Most subscriptions the node holds; Subscribe gets RESOURCE_EXHAUSTED beyond.");

// Admission: how much the node takes on at once.
ABSL_FLAG(uint32_t, max_queries_in_flight, 4096,
          "Most queries admitted and not yet answered, over all calls (every query of a batch "
          "counts); a call past it gets RESOURCE_EXHAUSTED. At least --max-batch.");
ABSL_FLAG(uint64_t, max_response_bytes_in_flight, uint64_t{256} << 20,
          "Memory circuit breaker: the most bytes the responses of admitted, unanswered queries "
          "may take (estimated from their k); a call past it gets RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint64_t, memory_breaker_bytes, uint64_t{512} << 20,
          "The node's memory breaker: the most bytes the responses in flight, the filter cache "
          "and the Watch streams' queues may hold together. The cache and the queues give way to "
          "queries; a call that still does not fit gets RESOURCE_EXHAUSTED. At least "
          "--max-response-bytes-in-flight.");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "tandem-server: %s\n", message.c_str());
  return 1;
}

tandem::server::ServerOptions OptionsFromFlags() {
  tandem::server::ServerOptions options;
  options.index_dir = absl::GetFlag(FLAGS_index);
  options.read_only = absl::GetFlag(FLAGS_read_only);
  options.refresh_interval = absl::GetFlag(FLAGS_refresh_interval);
  options.sync_writes = absl::GetFlag(FLAGS_sync_writes);
  options.live_gpu_min_docs = absl::GetFlag(FLAGS_tune_live_gpu_min_docs);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.allow_insecure = absl::GetFlag(FLAGS_allow_insecure);
  options.metrics_security = {.tls_cert_file = absl::GetFlag(FLAGS_metrics_tls_cert),
                              .tls_key_file = absl::GetFlag(FLAGS_metrics_tls_key),
                              .basic_auth_file = absl::GetFlag(FLAGS_metrics_basic_auth_file)};
  options.grpc = {.listen = absl::GetFlag(FLAGS_listen),
                  .tls = {.cert_file = absl::GetFlag(FLAGS_tls_cert),
                          .key_file = absl::GetFlag(FLAGS_tls_key),
                          .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca)},
                  .max_receive_message_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes),
                  .max_send_message_bytes = absl::GetFlag(FLAGS_max_send_message_bytes),
                  .keepalive_time = absl::GetFlag(FLAGS_keepalive_time),
                  .keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout),
                  .max_concurrent_streams = absl::GetFlag(FLAGS_grpc_max_concurrent_streams),
                  .memory_quota_bytes = absl::GetFlag(FLAGS_grpc_memory_quota_bytes),
                  .rpc_nice = std::nullopt};
  if (const std::optional<uint32_t> nice = absl::GetFlag(FLAGS_tune_rpc_nice).count) {
    options.grpc.rpc_nice = static_cast<int>(std::min<uint32_t>(*nice, INT32_MAX));
  }
  options.limits = {
      .max_query_terms = absl::GetFlag(FLAGS_max_query_terms),
      .max_query_bytes = absl::GetFlag(FLAGS_max_query_bytes),
      .max_batch = absl::GetFlag(FLAGS_max_batch),
      .max_batch_hits = absl::GetFlag(FLAGS_max_batch_hits),
      .max_queries_in_flight = absl::GetFlag(FLAGS_max_queries_in_flight),
      .max_response_bytes_in_flight = absl::GetFlag(FLAGS_max_response_bytes_in_flight)};
  options.memory_breaker_bytes = absl::GetFlag(FLAGS_memory_breaker_bytes);
  options.filter_cache_bytes = absl::GetFlag(FLAGS_filter_cache_bytes);
  options.engines = {.cpu = {.or_algorithm = absl::GetFlag(FLAGS_cpu_or)},
                     .gpu = absl::GetFlag(FLAGS_gpu),
                     .gpu_devices = absl::GetFlag(FLAGS_gpus),
                     .gpu_wait = absl::GetFlag(FLAGS_tune_gpu_wait),
                     .gpu_batch = true,
                     .gpu_batch_compressed = absl::GetFlag(FLAGS_tune_gpu_batch_compressed),
                     .gpu_batching = {.threshold = absl::GetFlag(FLAGS_tune_gpu_batch_threshold),
                                      .max_wait = absl::GetFlag(FLAGS_tune_gpu_batch_wait),
                                      .runners = static_cast<int>(std::min<uint32_t>(
                                          absl::GetFlag(FLAGS_tune_gpu_batch_runners), INT32_MAX))},
                     .gpu_filter_min_words = absl::GetFlag(FLAGS_tune_gpu_filter_min_words)};

  tandem::server::SchedulerOptions& scheduler = options.scheduler;
  scheduler.kind = absl::GetFlag(FLAGS_scheduler);
  scheduler.cost_model = {.file = absl::GetFlag(FLAGS_cost_model),
                          .refine_every = absl::GetFlag(FLAGS_tune_cost_model_refine_every),
                          .refine_interval = absl::GetFlag(FLAGS_tune_cost_model_refine_interval)};
  tandem::scheduler::ExecutorOptions& executor = scheduler.executor;
  const uint32_t threads = absl::GetFlag(FLAGS_threads);
  executor.cpu_threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  // With batches, 128 in flight sustained AND 80,000 q/s through SearchStream where 64 failed
  // 75,000 (bench/results/gpu_batch_server.json): a batch can only hold the queries in flight.
  const size_t gpus = tandem::server::ResolveGpuDevices(options.engines.gpu_devices).size();
  executor.gpu_threads = absl::GetFlag(FLAGS_gpu_threads).count.value_or(128 * gpus);
  executor.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  executor.answer_threads = absl::GetFlag(FLAGS_tune_answer_threads)
                                .count.value_or(std::min<size_t>(executor.gpu_threads, 16));
  executor.cpu_worker_cpus = absl::GetFlag(FLAGS_tune_cpu_worker_cpus).cpus;
  executor.gpu_worker_cpus = absl::GetFlag(FLAGS_tune_gpu_worker_cpus).cpus;
  executor.default_deadline = absl::GetFlag(FLAGS_tune_default_deadline);
  executor.policy.max_wait = absl::GetFlag(FLAGS_tune_max_wait);
  executor.dispatch = absl::GetFlag(FLAGS_tune_dispatch);
  executor.testing_query_delay = absl::GetFlag(FLAGS_testing_query_delay);

  tandem::server::SubscriptionOptions& subscriptions = options.subscriptions;
  subscriptions.registry.path = absl::GetFlag(FLAGS_subscriptions);
  subscriptions.registry.engine = absl::GetFlag(FLAGS_match_engine).engine;
  subscriptions.registry.max_subscriptions = absl::GetFlag(FLAGS_max_subscriptions);
  subscriptions.registry.compact_log_bytes = absl::GetFlag(FLAGS_subscriptions_compact_bytes);
  auto as_int = [](uint32_t value) {
    return static_cast<int>(std::min<uint32_t>(value, INT32_MAX));
  };
  subscriptions.registry.limits.max_filters_per_predicate =
      as_int(absl::GetFlag(FLAGS_max_filters_per_subscription));
  subscriptions.registry.limits.max_constraints_per_filter =
      as_int(absl::GetFlag(FLAGS_max_constraints_per_filter));
  subscriptions.match_threads = as_int(absl::GetFlag(FLAGS_match_threads));
  subscriptions.max_match_documents = absl::GetFlag(FLAGS_max_match_documents);
  subscriptions.watch_queue = absl::GetFlag(FLAGS_watch_queue);
  subscriptions.watch_queue_bytes = absl::GetFlag(FLAGS_watch_queue_bytes);
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // SIGTERM and SIGINT drain; SIGHUP re-reads --index and switches to it (Server::LoadIndex).
  const sigset_t stop_signals = tandem::tools::PrepareToServe({SIGTERM, SIGINT, SIGHUP});

  const std::vector<std::string> positional = tandem::base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-server",
       .usage = "tandem-server serves a Tandem index over gRPC, with Prometheus metrics.\n"
                "  tandem-server --index DIR [--listen 127.0.0.1:50051] "
                "[--metrics-listen 127.0.0.1:9464] [--threads N]",
       .main_file = __FILE__,
       .groups = tandem::tools::ServerExpertFlagGroups()});
  if (!positional.empty()) return Fail(absl::StrCat("unexpected argument '", positional[0], "'"));
  const absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  if (drain_timeout < absl::ZeroDuration()) return Fail("--drain-timeout must not be negative");
  tandem::server::ServerOptions options = OptionsFromFlags();
  if (options.index_dir.empty()) return Fail("--index is required");
  if (const std::string live_shard = absl::GetFlag(FLAGS_live_shard); !live_shard.empty()) {
    absl::StatusOr<tandem::v1::ShardInfo> place = tandem::server::ParseLiveShard(live_shard);
    if (!place.ok()) return Fail(std::string(place.status().message()));
    options.live_shard = *std::move(place);
  }

  absl::StatusOr<std::unique_ptr<tandem::server::Server>> server =
      tandem::server::Server::Create(options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  {
    // Not held past this line: a later index load releases this one when its queries end.
    const std::shared_ptr<const tandem::server::ServingIndex> serving = (*server)->serving();
    const tandem::index::Index& index = serving->index();
    std::fprintf(stderr,
                 "tandem-server: serving %s (%u documents, %s); %s; CPU OR by %s; queue %zu\n",
                 index.directory().c_str(), index.num_docs(), index.manifest().codec.c_str(),
                 (*server)->engine_summary().c_str(),
                 tandem::cpu::AbslUnparseFlag(options.engines.cpu.or_algorithm).c_str(),
                 (*server)->queue_capacity());
  }
  std::fprintf(stderr, "tandem-server: %s\n", (*server)->scheduler_summary().c_str());
  std::fprintf(stderr, "tandem-server: standing queries: %s\n",
               (*server)->subscription_summary().c_str());
  tandem::tools::AnnounceListening("tandem-server", (*server)->address(),
                                   (*server)->metrics_address());

  // Between signals, every 5 s: the allocator's free memory goes back to the system when the node
  // is idle, so that memory returns to its baseline after a burst.
  int signal_number = 0;
  const timespec trim_every{.tv_sec = 5, .tv_nsec = 0};
  while (true) {
    signal_number = sigtimedwait(&stop_signals, nullptr, &trim_every);
    if (signal_number < 0) {
      if (errno == EAGAIN) (*server)->TrimMemoryIfIdle();
      continue;  // the timeout, or EINTR
    }
    if (signal_number != SIGHUP) break;
    std::fprintf(stderr, "tandem-server: SIGHUP: loading the index at %s\n",
                 options.index_dir.c_str());
    absl::StatusOr<tandem::server::Server::LoadReport> loaded =
        (*server)->LoadIndex(options.index_dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tandem-server: index not loaded, still serving the old one: %s\n",
                   std::string(loaded.status().message()).c_str());
    }
  }
  tandem::tools::AnnounceDrain("tandem-server", signal_number, drain_timeout);
  // During the drain: a second SIGINT (an operator's second Ctrl-C) exits at once; SIGTERM, which a
  // supervisor may send again, and SIGHUP do not cut the drain short.
  std::thread([stop_signals] {
    int again = 0;
    while (sigwait(&stop_signals, &again) == 0) {
      if (again == SIGINT) {
        std::fprintf(stderr, "tandem-server: second SIGINT; exiting without draining\n");
        std::_Exit(1);
      }
      std::fprintf(stderr, "tandem-server: %s ignored: already draining\n", strsignal(again));
    }
  }).detach();
  if (!(*server)->Drain(drain_timeout)) {
    std::fprintf(stderr, "tandem-server: drain timeout; the remaining queries were cancelled\n");
  }
  server->reset();
  std::fprintf(stderr, "tandem-server: stopped\n");
  return 0;
}
