// The Dispatcher contract of dispatcher.h, checked on each protocol without an executor: items
// admitted from many threads at once are handed out exactly once (run by a worker of a processor
// that may take them, or answered as expired), a parked worker is handed work that comes for it
// and, as the timekeeper, a query that expires while no worker can take it, and after Close the
// workers drain the queues and each Next says exit.
#include "scheduler/dispatcher.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/executor_test_util.h"

namespace tandem::scheduler {
namespace {

using fakes::kPatience;

constexpr Processor kCpu = Processor::kCpu;
constexpr Processor kGpu = Processor::kGpu;

// One item of a job, as the test describes it; `id` is echoed as the query's k.
struct ItemSpec {
  uint32_t id = 0;
  std::optional<Processor> pinned = std::nullopt;
  absl::Time expires = absl::InfiniteFuture();
  CostEstimate cost = {.cpu_ms = 1, .gpu_ms = 1};
};

// A query that carries `id` as its one term (absent from the index), so that any id, 0 included,
// can be told apart from what a worker is handed.
index::PreparedQuery Tagged(uint32_t id) {
  index::Query query;
  query.terms.push_back({absl::StrCat(id), 1.0f});
  return *index::PreparedQuery::Prepare(testing::SmallIndex(), query);
}

// Admits a job of `specs`, the way HybridQueryExecutor::Submit does.
absl::Status Admit(Dispatcher& dispatcher, const std::vector<ItemSpec>& specs) {
  auto job = std::make_shared<PendingJob>();
  job->submitted = absl::Now();
  job->schedule_deadline = job->submitted + absl::Seconds(60);
  std::vector<WorkItem> items;
  for (const ItemSpec& spec : specs) {
    job->job.tasks.push_back({.query = Tagged(spec.id)});
    items.push_back({.cost = spec.cost,
                     .arrival = job->submitted,
                     .deadline = job->schedule_deadline,
                     .expires = spec.expires,
                     .pinned = spec.pinned});
  }
  job->job.on_done = [](size_t, QueryOutcome) {};
  return dispatcher.Admit(std::move(job), std::move(items));
}

uint32_t IdOf(const QueryTask& task) {
  uint32_t id = 0;
  EXPECT_TRUE(absl::SimpleAtoi(task.query.query().terms.at(0).term, &id));
  return id;
}
uint32_t IdOf(const TaskRef& ref) { return IdOf(ref.job->job.tasks[ref.task]); }

// What the workers were handed, by item id; thread-safe.
class Handed {
 public:
  struct Entry {
    int times = 0;
    bool expired = false;
    Processor worker = kCpu;  // the processor of the worker it went to
    absl::Time at;
  };

  void Record(const std::pair<TaskRef, Dequeued>& work, Processor worker, bool expired) {
    absl::MutexLock lock(&mu_);
    Entry& entry = handed_[IdOf(work.first)];
    ++entry.times;
    entry.expired = expired;
    entry.worker = worker;
    entry.at = absl::Now();
    if (expired) {
      EXPECT_EQ(work.second.reason, TakeReason::kExpired);
    } else {
      EXPECT_EQ(work.second.processor, worker);
      EXPECT_NE(work.second.reason, TakeReason::kExpired);
      if (work.second.item.pinned.has_value()) {
        EXPECT_EQ(*work.second.item.pinned, worker);
      }
    }
  }
  // Waits until item `id` was handed out.
  bool WaitFor(uint32_t id) {
    absl::MutexLock lock(&mu_);
    auto handed = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return handed_.count(id) > 0; };
    return mu_.AwaitWithTimeout(absl::Condition(&handed), kPatience);
  }
  std::map<uint32_t, Entry> entries() {
    absl::MutexLock lock(&mu_);
    return handed_;
  }

 private:
  absl::Mutex mu_;
  std::map<uint32_t, Entry> handed_ ABSL_GUARDED_BY(mu_);
};

// Worker threads that ask `dispatcher` for work until it says exit, each reporting the query it
// took as finished at its next Next.
class Workers {
 public:
  Workers(Dispatcher& dispatcher, const std::vector<Processor>& processors, Handed& handed) {
    for (size_t w = 0; w < processors.size(); ++w) {
      threads_.emplace_back([this, &dispatcher, &handed, w, p = processors[w]] {
        std::optional<double> finished;
        absl::Duration idle, lock_wait;
        while (true) {
          Work work = dispatcher.Next(w, std::exchange(finished, std::nullopt), idle, lock_wait);
          for (const auto& expired : work.expired) handed.Record(expired, p, /*expired=*/true);
          if (work.exit()) break;
          if (work.ready.has_value()) {
            handed.Record(*work.ready, p, /*expired=*/false);
            finished = work.ready->second.predicted_ms;
          }
        }
        absl::MutexLock lock(&mu_);
        ++exited_;
      });
    }
  }
  // A worker stuck in Next can be neither joined nor left running on a dispatcher about to be
  // destroyed: the test run stops there instead of hanging.
  ~Workers() {
    if (gave_up_ || !WaitAllExited()) {
      std::fprintf(stderr, "workers still in Dispatcher::Next after %s: aborting\n",
                   absl::FormatDuration(kPatience).c_str());
      std::abort();
    }
    for (std::thread& t : threads_) t.join();
  }
  // Waits until every worker's Next said exit.
  bool WaitAllExited() {
    absl::MutexLock lock(&mu_);
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_ == threads_.size(); };
    gave_up_ = !mu_.AwaitWithTimeout(absl::Condition(&all), kPatience);
    return !gave_up_;
  }

