// File: call_workers.h
//
// A few threads that run calls' blocking work off gRPC's callback threads. A Subscribe waits for
// its snapshot to reach the disk and a Match for the matcher; done on gRPC's threads, that would
// hold the threads every service needs to accept (and refuse) calls. The queue is bounded: past it,
// Submit refuses the work and the call is answered RESOURCE_EXHAUSTED, so a flood waits in the
// clients, not in the node's memory.
//
//   CallWorkers workers({.threads = 4, .queue_capacity = 64, .name = "tandem-subs"});
//   if (absl::Status s = workers.Submit([=] { reactor->Finish(Run(request)); }); !s.ok()) ...
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace tandem::server {

struct CallWorkersOptions {
  int threads = 4;
  size_t queue_capacity = 64;         // work waiting for a thread
  std::string name = "tandem-calls";  // the threads' name (15 characters are kept)
};

class CallWorkers {
 public:
  explicit CallWorkers(const CallWorkersOptions& options);
  // Runs what is queued, then joins the threads.
  ~CallWorkers();

  // RESOURCE_EXHAUSTED (naming the capacity) when the queue is full; the work is then not run.
  absl::Status Submit(std::function<void()> work);

 private:
  void Run();

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tandem::server
