#include "server/call_workers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"

namespace tandem::server {

CallWorkers::CallWorkers(const CallWorkersOptions& options) : capacity_(options.queue_capacity) {
  const int threads = options.threads < 1 ? 1 : options.threads;
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, name = options.name] {
      base::NameThread(name.c_str());
      Run();
    });
  }
}

CallWorkers::~CallWorkers() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

absl::Status CallWorkers::Submit(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is stopping");
  if (queue_.size() >= capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many calls waiting (", capacity_, "); retry later"));
  }
  queue_.push_back(std::move(work));
  return absl::OkStatus();
}

void CallWorkers::Run() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace tandem::server
