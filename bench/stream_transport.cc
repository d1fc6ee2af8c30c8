#include "bench/stream_transport.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>

namespace tandem::bench {

using tandem::v1::SearchRequest;
using tandem::v1::SearchService;
using tandem::v1::SearchStreamResponse;

// One SearchStream call. Queries are written one at a time in the order sent (gRPC allows one
// outstanding write) and answered in that order, so the queries awaiting an answer form a FIFO that
// each response pops. gRPC runs the reactions on its own threads; Send comes from the sender (open
// loop) or from another stream's reaction (closed loop), so the queues sit under mu_. Writes start
// under mu_: gRPC never runs a client reaction inline from a Start* call (its client callback tags
// are not inlineable, grpcpp/support/client_callback.h).
class StreamTransport::Stream final
    : public grpc::ClientBidiReactor<SearchRequest, SearchStreamResponse> {
 public:
  Stream(Host& host, SearchService::Stub& stub, std::chrono::system_clock::time_point deadline)
      : host_(host) {
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
  Recorder TakeRecorder() { return std::move(recorder_); }

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
    host_.Completed(slot, /*cq_index=*/0);
  }

  Host& host_;
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

StreamTransport::StreamTransport(std::vector<SearchService::Stub*> stubs, const RunOptions& options,
                                 Host& host)
    : stubs_(std::move(stubs)), options_(options), host_(host) {}

StreamTransport::~StreamTransport() = default;

void StreamTransport::Start() {
  // Long enough for the row and the last query's timeout; num_queries rows have no set length.
  const double row_s = options_.num_queries > 0 ? 24 * 3600.0 : options_.duration_s;
  const auto deadline =
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(options_.warmup_s + row_s + options_.timeout_s));
  streams_.clear();
  for (SearchService::Stub* stub : stubs_) {
    for (int i = 0; i < options_.streams_per_stub; ++i) {
      streams_.push_back(std::make_unique<Stream>(host_, *stub, deadline));
    }
  }
}

bool StreamTransport::Send(Clock::time_point scheduled, bool measured, int slot, int /*cq_index*/) {
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
  best->Send(host_.StartQuery(), scheduled, measured, slot);
  return true;
}

std::vector<Recorder> StreamTransport::Finish() {
  for (auto& stream : streams_) stream->Close();
  std::vector<Recorder> recorders;
  for (auto& stream : streams_) recorders.push_back(stream->TakeRecorder());
  streams_.clear();
  return recorders;
}

}  // namespace tandem::bench