 private:
  absl::Mutex mu_;
  size_t exited_ ABSL_GUARDED_BY(mu_) = 0;
  bool gave_up_ = false;  // WaitAllExited timed out
  std::vector<std::thread> threads_;
};

DispatcherConfig Config(const std::vector<Processor>& workers, size_t queue_capacity) {
  DispatcherConfig config;
  config.workers = workers;
  config.capacity = {.cpu = 0, .gpu = 0};
  for (Processor p : workers) (p == kCpu ? config.capacity.cpu : config.capacity.gpu) += 1;
  config.queue_capacity = queue_capacity;
  return config;
}

class DispatcherTest : public ::testing::TestWithParam<DispatchProtocol> {};

// Submitters admit jobs of one to three items (some pinned, some already expired) while the
// workers take them; then Close. Every admitted item was handed out once, and nothing else.
TEST_P(DispatcherTest, ConcurrentAdmitsAreHandedOutExactlyOnce) {
  const std::vector<Processor> processors = {kCpu, kCpu, kCpu, kGpu, kGpu};
  std::unique_ptr<Dispatcher> dispatcher =
      CreateDispatcher(GetParam(), Config(processors, /*queue_capacity=*/32));
  Handed handed;
  constexpr int kSubmitters = 4;
  constexpr int kJobsPerSubmitter = 400;
  absl::Mutex mu;
  std::map<uint32_t, ItemSpec> admitted;  // by id
  {
    Workers workers(*dispatcher, processors, handed);
    std::vector<std::thread> submitters;
    for (int s = 0; s < kSubmitters; ++s) {
      submitters.emplace_back([&, s] {
        std::mt19937 rng(s);
        for (int j = 0; j < kJobsPerSubmitter; ++j) {
          std::vector<ItemSpec> specs(1 + rng() % 3);
          for (size_t i = 0; i < specs.size(); ++i) {
            ItemSpec& spec = specs[i];
            spec.id = static_cast<uint32_t>((s * kJobsPerSubmitter + j) * 4 + i);
            spec.cost = {.cpu_ms = 0.1 + rng() % 50 / 10.0, .gpu_ms = 0.1 + rng() % 50 / 10.0};
            const uint32_t pin = rng() % 8;
            if (pin == 0) spec.pinned = kCpu;
            if (pin == 1) spec.pinned = kGpu;
            if (rng() % 10 == 0) spec.expires = absl::Now();
          }
          // A full admission queue refuses at once; the workers are draining it.
          absl::Status status;
          for (const absl::Time give_up = absl::Now() + kPatience; absl::Now() < give_up;) {
            status = Admit(*dispatcher, specs);
            if (status.code() != absl::StatusCode::kResourceExhausted) break;
            absl::SleepFor(absl::Microseconds(50));
          }
          ASSERT_TRUE(status.ok()) << status;
          absl::MutexLock lock(&mu);
          for (const ItemSpec& spec : specs) admitted.emplace(spec.id, spec);
        }
      });
    }
    for (std::thread& s : submitters) s.join();
    dispatcher->Close();
    EXPECT_TRUE(workers.WaitAllExited());
  }
  EXPECT_EQ(Admit(*dispatcher, {{.id = 1}}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(dispatcher->waiting_jobs(), 0u);
  const std::map<uint32_t, Handed::Entry> entries = handed.entries();
  EXPECT_EQ(entries.size(), admitted.size());
  for (const auto& [id, entry] : entries) {
    auto it = admitted.find(id);
    ASSERT_NE(it, admitted.end()) << "item " << id << " was never admitted";
    EXPECT_EQ(entry.times, 1) << "item " << id;
    if (entry.expired) {
      EXPECT_NE(it->second.expires, absl::InfiniteFuture()) << "item " << id;
    }
  }
}

// Items admitted one at a time, each for one processor only, wake a parked worker of that
// processor; Close then has every parked worker exit.
TEST_P(DispatcherTest, ParkedWorkersAreHandedWorkAndExitOnClose) {
  const std::vector<Processor> processors = {kCpu, kCpu, kGpu, kGpu};
  std::unique_ptr<Dispatcher> dispatcher =
      CreateDispatcher(GetParam(), Config(processors, /*queue_capacity=*/4));
  Handed handed;
  Workers workers(*dispatcher, processors, handed);
  for (uint32_t id = 0; id < 20; ++id) {
    const Processor p = id % 2 == 0 ? kCpu : kGpu;
    ASSERT_TRUE(Admit(*dispatcher, {{.id = id, .pinned = p}}).ok());
    ASSERT_TRUE(handed.WaitFor(id)) << "item " << id;
    EXPECT_EQ(handed.entries()[id].worker, p);
    absl::SleepFor(absl::Milliseconds(1));  // the workers park again
  }
  dispatcher->Close();
  EXPECT_TRUE(workers.WaitAllExited());
  EXPECT_EQ(handed.entries().size(), 20u);
}

// Jobs admitted before any worker asks are all handed out after Close, and only then do the
// workers exit; after Close, Admit refuses jobs.
TEST_P(DispatcherTest, CloseDrainsWhatIsQueuedThenEveryWorkerExits) {
  const std::vector<Processor> processors = {kCpu, kGpu, kGpu};
  std::unique_ptr<Dispatcher> dispatcher =
      CreateDispatcher(GetParam(), Config(processors, /*queue_capacity=*/16));
  for (uint32_t id = 0; id < 16; ++id) {
    const std::optional<Processor> pinned = id % 4 == 0   ? std::optional(kCpu)
                                            : id % 4 == 1 ? std::optional(kGpu)
                                                          : std::nullopt;
    ASSERT_TRUE(Admit(*dispatcher, {{.id = 2 * id, .pinned = pinned}, {.id = 2 * id + 1}}).ok());
  }
  EXPECT_EQ(dispatcher->waiting_jobs(), 16u);
  EXPECT_EQ(Admit(*dispatcher, {{.id = 100}}).code(), absl::StatusCode::kResourceExhausted);
  dispatcher->Close();
  dispatcher->Close();  // idempotent
  Handed handed;
  {
    Workers workers(*dispatcher, processors, handed);
    EXPECT_TRUE(workers.WaitAllExited());
  }
  EXPECT_EQ(Admit(*dispatcher, {{.id = 100}}).code(), absl::StatusCode::kUnavailable);
  const std::map<uint32_t, Handed::Entry> entries = handed.entries();
  EXPECT_EQ(entries.size(), 32u);
  for (const auto& [id, entry] : entries) {
    EXPECT_EQ(entry.times, 1) << "item " << id;
    EXPECT_FALSE(entry.expired) << "item " << id;
  }
  EXPECT_EQ(dispatcher->waiting_jobs(), 0u);
}

// A query that expires while the only worker that may run it is busy goes, at its expiry, to a
// parked worker of the other processor, as expired.
TEST_P(DispatcherTest, QueryExpiringInTheQueueGoesToAParkedWorkerAtItsExpiry) {
  const std::vector<Processor> processors = {kCpu, kGpu};
  std::unique_ptr<Dispatcher> dispatcher =
      CreateDispatcher(GetParam(), Config(processors, /*queue_capacity=*/4));
  ASSERT_TRUE(Admit(*dispatcher, {{.id = 1, .pinned = kCpu}}).ok());
  // The CPU worker takes query 1 and holds it until `release`.
  absl::Notification release;
  std::thread cpu_worker([&] {
    absl::Duration idle, lock_wait;
    Work work = dispatcher->Next(0, std::nullopt, idle, lock_wait);
    ASSERT_TRUE(work.ready.has_value());
    EXPECT_EQ(IdOf(work.ready->first), 1u);
    release.WaitForNotificationWithTimeout(kPatience);
    for (std::optional<double> finished = work.ready->second.predicted_ms;
         !(work = dispatcher->Next(0, std::exchange(finished, std::nullopt), idle, lock_wait))
              .exit();) {
      if (work.ready.has_value()) finished = work.ready->second.predicted_ms;
    }
  });
  Handed handed;
  std::thread gpu_worker([&] {
    absl::Duration idle, lock_wait;
    for (Work work; !(work = dispatcher->Next(1, std::nullopt, idle, lock_wait)).exit();) {
      for (const auto& expired : work.expired) handed.Record(expired, kGpu, /*expired=*/true);
      EXPECT_FALSE(work.ready.has_value());
    }
  });
  while (dispatcher->waiting_jobs() > 0) absl::SleepFor(absl::Milliseconds(1));  // 1 started
  absl::SleepFor(absl::Milliseconds(10));  // the GPU worker parks
  const absl::Time expires = absl::Now() + absl::Milliseconds(50);
  ASSERT_TRUE(Admit(*dispatcher, {{.id = 2, .pinned = kCpu, .expires = expires}}).ok());
  EXPECT_TRUE(handed.WaitFor(2));
  release.Notify();
  const std::map<uint32_t, Handed::Entry> entries = handed.entries();
  ASSERT_EQ(entries.count(2), 1u);
  EXPECT_TRUE(entries.at(2).expired);
  EXPECT_GE(entries.at(2).at, expires);
  dispatcher->Close();
  cpu_worker.join();
  gpu_worker.join();
}

INSTANTIATE_TEST_SUITE_P(Protocols, DispatcherTest,
                         ::testing::ValuesIn(fakes::kAllDispatchProtocols), fakes::DispatchName);

}  // namespace
}  // namespace tandem::scheduler
