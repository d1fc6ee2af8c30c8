// File: load_runner.h
//
// LoadRunner sends Search calls to a query node over gRPC's async API and measures them at the
// client: the engine of tandem-loadgen.
//
// Closed loop (LoadSpec::concurrency = N): N clients, each sending its next query when the last one
// returns; throughput is whatever the server sustains.
// Open loop (LoadSpec::rate = R): queries arrive as a Poisson process of rate R and are sent at
// their scheduled times whether or not earlier ones have returned. Latency is taken from the
// scheduled send time, not the actual one, so a client that falls behind cannot hide queueing (the
// "coordinated omission" of Tene, "How NOT to Measure Latency", 2015).
//
// Transport (RunOptions::transport): kUnary sends each query as a Search call (unary_transport.h);
// kStream sends them over long-lived SearchStream calls, RunOptions::streams_per_stub per channel
// (stream_transport.h), as a broker that keeps a stream to each shard node would. The node answers
// a stream's queries in request order and works on at most 4 of them at a time, so each query goes
// to the stream with the fewest unanswered queries (join the shortest queue; ties rotate); a
// response whose request_id is not the one sent counts as kMismatchedResponse. A stream's deadline
// is the row's length plus timeout_s (no per-query deadline), and a stream that fails counts its
// unanswered queries with its status.
//
// A row runs RunOptions::warmup_s of unmeasured load, then duration_s seconds (or num_queries
// queries) measured. A query is measured when it was scheduled inside the measured window; its
// latency counts when it returns OK, and every outcome is counted by status code.
//
//   LoadRunner runner(std::move(stubs), std::move(requests), /*cq_threads=*/2, options);
//   RunResult closed = runner.Run(LoadSpec{.concurrency = 8});
//   RunResult open = runner.Run(LoadSpec{.open_loop = true, .rate = 400});
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/v1/search.grpc.pb.h"

namespace tandem::bench {

// Counted in RunResult::status_counts for an open-loop query that was due while RunOptions::
// max_in_flight queries were outstanding, and so was not sent.
inline constexpr char kClientOverload[] = "CLIENT_OVERLOAD";

// Counted for a stream response that does not answer the query sent in its place (the node must
// answer a stream's queries in order).
inline constexpr char kMismatchedResponse[] = "MISMATCHED_RESPONSE";

enum class Transport { kUnary, kStream };
std::string TransportName(Transport t);  // "unary", "stream"

// "OK", "INVALID_ARGUMENT", ...
std::string StatusCodeName(grpc::StatusCode code);

// One row: a closed loop of `concurrency` clients or an open loop at `rate` queries/s.
struct LoadSpec {
  bool open_loop = false;
  int concurrency = 0;
  double rate = 0;

  std::string Name() const;  // "conc=8", "rate=400"
};

struct RunOptions {
  double warmup_s = 2;
  double duration_s = 10;
  uint64_t num_queries = 0;  // > 0: rows end after this many measured queries instead of duration_s
  double timeout_s = 10;     // deadline of each query
  int64_t max_in_flight = 10000;
  uint64_t seed = 1;  // of the Poisson arrivals
  Transport transport = Transport::kUnary;
  int streams_per_stub = 16;  // kStream: SearchStream calls per channel
};

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;  // milliseconds
};

// Mean and nearest-rank percentiles of latencies given in microseconds, in milliseconds.
LatencySummary Summarize(std::vector<double> latencies_us);

struct RunResult {
  LoadSpec spec;
  uint64_t sent = 0;  // measured queries put on the wire (every one has returned when the row ends)
  std::map<std::string, uint64_t> status_counts;  // measured queries by outcome
  double window_s = 0;      // measured window start to the last measured completion
  double offered_qps = 0;   // measured queries scheduled per second of the scheduling window
  double achieved_qps = 0;  // OK responses per second of window_s
  LatencySummary latency;   // of OK responses, from the scheduled send time
  double server_queued_us = 0, server_execution_us = 0,
         server_total_us = 0;  // means over OK (QueryStats)
};

class QueryTransport;
struct Recorder;

class LoadRunner {
 public:
  // Queries are sent in `requests` order, round-robin over `stubs` (one per channel). Each row gets
  // `cq_threads` completion-queue threads of its own.
  LoadRunner(std::vector<std::unique_ptr<tandem::v1::SearchService::Stub>> stubs,
             std::vector<tandem::v1::SearchRequest> requests, int cq_threads, RunOptions options);
  ~LoadRunner();  // out of line: the transport is complete only in load_runner.cc

  // Runs one row; returns when every query it sent has returned.
  RunResult Run(const LoadSpec& spec);

 private:
  using Clock = std::chrono::steady_clock;
  class TransportHost;

  const tandem::v1::SearchRequest& NextRequest();
  bool Admit(Clock::time_point scheduled, bool* measured);
  void RunClosedLoop(int concurrency);
  void IssueNext(int slot, int cq_index);
  void RunOpenLoop(double rate);
  // Called once per query sent, after it was recorded: issues a closed-loop client's next query,
  // then stops counting this one as outstanding.
  void Completed(int slot, int cq_index);
  RunResult Collect(const LoadSpec& spec, const std::vector<Recorder>& recorders);

  std::vector<std::unique_ptr<tandem::v1::SearchService::Stub>> stubs_;
  std::vector<tandem::v1::SearchRequest> requests_;
  const int num_cqs_;
  const RunOptions options_;

  std::atomic<uint64_t> next_query_{0};
  std::atomic<uint64_t> measured_issued_{0};
  std::atomic<uint64_t> overload_{0};
  std::atomic<int64_t> outstanding_{0};
  Clock::time_point start_, measure_start_, measure_end_;

  std::mutex mu_;
  std::condition_variable done_;
  int active_slots_ = 0;                        // closed-loop clients still sending; guarded by mu_
  Clock::time_point last_measured_schedule_{};  // guarded by mu_

  // Declared last so that they are destroyed first: the transport calls back into the members
  // above.
  std::unique_ptr<TransportHost> host_;
  std::unique_ptr<QueryTransport> transport_;  // of options_.transport, kept across rows
};

}  // namespace tandem::bench
