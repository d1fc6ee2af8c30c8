#include "bench/load_runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::bench {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using tandem::v1::SearchService;
using tandem::v1::SearchStreamResponse;

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

struct LoadRunner::Call {
  grpc::ClientContext context;
  SearchResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SearchResponse>> reader;
  Clock::time_point scheduled;
  bool measured = false;
  int slot = -1;  // closed-loop client, -1 in the open loop
};

void LoadRunner::Recorder::Record(Clock::time_point scheduled, Clock::time_point now,
                                  grpc::StatusCode code, const tandem::v1::QueryStats* stats) {
  counts[code]++;
  last_completion = std::max(last_completion, now);
  if (code != grpc::StatusCode::OK) return;
  ok_latency_us.push_back(std::chrono::duration<double, std::micro>(now - scheduled).count());
  if (stats == nullptr) return;
  queued_us += static_cast<double>(stats->queued_micros());
  execution_us += static_cast<double>(stats->execution_micros());
  total_us += static_cast<double>(stats->total_micros());
}

// One SearchStream call (kStream). Queries are written one at a time in the order sent (gRPC allows
// one outstanding write) and answered in that order, so the queries awaiting an answer form a FIFO
// that each response pops. gRPC runs the reactions on its own threads; Send comes from the sender
// (open loop) or from another stream's reaction (closed loop), so the queues sit under mu_. Writes
// start under mu_: gRPC never runs a client reaction inline from a Start* call (its client
// callback tags are not inlineable, grpcpp/support/client_callback.h).
class LoadRunner::Stream final
    : public grpc::ClientBidiReactor<SearchRequest, SearchStreamResponse> {
 public:
  Stream(LoadRunner& runner, SearchService::Stub& stub,
         std::chrono::system_clock::time_point deadline)
      : runner_(runner) {
    context_.set_deadline(deadline);
    stub.async()->SearchStream(&context_, this);
    StartRead(&response_);
    StartCall();
  }

  bool ended() const { return ended_.load(std::memory_order_acquire); }
  int64_t unanswered() const { return unanswered_.load(std::memory_order_relaxed); }

  // Sends one query. On a stream that has ended it is recorded at once with the stream's status.
  void Send(const SearchRequest& request, Clock::time_point scheduled, bool measured, int slot) {
    unanswered_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!done_) {
        awaiting_.push_back(Sent{&request, scheduled, measured, slot});
        to_write_.push_back(&request);
        if (!writing_ && !write_failed_) {
          writing_ = true;
          StartWrite(to_write_.front());
        }
        return;
      }
      if (measured) recorder_.Record(scheduled, Clock::now(), FailureCode(), nullptr);
    }
    Answered(slot);
  }

  // Half-closes the stream (every query has been answered by now) and waits for its end.
  void Close() {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    // WritesDone is a write too: it waits for the last write's OnWriteDone.
    if (!done_ && !write_failed_ && !writing_) StartWritesDone();
    ended_cv_.wait(lock, [&] { return finished_; });
  }

  // After Close.
  const Recorder& recorder() const { return recorder_; }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    to_write_.pop_front();
    if (!ok) write_failed_ = true;  // the call is broken; OnDone fails what is still awaited
    writing_ = !write_failed_ && !to_write_.empty();
    if (writing_) {
      StartWrite(to_write_.front());
    } else if (closing_ && !write_failed_) {
      StartWritesDone();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the server finished the call, or it broke: OnDone follows
    const Clock::time_point now = Clock::now();
    int slot = -1;
    bool answered = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (awaiting_.empty()) {
        ++recorder_.mismatched;  // an answer to nothing sent
      } else {
        const Sent sent = awaiting_.front();
        awaiting_.pop_front();
        slot = sent.slot;
        answered = true;
        if (sent.measured) {
          if (response_.request_id() != sent.request->request_id()) {
            ++recorder_.mismatched;
            recorder_.last_completion = std::max(recorder_.last_completion, now);
          } else {
            recorder_.Record(sent.scheduled, now,
                             static_cast<grpc::StatusCode>(response_.status().code()),
                             &response_.response().stats());
          }
        }
      }
    }
    StartRead(&response_);
    if (answered) Answered(slot);
  }

  void OnDone(const grpc::Status& status) override {
    std::vector<int> slots;
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = status;
      // The server ends a stream only after answering every query read; an OK end with queries
      // still awaited means answers were lost.
      const grpc::StatusCode code = FailureCode();
      const Clock::time_point now = Clock::now();
      for (const Sent& sent : awaiting_) {
        if (sent.measured) recorder_.Record(sent.scheduled, now, code, nullptr);
        slots.push_back(sent.slot);
      }
      awaiting_.clear();
      done_ = true;
      ended_.store(true, std::memory_order_release);
    }
    for (int slot : slots) Answered(slot);
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;  // nothing touches this object after OnDone returns: Close may free it
    ended_cv_.notify_all();
  }

 private:
  struct Sent {
    const SearchRequest* request;
    Clock::time_point scheduled;
    bool measured;
    int slot;
  };

  // What a query the stream could not answer counts as: the call's status, or UNKNOWN when it
  // ended OK with the query unanswered.
  grpc::StatusCode FailureCode() const {
    return status_.ok() ? grpc::StatusCode::UNKNOWN : status_.error_code();
  }

  void Answered(int slot) {
    unanswered_.fetch_sub(1, std::memory_order_relaxed);
    runner_.Completed(slot, /*cq_index=*/0);
  }

  LoadRunner& runner_;
  grpc::ClientContext context_;
  SearchStreamResponse response_;  // target of the one outstanding read
  std::atomic<int64_t> unanswered_{0};
  std::atomic<bool> ended_{false};

  std::mutex mu_;
  std::condition_variable ended_cv_;
  std::deque<Sent> awaiting_;                  // sent, not yet answered, in order
  std::deque<const SearchRequest*> to_write_;  // the head is being written
  bool writing_ = false;
  bool write_failed_ = false;
  bool closing_ = false;   // Close was called: half-close after the last write
  bool done_ = false;      // OnDone has recorded the stream's end
  bool finished_ = false;  // OnDone is over
  grpc::Status status_;
  Recorder recorder_;
};

