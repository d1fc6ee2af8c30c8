// File: unary_transport.h
//
// LoadRunner's Transport::kUnary: each query is one async Search call with a deadline of
// RunOptions::timeout_s, the calls going round-robin over the channels' stubs. Each row has
// cq_threads completion queues of its own, each drained by one thread that records the answers it
// takes; Send's cq_index names the queue, so a closed-loop client stays on one.
//
//   UnaryTransport transport(stubs, /*cq_threads=*/2, options, host);
//   transport.Start();
//   transport.Send(scheduled, /*measured=*/true, /*slot=*/-1, /*cq_index=*/0);
//   std::vector<Recorder> recorders = transport.Finish();
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench/load_runner.h"
#include "bench/query_transport.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::bench {

class UnaryTransport final : public QueryTransport {
 public:
  // `stubs` (one per channel) and `host` outlive the transport.
  UnaryTransport(std::vector<tandem::v1::SearchService::Stub*> stubs, int cq_threads,
                 const RunOptions& options, Host& host);
  ~UnaryTransport() override;  // out of line: Call is complete only in unary_transport.cc

  void Start() override;
  bool Send(Clock::time_point scheduled, bool measured, int slot, int cq_index) override;
  std::vector<Recorder> Finish() override;

 private:
  struct Call;

  // Records each call that completes on queue `cq_index` until the queue is shut down.
  void Poll(int cq_index);

  const std::vector<tandem::v1::SearchService::Stub*> stubs_;
  const int num_cqs_;
  const double timeout_s_;
  Host& host_;

  std::vector<std::unique_ptr<grpc::CompletionQueue>> cqs_;  // this row's
  std::vector<Recorder> recorders_;  // one per completion queue, touched only by its thread
  std::vector<std::thread> pollers_;
  std::atomic<uint64_t> next_stub_{0};
};

}  // namespace tandem::bench
