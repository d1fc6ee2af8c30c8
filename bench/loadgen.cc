// File: loadgen.cc
//
// tandem-loadgen: drives a Tandem query node with queries from a file and reports the latency and
// throughput seen by the client.
//
// Closed loop (--concurrency N, or a list "1,4,16" for one row each): N clients, each sending its next
// query when the last one returns; throughput is whatever the server sustains.
// Open loop (--rate R, or --rates 100,200,400 for a sweep): queries arrive as a Poisson process of rate
// R and are sent at their scheduled times whether or not earlier ones have returned. Latency is taken
// from the scheduled send time, not the actual one, so a client that falls behind cannot hide queueing
// (the "coordinated omission" of Tene, "How NOT to Measure Latency", 2015).
//
// Each row runs --warmup seconds of unmeasured load, then --duration seconds (or --num_queries queries)
// measured. A query is measured when it was scheduled inside the measured window; its latency counts
// when it returns OK, and every outcome is counted by gRPC status code. Rows go to a table on stdout
// and, with --json-out, to a JSON file with the commit, host, time and every parameter.
//
//   tandem-loadgen --server 127.0.0.1:50051 --queries topics.txt --mode and --k 10
//                  --rates 100,200,400 --duration 20 --warmup 5 --json-out sweep.json
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/query_file.h"
#include "tandem/v1/search.grpc.pb.h"

#ifndef TANDEM_GIT_COMMIT
#define TANDEM_GIT_COMMIT "unknown"
#endif

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of the query node");
ABSL_FLAG(std::string, queries, "", "query file (id:query, id:prio:query, id<TAB>query or plain lines)");
ABSL_FLAG(std::string, query_format, "auto", "auto, colon, colon-priority, tsv or plain");
ABSL_FLAG(std::string, mode, "or", "query mode: or, and, and_or");
ABSL_FLAG(uint32_t, k, 10, "hits per query");
ABSL_FLAG(std::string, engine, "auto", "engine hint: auto, cpu, gpu");
ABSL_FLAG(std::vector<std::string>, concurrency, {},
          "closed loop: concurrent clients; a list (1,4,16) runs one row each");
ABSL_FLAG(double, rate, 0, "open loop: Poisson arrival rate, queries/s (same as --rates R)");
ABSL_FLAG(std::vector<std::string>, rates, {}, "open loop sweep: arrival rates, one row each");
ABSL_FLAG(double, duration, 10, "seconds measured per row");
ABSL_FLAG(uint64_t, num_queries, 0, "measured queries per row; when set, replaces --duration");
ABSL_FLAG(double, warmup, 2, "seconds of unmeasured load before each row");
ABSL_FLAG(double, timeout, 10, "deadline of each query, seconds");
ABSL_FLAG(double, connect_timeout, 30, "seconds to wait for the server before the first row");
ABSL_FLAG(int, channels, 2, "gRPC channels (TCP connections) to spread queries over");
ABSL_FLAG(int, cq_threads, 2, "completion-queue threads");
ABSL_FLAG(int64_t, max_in_flight, 10000,
          "open loop: queries outstanding at most; one due beyond it is not sent and is counted as "
          "CLIENT_OVERLOAD");
ABSL_FLAG(bool, shuffle, false, "send the queries in a random order (--seed) instead of file order");
ABSL_FLAG(uint64_t, seed, 1, "seed of arrival times and of --shuffle");
ABSL_FLAG(std::string, label, "", "free text stored in the JSON (e.g. the server configuration)");
ABSL_FLAG(std::string, json_out, "", "write the results as JSON to this file");

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using tandem::v1::SearchService;

constexpr const char* kClientOverload = "CLIENT_OVERLOAD";

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNRECOGNIZED";
  }
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One row: a closed loop of `concurrency` clients or an open loop at `rate` queries/s.
struct LoadSpec {
  bool open_loop = false;
  int concurrency = 0;
  double rate = 0;

  std::string Name() const {
    return open_loop ? absl::StrFormat("rate=%g", rate) : absl::StrCat("conc=", concurrency);
  }
};

struct RunOptions {
  double warmup_s = 2;
  double duration_s = 10;
  uint64_t num_queries = 0;  // > 0: count-bounded rows
  double timeout_s = 10;
  int64_t max_in_flight = 10000;
  uint64_t seed = 1;
};

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;  // milliseconds
};

