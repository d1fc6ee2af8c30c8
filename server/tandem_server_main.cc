// tandem-server: serves one index over gRPC (tandem.v1.SearchService, grpc.health.v1, reflection)
// and Prometheus metrics over HTTP.
//
//   tandem-server --index /srv/tandem/scifact [--listen 127.0.0.1:50051]
//                 [--metrics-listen 127.0.0.1:9464] [--threads N] [--tls-cert C --tls-key K]
//                 [--scheduler auto|pool|hybrid|serial] [--gpu-threads 4] [--answer-threads N]
//                 [--gpu-wait auto|spin|yield|blocking|spin-then-block] [--gpu-spin 200us]
//                 [--cpu-worker-priority 10|idle] [--cpu-worker-cpus LIST]
//                 [--gpu-worker-cpus LIST] [--cpu-or maxscore|exhaustive] [--cost-model FILE]
//
// On startup it prints one line to stdout, "tandem-server listening on HOST:PORT (metrics on
// HOST:PORT)", with the real ports when 0 was asked for. SIGTERM or SIGINT drains: health goes
// NOT_SERVING, new queries get UNAVAILABLE, in-flight ones finish within --drain-timeout, exit 0.
// A second signal during the drain exits 1 at once. Startup failures print one line to stderr and
// exit 1.
#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/thread_affinity.h"
#include "base/thread_priority.h"
#include "tools/command_line.h"
#include "index/index.h"
#include "server/server.h"

ABSL_FLAG(std::string, index, "", "Index directory to serve (required).");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC address, host:port. Loopback unless told otherwise; port 0 picks a free port.");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address, host:port; port 0 picks a free port; empty disables it.");
ABSL_FLAG(int32_t, threads, 0, "CPU query worker threads; 0 means one per CPU core.");
ABSL_FLAG(std::string, scheduler, "auto",
          "pool: one FIFO queue, queries on the CPU unless a request asks for the GPU; hybrid: "
          "the CPU+GPU scheduler (three queues by predicted cost ratio, work stealing, deadlines); "
          "serial: one query at a time on the processor the cost model says is cheaper (the "
          "baseline of the paper's Figure 7); auto: hybrid when a GPU engine serves queries, pool "
          "otherwise.");
ABSL_FLAG(int32_t, gpu_threads, 4,
          "Queries in flight on the GPU at once (a stream and scratch arena each; in the hybrid "
          "scheduler, one GPU worker thread each).");
ABSL_FLAG(std::string, answer_threads, "auto",
          "Hybrid scheduler: threads that answer the queries the GPU ran (build the response, "
          "complete the RPC), so GPU workers go back to the device at once; auto: one per GPU "
          "query in flight (--gpu-threads); 0: GPU workers answer their own queries.");
ABSL_FLAG(bool, answer_cpu_queries, false,
          "Hybrid scheduler: the answer threads answer the CPU workers' queries too, so that CPU "
          "workers at a lowered priority never hold gRPC's locks on a connection.");
ABSL_FLAG(std::string, cpu_worker_priority, "10",
          "Hybrid scheduler: the CPU query workers' priority below the server's other threads, so "
          "that the threads that feed the GPU and complete the RPCs get the cores first: N nice "
          "levels (0..19; 0: the same priority) or idle (SCHED_IDLE: only the cores nothing else "
          "wants).");
ABSL_FLAG(std::string, cpu_worker_cpus, "",
          "Hybrid scheduler: the CPUs the CPU query workers may run on, as for taskset -c "
          "(0-3,8,10-11); empty: any. With --gpu-worker-cpus on other CPUs, a CPU query never "
          "takes the core of a GPU worker that is launching kernels.");
ABSL_FLAG(std::string, gpu_worker_cpus, "",
          "Hybrid scheduler: the CPUs the GPU workers may run on, as for --cpu-worker-cpus; "
          "empty: any.");
ABSL_FLAG(std::string, gpu_wait, "auto",
          "How a thread waiting for the GPU holds its core: spin (lowest latency, a core per "
          "waiting query), yield, blocking (sleeps until the device signals), spin-then-block "
          "(spins for --gpu-spin, then sleeps: short waits answered at once, long ones without "
          "holding a core), auto (CUDA's default: spin).");
