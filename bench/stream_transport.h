// File: stream_transport.h
//
// LoadRunner's Transport::kStream: queries go over long-lived SearchStream calls,
// RunOptions::streams_per_stub per channel, opened when a row starts and half-closed when it ends,
// as a broker that keeps a stream to each shard node would. The node answers a stream's queries in
// request order and works on at most 4 of them at a time, so each query goes to the stream with the
// fewest unanswered queries (join the shortest queue; ties rotate), and each answer is matched
// against the query sent in its place: one whose request_id differs counts as kMismatchedResponse.
//
// A stream's deadline is the row's length plus RunOptions::timeout_s (no per-query deadline). A
// stream that fails counts its unanswered queries with its status (UNKNOWN when it ended OK with
// queries unanswered), and once every stream has ended Send refuses the row's queries. Each stream
// records what it sees on gRPC's threads.
//
//   StreamTransport transport(stubs, options, host);
//   transport.Start();
//   transport.Send(scheduled, /*measured=*/true, /*slot=*/-1, /*cq_index=*/0);
//   std::vector<Recorder> recorders = transport.Finish();
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/load_runner.h"
#include "bench/query_transport.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::bench {

class StreamTransport final : public QueryTransport {
 public:
  // `stubs` (one per channel) and `host` outlive the transport.
  StreamTransport(std::vector<tandem::v1::SearchService::Stub*> stubs, const RunOptions& options,
                  Host& host);
  ~StreamTransport() override;  // out of line: Stream is complete only in stream_transport.cc

  void Start() override;
  // `cq_index` is unused: answers come on gRPC's threads, and Host::Completed gets 0.
  bool Send(Clock::time_point scheduled, bool measured, int slot, int cq_index) override;
  std::vector<Recorder> Finish() override;

 private:
  class Stream;

  const std::vector<tandem::v1::SearchService::Stub*> stubs_;
  const RunOptions options_;
  Host& host_;

  std::vector<std::unique_ptr<Stream>> streams_;  // this row's
  std::atomic<uint64_t> next_stream_{0};          // rotates the ties of the shortest-queue choice
};

}  // namespace tandem::bench