// Nearest-rank percentiles of `us` (microseconds), reported in milliseconds.
LatencySummary Summarize(std::vector<double> us) {
  LatencySummary s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  const auto rank = [&](double q) {
    const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(us.size())));
    return us[std::clamp<size_t>(i, 1, us.size()) - 1] / 1000.0;
  };
  s.mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size()) / 1000.0;
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p95 = rank(0.95);
  s.p99 = rank(0.99);
  s.p999 = rank(0.999);
  s.max = us.back() / 1000.0;
  return s;
}

struct RunResult {
  LoadSpec spec;
  uint64_t sent = 0;  // measured queries put on the wire (every one has returned when the row ends)
  std::map<std::string, uint64_t> status_counts;  // measured queries by outcome
  double window_s = 0;      // measured window start to the last measured completion
  double offered_qps = 0;   // measured queries scheduled per second of the scheduling window
  double achieved_qps = 0;  // OK responses per second of window_s
  LatencySummary latency;   // of OK responses, from the scheduled send time
  double server_queued_us = 0, server_execution_us = 0, server_total_us = 0;  // means over OK
};

// What one completion-queue thread saw; merged after the row.
struct Recorder {
  std::vector<double> ok_latency_us;
  std::map<grpc::StatusCode, uint64_t> counts;
  double queued_us = 0, execution_us = 0, total_us = 0;
  Clock::time_point last_completion{};
};

// Runs rows against one server. Each row gets fresh completion queues and threads.
class LoadRunner {
 public:
  LoadRunner(std::vector<std::unique_ptr<SearchService::Stub>> stubs, std::vector<SearchRequest> requests,
             int cq_threads, RunOptions options)
      : stubs_(std::move(stubs)), requests_(std::move(requests)), num_cqs_(cq_threads), options_(options) {}