ABSL_FLAG(absl::Duration, gpu_spin, absl::Microseconds(200),
          "With --gpu-wait spin-then-block: how long a thread spins before it sleeps (0 to 1s).");
ABSL_FLAG(std::string, cpu_or, "maxscore",
          "The CPU engine's OR: maxscore (dynamic pruning, the same hits and scores) or "
          "exhaustive (every posting scored).");
ABSL_FLAG(std::string, cost_model, "",
          "Hybrid scheduler: cost model file written by tandem-train-cost on this machine; "
          "without it a heuristic predicts costs until live timings train a model.");
ABSL_FLAG(absl::Duration, default_deadline, absl::Milliseconds(500),
          "Hybrid scheduler: the deadline a query is scheduled by when its call has none or a "
          "later one (urgency, tandem_scheduler_deadline_misses_total). Only a call's own "
          "deadline stops a query.");
ABSL_FLAG(absl::Duration, max_wait, absl::Milliseconds(20),
          "Hybrid scheduler: each processor runs its queue shortest predicted time first, but a "
          "query that has waited this long goes first (bounds the tail that ordering adds; 0 "
          "means oldest first).");
ABSL_FLAG(int32_t, cost_model_refine_every, 1024,
          "Hybrid scheduler: retrain the cost model from live timings (in a background thread) "
          "after this many measured queries; 0 turns live refinement off.");
ABSL_FLAG(absl::Duration, cost_model_refine_interval, absl::Seconds(10),
          "Hybrid scheduler: retrain the cost model at most once per this interval (a retraining "
          "keeps a core busy for tens of milliseconds).");
ABSL_FLAG(int32_t, queue_capacity, 0,
          "Queries (a batch counts as one) that may wait for a worker before new ones are refused "
          "with RESOURCE_EXHAUSTED; 0 means 4 x (threads + GPU queries in flight when a GPU engine "
          "serves), which bounds the wait to about four query times.");
ABSL_FLAG(int32_t, max_query_terms, 64, "Most terms in one query (after analysis, for text).");
ABSL_FLAG(int32_t, max_query_bytes, 4096, "Most bytes of query text (or of all terms together).");
ABSL_FLAG(int32_t, max_batch, 1024, "Most queries in one SearchBatch call.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "On SIGTERM/SIGINT, how long in-flight queries may run before they are cancelled.");
ABSL_FLAG(std::string, gpu, "auto",
          "auto: use a GPU engine when one is available; off: CPU only; required: fail to start "
          "without one.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate chain; turns TLS on (with --tls-key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; when set, clients must present a certificate it signed (mutual TLS).");
ABSL_FLAG(int32_t, max_receive_message_bytes, 16 << 20, "Largest request message accepted.");
ABSL_FLAG(int32_t, max_send_message_bytes, 256 << 20, "Largest response message sent.");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(60),
          "Idle time after which the server pings a client to check it is still there.");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(20),
          "How long a keepalive ping may go unanswered before the connection is closed.");
ABSL_FLAG(absl::Duration, debug_query_delay, absl::ZeroDuration(),
          "TESTING ONLY: every query waits this long (honouring its deadline and cancellation) "
          "before it runs. Never set it in production.");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "tandem-server: %s\n", message.c_str());
  return 1;
}

