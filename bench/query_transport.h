// File: query_transport.h
//
// What LoadRunner asks of the way its queries reach the node: UnaryTransport (unary_transport.h)
// sends each query as a Search call, StreamTransport (stream_transport.h) over long-lived
// SearchStream calls. Used only inside tandem_load_runner; load_runner.h tells what each measures.
//
// A transport lives as long as its runner and serves one row at a time. For each query it puts on
// the wire it calls Host::StartQuery just before, and Host::Completed exactly once after recording
// the query's outcome (OK, an error status, or the failure of its call). Completed may call Send
// again (a closed-loop client's next query), so a transport calls it holding none of its locks.
//
//   transport.Start();                                     // the row's threads or streams
//   transport.Send(scheduled, measured, slot, cq_index);   // from the drivers and from Completed
//   std::vector<Recorder> recorders = transport.Finish();  // once every query has completed
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "tandem/v1/search.pb.h"

namespace tandem::bench {

// What one thread of a row (a completion-queue poller, or a stream's reactions) saw of the measured
// queries; LoadRunner merges them after the row.
struct Recorder {
  std::vector<double> ok_latency_us;
  std::map<grpc::StatusCode, uint64_t> counts;
  double queued_us = 0, execution_us = 0, total_us = 0;
  std::chrono::steady_clock::time_point last_completion{};
  uint64_t mismatched = 0;  // kStream: responses that did not answer the query sent

  // One measured query came back at `now` with `code` (and, when OK, `stats`).
  void Record(std::chrono::steady_clock::time_point scheduled,
              std::chrono::steady_clock::time_point now, grpc::StatusCode code,
              const tandem::v1::QueryStats* stats);
};

class QueryTransport {
 public:
  using Clock = std::chrono::steady_clock;

  // The row a transport sends for: LoadRunner.
  class Host {
   public:
    // Counts one more query outstanding and returns the request to send. Called once the transport
    // knows it can send, so that a query it refuses takes no request.
    virtual const tandem::v1::SearchRequest& StartQuery() = 0;
    // Called once per StartQuery, after the outcome was recorded; a closed-loop client (slot >= 0)
    // sends its next query from inside this call, on queue `cq_index`.
    virtual void Completed(int slot, int cq_index) = 0;

   protected:
    ~Host() = default;
  };

  virtual ~QueryTransport() = default;

  // Opens what a row sends on. Recorders start empty.
  virtual void Start() = 0;

  // Sends the next query (Host::StartQuery), scheduled at `scheduled`; only `measured` ones are
  // recorded. `slot` is the closed-loop client (-1 in the open loop), `cq_index` the completion
  // queue of the answer, below the runner's cq_threads (UnaryTransport; StreamTransport answers on
  // gRPC's threads). False when the query could not be sent (StreamTransport: every stream has
  // ended).
  virtual bool Send(Clock::time_point scheduled, bool measured, int slot, int cq_index) = 0;

  // Ends the row once every query sent has completed, and returns what it recorded.
  virtual std::vector<Recorder> Finish() = 0;
};

}  // namespace tandem::bench