  RunResult Run(const LoadSpec& spec) {
    cqs_.clear();
    for (int i = 0; i < num_cqs_; ++i) cqs_.push_back(std::make_unique<grpc::CompletionQueue>());
    recorders_.assign(num_cqs_, Recorder{});
    outstanding_ = 0;
    active_slots_ = 0;
    measured_issued_ = 0;
    last_measured_schedule_ = Clock::time_point{};
    overload_ = 0;

    start_ = Clock::now();
    measure_start_ = start_ + ToDuration(options_.warmup_s);
    measure_end_ = measure_start_ + ToDuration(options_.duration_s);

    std::vector<std::thread> pollers;
    for (int i = 0; i < num_cqs_; ++i) pollers.emplace_back([this, i] { Poll(i); });
    if (spec.open_loop) {
      RunOpenLoop(spec.rate);
    } else {
      RunClosedLoop(spec.concurrency);
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return outstanding_ == 0 && active_slots_ == 0; });
    }
    for (auto& cq : cqs_) cq->Shutdown();
    for (auto& t : pollers) t.join();
    return Collect(spec);
  }

 private:
  struct Call {
    grpc::ClientContext context;
    SearchResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<SearchResponse>> reader;
    Clock::time_point scheduled;
    bool measured = false;
    int slot = -1;  // closed-loop client, -1 in the open loop
  };

  static Clock::duration ToDuration(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  const SearchRequest& NextRequest() {
    return requests_[next_query_.fetch_add(1, std::memory_order_relaxed) % requests_.size()];
  }

  // Decides whether a query scheduled at `t` is sent, and whether it is measured.
  bool Admit(Clock::time_point t, bool* measured) {
    if (t < measure_start_) {
      *measured = false;
      return true;
    }
    if (options_.num_queries > 0) {
      if (measured_issued_.fetch_add(1) >= options_.num_queries) return false;
    } else if (t >= measure_end_) {
      return false;
    } else {
      measured_issued_.fetch_add(1);
    }
    *measured = true;
    std::lock_guard<std::mutex> lock(mu_);
    last_measured_schedule_ = std::max(last_measured_schedule_, t);
    return true;
  }

  void Issue(Clock::time_point scheduled, bool measured, int slot, int cq_index) {
    auto* call = new Call;
    call->scheduled = scheduled;
    call->measured = measured;
    call->slot = slot;
    call->context.set_deadline(std::chrono::system_clock::now() + ToDuration(options_.timeout_s));
    outstanding_.fetch_add(1);
    SearchService::Stub* stub = stubs_[next_stub_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()].get();
    call->reader = stub->PrepareAsyncSearch(&call->context, NextRequest(), cqs_[cq_index].get());
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call);
  }

  void RunClosedLoop(int concurrency) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      active_slots_ = concurrency;
    }
    for (int slot = 0; slot < concurrency; ++slot) IssueNext(slot, slot % num_cqs_);
  }

  // Sends closed-loop client `slot`'s next query, or retires the client when the row is over.
  void IssueNext(int slot, int cq_index) {
    const Clock::time_point now = Clock::now();
    bool measured;
    if (Admit(now, &measured)) {
      Issue(now, measured, slot, cq_index);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_slots_ == 0) done_.notify_all();
  }

  void RunOpenLoop(double rate) {
    std::mt19937_64 rng(options_.seed);
    std::exponential_distribution<double> gap(rate);
    Clock::time_point next = start_;
    for (int cq = 0;; cq = (cq + 1) % num_cqs_) {
      next += ToDuration(gap(rng));
      bool measured;
      if (!Admit(next, &measured)) break;
      std::this_thread::sleep_until(next);
      if (outstanding_.load() >= options_.max_in_flight) {
        if (measured) overload_.fetch_add(1);
        continue;
      }
      Issue(next, measured, -1, cq);
    }
  }

  void Poll(int index) {
    grpc::CompletionQueue& cq = *cqs_[index];
    Recorder& rec = recorders_[index];
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
      std::unique_ptr<Call> call(static_cast<Call*>(tag));
      const Clock::time_point now = Clock::now();
      if (call->measured) {
        rec.counts[call->status.error_code()]++;
        rec.last_completion = std::max(rec.last_completion, now);
        if (call->status.ok()) {
          rec.ok_latency_us.push_back(std::chrono::duration<double, std::micro>(now - call->scheduled).count());
          const auto& stats = call->response.stats();
          rec.queued_us += static_cast<double>(stats.queued_micros());
          rec.execution_us += static_cast<double>(stats.execution_micros());
          rec.total_us += static_cast<double>(stats.total_micros());
        }
      }
      const int slot = call->slot;
      call.reset();
      if (slot >= 0) IssueNext(slot, index);
      std::lock_guard<std::mutex> lock(mu_);
      if (--outstanding_ == 0) done_.notify_all();
    }
  }

  RunResult Collect(const LoadSpec& spec) {
    RunResult r;
    r.spec = spec;
    std::vector<double> latencies;
    Clock::time_point last_completion = measure_start_;
    for (const Recorder& rec : recorders_) {
      latencies.insert(latencies.end(), rec.ok_latency_us.begin(), rec.ok_latency_us.end());
      for (const auto& [code, n] : rec.counts) {
        r.status_counts[StatusCodeName(code)] += n;
        r.sent += n;
      }
      r.server_queued_us += rec.queued_us;
      r.server_execution_us += rec.execution_us;
      r.server_total_us += rec.total_us;
      last_completion = std::max(last_completion, rec.last_completion);
    }
    if (overload_ > 0) r.status_counts[kClientOverload] = overload_;
    const double ok = static_cast<double>(latencies.size());
    if (ok > 0) {
      r.server_queued_us /= ok;
      r.server_execution_us /= ok;
      r.server_total_us /= ok;
    }
    r.window_s = Seconds(last_completion - measure_start_);
    const double schedule_window =
        options_.num_queries > 0 ? Seconds(last_measured_schedule_ - measure_start_) : options_.duration_s;
    const double scheduled = static_cast<double>(r.sent + overload_);
    r.offered_qps = schedule_window > 0 ? scheduled / schedule_window : 0;
    r.achieved_qps = r.window_s > 0 ? ok / r.window_s : 0;
    r.latency = Summarize(std::move(latencies));
    return r;
  }

  std::vector<std::unique_ptr<SearchService::Stub>> stubs_;
  std::vector<SearchRequest> requests_;
  const int num_cqs_;
  const RunOptions options_;

  std::vector<std::unique_ptr<grpc::CompletionQueue>> cqs_;
  std::vector<Recorder> recorders_;  // one per completion queue, touched only by its thread
  std::atomic<uint64_t> next_query_{0};
  std::atomic<uint64_t> next_stub_{0};
  std::atomic<uint64_t> measured_issued_{0};
  std::atomic<uint64_t> overload_{0};
  std::atomic<int64_t> outstanding_{0};
  Clock::time_point start_, measure_start_, measure_end_;

  std::mutex mu_;
  std::condition_variable done_;
  int active_slots_ = 0;                          // guarded by mu_
  Clock::time_point last_measured_schedule_{};  // guarded by mu_
};


