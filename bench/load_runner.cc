#include "bench/load_runner.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/query_transport.h"
#include "bench/stream_transport.h"
#include "bench/unary_transport.h"

namespace tandem::bench {

using tandem::v1::SearchRequest;
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

std::string TransportName(Transport t) { return t == Transport::kStream ? "stream" : "unary"; }

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

// What the transport calls back into: the runner's request order, outstanding count and
// closed-loop clients.
class LoadRunner::TransportHost final : public QueryTransport::Host {
 public:
  explicit TransportHost(LoadRunner& runner) : runner_(runner) {}

  const SearchRequest& StartQuery() override {
    runner_.outstanding_.fetch_add(1);
    return runner_.NextRequest();
  }

  void Completed(int slot, int cq_index) override { runner_.Completed(slot, cq_index); }

 private:
  LoadRunner& runner_;
};

LoadRunner::LoadRunner(std::vector<std::unique_ptr<SearchService::Stub>> stubs,
                       std::vector<SearchRequest> requests, int cq_threads, RunOptions options)
    : stubs_(std::move(stubs)),
      requests_(std::move(requests)),
      num_cqs_(cq_threads),
      options_(options),
      host_(std::make_unique<TransportHost>(*this)) {
  std::vector<SearchService::Stub*> stubs_view;
  for (const auto& stub : stubs_) stubs_view.push_back(stub.get());
  if (options_.transport == Transport::kStream) {
    transport_ = std::make_unique<StreamTransport>(std::move(stubs_view), options_, *host_);
  } else {
    transport_ =
        std::make_unique<UnaryTransport>(std::move(stubs_view), num_cqs_, options_, *host_);
  }
}

LoadRunner::~LoadRunner() = default;

RunResult LoadRunner::Run(const LoadSpec& spec) {
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

  transport_->Start();
  if (spec.open_loop) {
    RunOpenLoop(spec.rate);
  } else {
    RunClosedLoop(spec.concurrency);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return outstanding_ == 0 && active_slots_ == 0; });
  }
  return Collect(spec, transport_->Finish());
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

void LoadRunner::RunClosedLoop(int concurrency) {
  for (int slot = 0; slot < concurrency; ++slot) IssueNext(slot, slot % num_cqs_);
}

void LoadRunner::IssueNext(int slot, int cq_index) {
  const Clock::time_point now = Clock::now();
  bool measured;
  if (Admit(now, &measured) && transport_->Send(now, measured, slot, cq_index)) return;
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
    if (!transport_->Send(next, measured, -1, cq)) break;  // every stream has ended
  }
}

void LoadRunner::Completed(int slot, int cq_index) {
  // The next query goes out before this one stops counting as outstanding, so that the count
  // cannot touch zero while a closed-loop client is still running.
  if (slot >= 0) IssueNext(slot, cq_index);
  std::lock_guard<std::mutex> lock(mu_);
  if (--outstanding_ == 0) done_.notify_all();
}

RunResult LoadRunner::Collect(const LoadSpec& spec, const std::vector<Recorder>& recorders) {
  RunResult r;
  r.spec = spec;
  std::vector<double> latencies;
  Clock::time_point last_completion = measure_start_;
  uint64_t mismatched = 0;
  for (const Recorder& rec : recorders) {
    mismatched += rec.mismatched;
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
  if (mismatched > 0) {
    r.status_counts[kMismatchedResponse] = mismatched;
    r.sent += mismatched;
  }
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