absl::StatusOr<tandem::server::ServerOptions> OptionsFromFlags() {
  tandem::server::ServerOptions options;
  options.index_dir = absl::GetFlag(FLAGS_index);
  if (options.index_dir.empty()) return absl::InvalidArgumentError("--index is required");
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  const int32_t threads = absl::GetFlag(FLAGS_threads);
  if (threads < 0) return absl::InvalidArgumentError("--threads must be >= 0");
  options.threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  const int32_t capacity = absl::GetFlag(FLAGS_queue_capacity);
  if (capacity < 0) return absl::InvalidArgumentError("--queue-capacity must be >= 0");
  options.queue_capacity = capacity;  // 0: the server sizes it from its workers
  const std::string scheduler = absl::GetFlag(FLAGS_scheduler);
  if (scheduler == "auto") {
    options.scheduler = tandem::server::SchedulerKind::kAuto;
  } else if (scheduler == "pool") {
    options.scheduler = tandem::server::SchedulerKind::kPool;
  } else if (scheduler == "hybrid") {
    options.scheduler = tandem::server::SchedulerKind::kHybrid;
  } else if (scheduler == "serial") {
    options.scheduler = tandem::server::SchedulerKind::kSerial;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--scheduler must be auto, pool, hybrid or serial, got '", scheduler, "'"));
  }
  if (absl::GetFlag(FLAGS_gpu_threads) < 1) {
    return absl::InvalidArgumentError("--gpu-threads must be >= 1");
  }
  options.gpu_threads = absl::GetFlag(FLAGS_gpu_threads);
  const std::string answer_threads = absl::GetFlag(FLAGS_answer_threads);
  if (answer_threads == "auto") {
    options.answer_threads = options.gpu_threads;
  } else if (int32_t n; absl::SimpleAtoi(answer_threads, &n) && n >= 0) {
    options.answer_threads = static_cast<size_t>(n);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--answer-threads must be auto or a number >= 0, got '", answer_threads, "'"));
  }
  options.answer_cpu_queries = absl::GetFlag(FLAGS_answer_cpu_queries);
  absl::StatusOr<tandem::base::ThreadPriority> cpu_worker_priority =
      tandem::base::ParseThreadPriority(absl::GetFlag(FLAGS_cpu_worker_priority));
  if (!cpu_worker_priority.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cpu-worker-priority: ", cpu_worker_priority.status().message()));
  }
  options.cpu_worker_priority = *cpu_worker_priority;
  for (const auto& [flag, value, field] :
       {std::tuple{"--cpu-worker-cpus", absl::GetFlag(FLAGS_cpu_worker_cpus),
                   &options.cpu_worker_cpus},
        std::tuple{"--gpu-worker-cpus", absl::GetFlag(FLAGS_gpu_worker_cpus),
                   &options.gpu_worker_cpus}}) {
    if (value.empty()) continue;
    absl::StatusOr<std::vector<int>> cpus = tandem::base::ParseCpuList(value);
    if (cpus.ok()) {
      if (absl::Status allowed = tandem::base::CheckCpusAllowed(*cpus); !allowed.ok()) {
        cpus = allowed;
      }
    }
    if (!cpus.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", cpus.status().message()));
    }
    *field = *std::move(cpus);
  }
  absl::StatusOr<tandem::server::GpuWait> gpu_wait =
      tandem::server::ParseGpuWait(absl::GetFlag(FLAGS_gpu_wait));
  if (!gpu_wait.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu-wait ", gpu_wait.status().message()));
  }
  options.gpu_wait = *gpu_wait;
  options.gpu_spin = absl::GetFlag(FLAGS_gpu_spin);
  if (options.gpu_spin < absl::ZeroDuration() || options.gpu_spin > absl::Seconds(1)) {
    return absl::InvalidArgumentError("--gpu-spin must be 0 to 1s");
  }
  absl::StatusOr<tandem::cpu::OrAlgorithm> cpu_or =
      tandem::cpu::ParseOrAlgorithm(absl::GetFlag(FLAGS_cpu_or));
  if (!cpu_or.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--cpu-or: ", cpu_or.status().message()));
  }
  options.cpu_or = *cpu_or;
  options.cost_model_file = absl::GetFlag(FLAGS_cost_model);
  options.default_deadline = absl::GetFlag(FLAGS_default_deadline);
  if (absl::GetFlag(FLAGS_cost_model_refine_every) < 0) {
    return absl::InvalidArgumentError("--cost-model-refine-every must be >= 0");
  }
  options.cost_model_refine_every = absl::GetFlag(FLAGS_cost_model_refine_every);
  options.cost_model_refine_interval = absl::GetFlag(FLAGS_cost_model_refine_interval);
  if (options.cost_model_refine_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--cost-model-refine-interval must be >= 0");
  }
  options.max_wait = absl::GetFlag(FLAGS_max_wait);
  if (options.max_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--max-wait must be >= 0");
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--default-deadline must be > 0");
  }
  for (auto [flag, name] :
       {std::pair{absl::GetFlag(FLAGS_max_query_terms), "--max-query-terms"},
        std::pair{absl::GetFlag(FLAGS_max_query_bytes), "--max-query-bytes"},
        std::pair{absl::GetFlag(FLAGS_max_batch), "--max-batch"},
        std::pair{absl::GetFlag(FLAGS_max_receive_message_bytes), "--max-receive-message-bytes"},
        std::pair{absl::GetFlag(FLAGS_max_send_message_bytes), "--max-send-message-bytes"}}) {
    if (flag < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be >= 1"));
  }
  options.limits.max_query_terms = absl::GetFlag(FLAGS_max_query_terms);
  options.limits.max_query_bytes = absl::GetFlag(FLAGS_max_query_bytes);
  options.limits.max_batch = absl::GetFlag(FLAGS_max_batch);
  const std::string gpu = absl::GetFlag(FLAGS_gpu);
  if (gpu == "auto") {
    options.gpu = tandem::server::GpuMode::kAuto;
  } else if (gpu == "off") {
    options.gpu = tandem::server::GpuMode::kOff;
  } else if (gpu == "required") {
    options.gpu = tandem::server::GpuMode::kRequired;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu must be auto, off or required, got '", gpu, "'"));
  }
  options.tls = {.cert_file = absl::GetFlag(FLAGS_tls_cert),
                 .key_file = absl::GetFlag(FLAGS_tls_key),
                 .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca)};
  options.max_receive_message_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  options.max_send_message_bytes = absl::GetFlag(FLAGS_max_send_message_bytes);
  options.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  options.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  options.debug_query_delay = absl::GetFlag(FLAGS_debug_query_delay);
  if (absl::GetFlag(FLAGS_drain_timeout) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain-timeout must be >= 0");
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // A shell starts background jobs with SIGINT ignored, and an ignored signal never reaches
  // sigwait: restore the default so both stop signals always drain. A peer that hangs up must not
  // kill the server through SIGPIPE.
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGPIPE, SIG_IGN);
  // Block the stop signals before any thread exists, so every thread inherits the mask and only the
  // main thread's sigwait sees them: no async-signal-safety concerns in a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // Debian's abseil is built without NDEBUG, so every absl::Mutex keeps a lock-order graph for
  // deadlock detection (GraphCycles: 3.4% of the server's CPU samples in perf under a closed-loop
  // load of 20k queries/s, none with it off). The tests keep it; the server turns it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  absl::SetProgramUsageMessage(
      "serves a Tandem index over gRPC.\n"
      "  tandem-server --index DIR [--listen 127.0.0.1:50051] [--metrics-listen 127.0.0.1:9464] "
      "[--threads N]");
  tandem::tools::DashedFlags flags(argc, argv);
  std::vector<char*> positional = absl::ParseCommandLine(flags.argc(), flags.argv());
  if (positional.size() > 1) return Fail(absl::StrCat("unexpected argument '", positional[1], "'"));
  absl::StatusOr<tandem::server::ServerOptions> options = OptionsFromFlags();
  if (!options.ok()) return Fail(std::string(options.status().message()));

  absl::StatusOr<std::unique_ptr<tandem::server::Server>> server =
      tandem::server::Server::Create(*options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  const tandem::index::Index& index = (*server)->index();
  std::fprintf(stderr, "tandem-server: serving %s (%u documents, %s); %s; queue %zu\n",
               index.directory().c_str(), index.num_docs(), index.manifest().codec.c_str(),
               (*server)->engine_summary().c_str(), (*server)->queue_capacity());
  std::fprintf(stderr, "tandem-server: %s\n", (*server)->scheduler_summary().c_str());
  const std::string metrics = (*server)->metrics_address().empty()
                                  ? "metrics off"
                                  : "metrics on " + (*server)->metrics_address();
  std::printf("tandem-server listening on %s (%s)\n", (*server)->address().c_str(),
              metrics.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  const absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  std::fprintf(stderr, "tandem-server: %s received; draining (up to %s)\n",
               strsignal(signal_number), absl::FormatDuration(drain_timeout).c_str());
  std::thread([stop_signals] {
    int again = 0;
    sigwait(&stop_signals, &again);
    std::fprintf(stderr, "tandem-server: second signal; exiting without draining\n");
    std::_Exit(1);
  }).detach();
  if (!(*server)->Drain(drain_timeout)) {
    std::fprintf(stderr, "tandem-server: drain timeout; the remaining queries were cancelled\n");
  }
  server->reset();
  std::fprintf(stderr, "tandem-server: stopped\n");
  return 0;
}