absl::StatusOr<tandem::v1::QueryMode> ParseMode(absl::string_view name) {
  if (name == "or") return tandem::v1::QUERY_MODE_OR;
  if (name == "and") return tandem::v1::QUERY_MODE_AND;
  if (name == "and_or" || name == "and-or" || name == "andor") return tandem::v1::QUERY_MODE_AND_OR;
  return absl::InvalidArgumentError(absl::StrCat("--mode: unknown mode \"", name, "\" (or, and, and_or)"));
}

absl::StatusOr<tandem::v1::EngineHint> ParseEngine(absl::string_view name) {
  if (name == "auto") return tandem::v1::ENGINE_HINT_AUTO;
  if (name == "cpu") return tandem::v1::ENGINE_HINT_CPU;
  if (name == "gpu") return tandem::v1::ENGINE_HINT_GPU;
  return absl::InvalidArgumentError(absl::StrCat("--engine: unknown engine \"", name, "\" (auto, cpu, gpu)"));
}

// The rows asked for by --concurrency, --rate and --rates (a closed loop of one client by default).
absl::StatusOr<std::vector<LoadSpec>> ParseLoads() {
  std::vector<LoadSpec> loads;
  for (const std::string& c : absl::GetFlag(FLAGS_concurrency)) {
    LoadSpec spec;
    if (!absl::SimpleAtoi(c, &spec.concurrency) || spec.concurrency < 1 || spec.concurrency > 100000) {
      return absl::InvalidArgumentError(absl::StrCat("--concurrency: \"", c, "\" is not in 1..100000"));
    }
    loads.push_back(spec);
  }
  std::vector<std::string> rates = absl::GetFlag(FLAGS_rates);
  if (absl::GetFlag(FLAGS_rate) != 0) rates.insert(rates.begin(), absl::StrCat(absl::GetFlag(FLAGS_rate)));
  for (const std::string& r : rates) {
    LoadSpec spec{.open_loop = true};
    if (!absl::SimpleAtod(r, &spec.rate) || !(spec.rate > 0) || !std::isfinite(spec.rate)) {
      return absl::InvalidArgumentError(absl::StrCat("--rate(s): \"", r, "\" is not a positive rate"));
    }
    loads.push_back(spec);
  }
  if (loads.empty()) loads.push_back(LoadSpec{.concurrency = 1});
  return loads;
}

// The requests to send, one per query of the file; queries with no text are left out.
absl::StatusOr<std::vector<SearchRequest>> BuildRequests(size_t* skipped) {
  const std::string path = absl::GetFlag(FLAGS_queries);
  if (path.empty()) return absl::InvalidArgumentError("--queries FILE is required");
  auto format = ParseQueryFileFormat(absl::GetFlag(FLAGS_query_format));
  if (!format.ok()) return format.status();
  auto records = LoadQueryFile(path, *format);
  if (!records.ok()) return records.status();
  auto mode = ParseMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) return mode.status();
  auto engine = ParseEngine(absl::GetFlag(FLAGS_engine));
  if (!engine.ok()) return engine.status();

  std::vector<SearchRequest> requests;
  *skipped = 0;
  for (QueryRecord& q : *records) {
    if (q.text.empty()) {
      ++*skipped;
      continue;
    }
    SearchRequest& r = requests.emplace_back();
    r.set_text(std::move(q.text));
    r.set_mode(*mode);
    r.set_k(absl::GetFlag(FLAGS_k));
    r.set_engine(*engine);
    r.set_request_id(std::move(q.id));
  }
  if (requests.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no queries"));
  if (absl::GetFlag(FLAGS_shuffle)) {
    std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
    std::shuffle(requests.begin(), requests.end(), rng);
  }
  return requests;
}

std::vector<std::unique_ptr<SearchService::Stub>> MakeStubs(const std::string& server, int channels) {
  std::vector<std::unique_ptr<SearchService::Stub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    // Without a local subchannel pool, channels to one address share one TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("tandem.loadgen.channel", i);
    stubs.push_back(SearchService::NewStub(
        grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

// GetIndexInfo, waiting for the server to come up; also proves the server answers at all.
absl::StatusOr<tandem::v1::GetIndexInfoResponse> WaitForServer(SearchService::Stub& stub, double timeout_s) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  tandem::v1::GetIndexInfoResponse info;
  grpc::Status status = stub.GetIndexInfo(&context, tandem::v1::GetIndexInfoRequest(), &info);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("GetIndexInfo on ", absl::GetFlag(FLAGS_server), ": ",
                                               StatusCodeName(status.error_code()), ": ",
                                               status.error_message()));
  }
  return info;
}