LoadRunner::LoadRunner(std::vector<std::unique_ptr<SearchService::Stub>> stubs,
                       std::vector<SearchRequest> requests, int cq_threads, RunOptions options)
    : stubs_(std::move(stubs)),
      requests_(std::move(requests)),
      num_cqs_(cq_threads),
      options_(options) {}

LoadRunner::~LoadRunner() = default;

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
  if (options_.transport == Transport::kStream) {
    OpenStreams();
  } else {
    for (int i = 0; i < num_cqs_; ++i) pollers.emplace_back([this, i] { Poll(i); });
  }
  if (spec.open_loop) {
    RunOpenLoop(spec.rate);
  } else {
    RunClosedLoop(spec.concurrency);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return outstanding_ == 0 && active_slots_ == 0; });
  }
  CloseStreams();
  for (auto& cq : cqs_) cq->Shutdown();
  for (auto& t : pollers) t.join();
  RunResult result = Collect(spec);
  streams_.clear();
  return result;
}

void LoadRunner::OpenStreams() {
  // Long enough for the row and the last query's timeout; num_queries rows have no set length.
  const double row_s = options_.num_queries > 0 ? 24 * 3600.0 : options_.duration_s;
  const auto deadline =
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(options_.warmup_s + row_s + options_.timeout_s));
  streams_.clear();
  for (auto& stub : stubs_) {
    for (int i = 0; i < options_.streams_per_stub; ++i) {
      streams_.push_back(std::make_unique<Stream>(*this, *stub, deadline));
    }
  }
}

void LoadRunner::CloseStreams() {
  for (auto& stream : streams_) stream->Close();
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

bool LoadRunner::Issue(Clock::time_point scheduled, bool measured, int slot, int cq_index) {
  if (options_.transport == Transport::kStream) {
    // Join the shortest queue among the streams that have not ended; ties go round-robin.
    const size_t n = streams_.size();
    const size_t first = next_stream_.fetch_add(1, std::memory_order_relaxed) % n;
    Stream* best = nullptr;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < n && fewest > 0; ++i) {
      Stream* s = streams_[(first + i) % n].get();
      if (s->ended()) continue;
      if (const int64_t u = s->unanswered(); u < fewest) {
        fewest = u;
        best = s;
      }
    }
    if (best == nullptr) return false;
    outstanding_.fetch_add(1);
    best->Send(NextRequest(), scheduled, measured, slot);
    return true;
  }
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
  return true;
}

void LoadRunner::RunClosedLoop(int concurrency) {
  for (int slot = 0; slot < concurrency; ++slot) IssueNext(slot, slot % num_cqs_);
}

void LoadRunner::IssueNext(int slot, int cq_index) {
  const Clock::time_point now = Clock::now();
  bool measured;
  if (Admit(now, &measured) && Issue(now, measured, slot, cq_index)) return;
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
    if (!Issue(next, measured, -1, cq)) break;  // every stream has ended
  }
}

void LoadRunner::Poll(int cq_index) {
  grpc::CompletionQueue& cq = *cqs_[cq_index];
  Recorder& rec = recorders_[cq_index];
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    if (call->measured) {
      rec.Record(call->scheduled, Clock::now(), call->status.error_code(),
                 call->status.ok() ? &call->response.stats() : nullptr);
    }
    const int slot = call->slot;
    call.reset();
    Completed(slot, cq_index);
  }
}

void LoadRunner::Completed(int slot, int cq_index) {
  // The next query goes out before this one stops counting as outstanding, so that the count
  // cannot touch zero while a closed-loop client is still running.
  if (slot >= 0) IssueNext(slot, cq_index);
  std::lock_guard<std::mutex> lock(mu_);
  if (--outstanding_ == 0) done_.notify_all();
}

RunResult LoadRunner::Collect(const LoadSpec& spec) {
  RunResult r;
  r.spec = spec;
  std::vector<double> latencies;
  Clock::time_point last_completion = measure_start_;
  std::vector<const Recorder*> recorders;
  for (const Recorder& rec : recorders_) recorders.push_back(&rec);
  for (const auto& stream : streams_) recorders.push_back(&stream->recorder());
  uint64_t mismatched = 0;
  for (const Recorder* recp : recorders) {
    const Recorder& rec = *recp;
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
