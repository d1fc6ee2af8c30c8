// File: thread_pool.h
//
// A fixed pool of worker threads running queued closures, sized to the machine by default. The CPU
// engine itself is stateless and thread-safe; this pool is how batch tools (tandem-eval,
// benchmarks) run many queries at once. The server keeps its own bounded admission queue in front
// of it.
//
//   ThreadPool pool;  // hardware_concurrency() threads
//   pool.Schedule([&] { engine.Search(q, ctx); });
//   pool.Wait();
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::base {

class ThreadPool {
 public:
  // 0 threads means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(size_t num_threads = 0);
  // Runs every queued task, then joins.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }
  void Schedule(std::function<void()> task);
  // Blocks until the queue is empty and no task is running.
  void Wait();

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tandem::base
