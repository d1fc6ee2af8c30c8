#include "bench/load_runner.h"

#include "absl/status/status.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::bench {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using tandem::v1::SearchService;

namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::chrono::steady_clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

}  // namespace

std::string StatusCodeName(grpc::StatusCode code) {
  // grpc::StatusCode and absl::StatusCode share the canonical google.rpc.Code numbering.
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNRECOGNIZED" : name;
}

std::string LoadSpec::Name() const {
  return open_loop ? absl::StrFormat("rate=%g", rate) : absl::StrCat("conc=", concurrency);
}

LatencySummary Summarize(std::vector<double> us) {
  LatencySummary s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  const double n = static_cast<double>(us.size());
  // Nearest rank: the smallest sample with at least a fraction q of the samples at or below it.
  const auto rank = [&](double q) {
    const auto i = static_cast<size_t>(std::ceil(q * n));
    return us[std::clamp<size_t>(i, 1, us.size()) - 1] / 1000.0;
  };
  s.mean = std::accumulate(us.begin(), us.end(), 0.0) / n / 1000.0;
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p95 = rank(0.95);
  s.p99 = rank(0.99);
  s.p999 = rank(0.999);
  s.max = us.back() / 1000.0;
  return s;
}

struct LoadRunner::Call {
  grpc::ClientContext context;
  SearchResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SearchResponse>> reader;
  Clock::time_point scheduled;
  bool measured = false;
  int slot = -1;  // closed-loop client, -1 in the open loop
};

LoadRunner::LoadRunner(std::vector<std::unique_ptr<SearchService::Stub>> stubs,
                       std::vector<SearchRequest> requests, int cq_threads, RunOptions options)
    : stubs_(std::move(stubs)),
      requests_(std::move(requests)),
      num_cqs_(cq_threads),
      options_(options) {}

RunResult LoadRunner::Run(const LoadSpec& spec) {
  cqs_.clear();
  for (int i = 0; i < num_cqs_; ++i) cqs_.push_back(std::make_unique<grpc::CompletionQueue>());
  recorders_.assign(num_cqs_, Recorder{});
  outstanding_ = 0;
  measured_issued_ = 0;
  overload_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_slots_ = spec.open_loop ? 0 : spec.concurrency;
    last_measured_schedule_ = Clock::time_point{};
  }
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

const SearchRequest& LoadRunner::NextRequest() {
  return requests_[next_query_.fetch_add(1, std::memory_order_relaxed) % requests_.size()];
}

bool LoadRunner::Admit(Clock::time_point scheduled, bool* measured) {
  if (scheduled < measure_start_) {
    *measured = false;
    return true;
  }
  if (options_.num_queries > 0) {
    if (measured_issued_.fetch_add(1) >= options_.num_queries) return false;
  } else if (scheduled >= measure_end_) {
    return false;
  } else {
    measured_issued_.fetch_add(1);
  }
  *measured = true;
  std::lock_guard<std::mutex> lock(mu_);
  last_measured_schedule_ = std::max(last_measured_schedule_, scheduled);
  return true;
}

void LoadRunner::Issue(Clock::time_point scheduled, bool measured, int slot, int cq_index) {
  auto* call = new Call;  // owned by the completion queue until Poll takes it back
  call->scheduled = scheduled;
  call->measured = measured;
  call->slot = slot;
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                 std::chrono::duration<double>(options_.timeout_s)));
  outstanding_.fetch_add(1);
  SearchService::Stub& stub =
      *stubs_[next_stub_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()];
  call->reader = stub.PrepareAsyncSearch(&call->context, NextRequest(), cqs_[cq_index].get());
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, call);
}

void LoadRunner::RunClosedLoop(int concurrency) {
  for (int slot = 0; slot < concurrency; ++slot) IssueNext(slot, slot % num_cqs_);
}

void LoadRunner::IssueNext(int slot, int cq_index) {
  const Clock::time_point now = Clock::now();
  bool measured;
  if (Admit(now, &measured)) {
    Issue(now, measured, slot, cq_index);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);  // this client is done
  if (--active_slots_ == 0) done_.notify_all();
}

void LoadRunner::RunOpenLoop(double rate) {
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

void LoadRunner::Poll(int cq_index) {
  grpc::CompletionQueue& cq = *cqs_[cq_index];
  Recorder& rec = recorders_[cq_index];
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    const Clock::time_point now = Clock::now();
    if (call->measured) {
      rec.counts[call->status.error_code()]++;
      rec.last_completion = std::max(rec.last_completion, now);
      if (call->status.ok()) {
        rec.ok_latency_us.push_back(
            std::chrono::duration<double, std::micro>(now - call->scheduled).count());
        const tandem::v1::QueryStats& stats = call->response.stats();
        rec.queued_us += static_cast<double>(stats.queued_micros());
        rec.execution_us += static_cast<double>(stats.execution_micros());
        rec.total_us += static_cast<double>(stats.total_micros());
      }
    }
    const int slot = call->slot;
    call.reset();
    // The next query goes out before this one stops counting as outstanding, so that the count
    // cannot touch zero while a closed-loop client is still running.
    if (slot >= 0) IssueNext(slot, cq_index);
    std::lock_guard<std::mutex> lock(mu_);
    if (--outstanding_ == 0) done_.notify_all();
  }
}

RunResult LoadRunner::Collect(const LoadSpec& spec) {
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
  Clock::time_point last_scheduled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_scheduled = last_measured_schedule_;
  }
  const double schedule_window =
      options_.num_queries > 0 ? Seconds(last_scheduled - measure_start_) : options_.duration_s;
  r.offered_qps =
      schedule_window > 0 ? static_cast<double>(r.sent + overload_) / schedule_window : 0;
  r.achieved_qps = r.window_s > 0 ? ok / r.window_s : 0;
  r.latency = Summarize(std::move(latencies));
  return r;
}

}  // namespace tandem::bench