void PrintHeader() {
  std::printf("%-14s %9s %9s %7s %10s %10s %8s %8s %8s %8s %8s %8s %8s\n", "load", "sent", "ok", "errors",
              "offered/s", "achieved/s", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99.9_ms",
              "max_ms");
}

void PrintRow(const RunResult& r) {
  const uint64_t ok = r.status_counts.count("OK") ? r.status_counts.at("OK") : 0;
  uint64_t errors = 0;
  for (const auto& [name, n] : r.status_counts) {
    if (name != "OK") errors += n;
  }
  const LatencySummary& l = r.latency;
  std::printf("%-14s %9llu %9llu %7llu %10.1f %10.1f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
              r.spec.Name().c_str(), static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(ok),
              static_cast<unsigned long long>(errors), r.offered_qps, r.achieved_qps, l.mean, l.p50, l.p90, l.p95,
              l.p99, l.p999, l.max);
  if (errors > 0) {
    std::vector<std::string> parts;
    for (const auto& [name, n] : r.status_counts) {
      if (name != "OK") parts.push_back(absl::StrCat(name, "=", n));
    }
    std::printf("%-14s   errors: %s\n", "", absl::StrJoin(parts, " ").c_str());
  }
  std::fflush(stdout);
}

nlohmann::json RowJson(const RunResult& r) {
  const LatencySummary& l = r.latency;
  nlohmann::json row = {
      {"loop", r.spec.open_loop ? "open" : "closed"},
      {"sent", r.sent},
      {"status_counts", r.status_counts},
      {"window_s", r.window_s},
      {"offered_qps", r.offered_qps},
      {"achieved_qps", r.achieved_qps},
      {"latency_ms",
       {{"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p95", l.p95}, {"p99", l.p99}, {"p99_9", l.p999},
        {"max", l.max}}},
      {"server_mean_us",
       {{"queued", r.server_queued_us}, {"execution", r.server_execution_us}, {"total", r.server_total_us}}},
  };
  if (r.spec.open_loop) {
    row["rate"] = r.spec.rate;
  } else {
    row["concurrency"] = r.spec.concurrency;
  }
  return row;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// absl flags are spelled with '_'; accept "--json-out" for "--json_out" as well.
std::vector<char*> NormalizeFlagNames(int argc, char** argv, std::vector<std::string>* storage) {
  storage->assign(argv, argv + argc);
  for (size_t i = 1; i < storage->size(); ++i) {
    std::string& arg = (*storage)[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg[0] != '-') continue;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    std::replace(arg.begin() + start, arg.begin() + end, '-', '_');
  }
  std::vector<char*> out;
  for (std::string& s : *storage) out.push_back(s.data());
  return out;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load generator for a Tandem query node: closed loop (--concurrency) or open loop (--rate, "
      "--rates), latency and throughput as seen by the client.\n"
      "  tandem-loadgen --server HOST:PORT --queries FILE [--mode or|and|and_or] [--k 10]\n"
      "                 [--concurrency 1,4,16 | --rates 100,200,400] [--duration 10 | --num_queries N]\n"
      "                 [--warmup 2] [--json-out FILE]");
  std::vector<std::string> storage;
  std::vector<char*> args = NormalizeFlagNames(argc, argv, &storage);
  std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  if (rest.size() > 1) {
    std::fprintf(stderr, "tandem-loadgen: unexpected argument \"%s\" (see --help)\n", rest[1]);
    return 2;
  }
  const auto fail = [](const absl::Status& status) {
    std::fprintf(stderr, "tandem-loadgen: %s\n", std::string(status.message()).c_str());
    return 2;
  };

  RunOptions options;
  options.warmup_s = absl::GetFlag(FLAGS_warmup);
  options.duration_s = absl::GetFlag(FLAGS_duration);
  options.num_queries = absl::GetFlag(FLAGS_num_queries);
  options.timeout_s = absl::GetFlag(FLAGS_timeout);
  options.max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  options.seed = absl::GetFlag(FLAGS_seed);
  const int channels = absl::GetFlag(FLAGS_channels);
  const int cq_threads = absl::GetFlag(FLAGS_cq_threads);
  if (!(options.warmup_s >= 0) || (options.num_queries == 0 && !(options.duration_s > 0)) ||
      !(options.timeout_s > 0) || options.max_in_flight < 1 || channels < 1 || cq_threads < 1) {
    return fail(absl::InvalidArgumentError(
        "--warmup must be >= 0; --duration (or --num_queries), --timeout, --max_in_flight, --channels and "
        "--cq_threads must be > 0"));
  }
  auto loads = ParseLoads();
  if (!loads.ok()) return fail(loads.status());
  size_t skipped = 0;
  auto requests = BuildRequests(&skipped);
  if (!requests.ok()) return fail(requests.status());

  const std::string server = absl::GetFlag(FLAGS_server);
  auto stubs = MakeStubs(server, channels);
  auto info = WaitForServer(*stubs[0], absl::GetFlag(FLAGS_connect_timeout));
  if (!info.ok()) return fail(info.status());

  const size_t num_queries = requests->size();
  std::printf("tandem-loadgen %s: server %s, index %s (%llu documents, engines %s)\n", TANDEM_GIT_COMMIT,
              server.c_str(), info->index_id().c_str(), static_cast<unsigned long long>(info->documents()),
              absl::StrJoin(info->engines(), ",").c_str());
  std::printf("queries: %zu from %s%s; mode %s, k %u, engine %s; warmup %gs, %s per row\n", num_queries,
              absl::GetFlag(FLAGS_queries).c_str(),
              skipped ? absl::StrCat(" (", skipped, " without text skipped)").c_str() : "",
              absl::GetFlag(FLAGS_mode).c_str(), absl::GetFlag(FLAGS_k), absl::GetFlag(FLAGS_engine).c_str(),
              options.warmup_s,
              options.num_queries > 0 ? absl::StrCat(options.num_queries, " queries").c_str()
                                      : absl::StrCat(options.duration_s, "s").c_str());
  std::printf("latency: client-side, of OK responses, from the scheduled send time\n\n");
  PrintHeader();

  LoadRunner runner(std::move(stubs), *std::move(requests), cq_threads, options);
  const std::string timestamp = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  nlohmann::json rows = nlohmann::json::array();
  for (const LoadSpec& spec : *loads) {
    RunResult result = runner.Run(spec);
    PrintRow(result);
    rows.push_back(RowJson(result));
  }

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  if (!json_out.empty()) {
    nlohmann::json doc = {
        {"tool", "tandem-loadgen"},
        {"commit", TANDEM_GIT_COMMIT},
        {"hostname", Hostname()},
        {"timestamp", timestamp},
        {"label", absl::GetFlag(FLAGS_label)},
        {"parameters",
         {{"server", server},
          {"queries", absl::GetFlag(FLAGS_queries)},
          {"query_format", absl::GetFlag(FLAGS_query_format)},
          {"num_queries_in_file", num_queries},
          {"skipped_queries", skipped},
          {"mode", absl::GetFlag(FLAGS_mode)},
          {"k", absl::GetFlag(FLAGS_k)},
          {"engine", absl::GetFlag(FLAGS_engine)},
          {"warmup_s", options.warmup_s},
          {"duration_s", options.num_queries > 0 ? nlohmann::json(nullptr) : nlohmann::json(options.duration_s)},
          {"num_queries", options.num_queries > 0 ? nlohmann::json(options.num_queries) : nlohmann::json(nullptr)},
          {"timeout_s", options.timeout_s},
          {"channels", channels},
          {"cq_threads", cq_threads},
          {"max_in_flight", options.max_in_flight},
          {"shuffle", absl::GetFlag(FLAGS_shuffle)},
          {"seed", options.seed}}},
        {"server_index",
         {{"index_id", info->index_id()},
          {"documents", info->documents()},
          {"codec", info->codec()},
          {"engines", std::vector<std::string>(info->engines().begin(), info->engines().end())}}},
        {"latency_basis", "client-side, OK responses, from scheduled send time"},
        {"rows", rows},
    };
    std::ofstream out(json_out);
    out << doc.dump(2) << "\n";
    out.close();
    if (!out) {
      return fail(absl::UnavailableError(absl::StrCat("cannot write ", json_out)));
    }
    std::printf("\nwrote %s\n", json_out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tandem::bench

int main(int argc, char** argv) { return tandem::bench::Main(argc, argv); }
