// File: hybrid_executor.h
//
// The CPU+GPU QueryExecutor of Ding et al. 2009, section 9: every query gets a predicted cost on
// each processor from a CostPredictor at Submit and waits in one of three queues (much cheaper on
// the GPU, much cheaper on the CPU, the rest); a pool of CPU workers and GPU workers (several
// queries in flight on the GPU) take work by the policy of scheduler::WorkQueues: urgent queries
// first, shortest-predicted-job first within a bounded wait, then the shared queue, then stealing
// from the other processor. After each run the measured time goes back to the predictor.
//
// Admission is PoolQueryExecutor's: at most queue_capacity jobs waiting (a batch counts once),
// RESOURCE_EXHAUSTED beyond, UNAVAILABLE after Shutdown, each admitted task's on_done called
// exactly once, a batch's tasks free to run in parallel on either processor.
//
// Deadlines. The deadline a query is scheduled by is the earlier of the call's own (gRPC) deadline
// and arrival + default_deadline (500 ms, the paper's bound for a search engine). Only the call's
// deadline stops a query (DEADLINE_EXCEEDED): one that expires while queued is answered at once
// without running; the default deadline orders work (urgency) and counts misses, since the caller
// is still waiting for the answer.
//
// Routing. EnginePreference kCpu / kGpu pin a query to that processor (never stolen); kAuto is
// routed. Without a GPU engine every query runs on the CPU (kGpu: FAILED_PRECONDITION) and the
// predictor is optional. A GPU engine fault is answered on the CPU, as PoolQueryExecutor does.
//
// Threads and the lock. The queues sit behind one mutex, and no thread ever blocks on it: work is
// handed out by combining (Hendler et al., "Flat combining and the synchronization-parallelism
// tradeoff", SPAA 2010). A worker that wants its next query publishes a request in its own slot
// (with the predicted cost of the query it finished) and tries the lock: whoever holds it serves
// every published request in one round (accounts for the finished queries, moves the inbox into the
// queues, takes a query for each requester, or parks it when there is nothing for it) and, after
// releasing it, looks again for requests published meanwhile. A requester whose try fails waits on
// its own slot, spinning briefly first. On the H100 machine, with 20 workers taking the lock for
// every query, each acquisition had waited hundreds of microseconds for a lock held for a few:
// sleeping waiters handed it on one wake-up at a time
// (bench/results/hybrid_probe_h100_session15.txt). Parked workers (nothing to take) sleep on their
// slots until a round finds work for them; every round that changes the queues serves them again.
// One of them, the timekeeper, also wakes at the earliest expiry of a queued query to answer it if
// no round came first. Submit counts the job with an atomic and stages it in an inbox, and starts a
// round only when a parked worker may take the job (by where the last thresholds would route it) or
// the job expires before the timekeeper wakes; otherwise the next round moves the inbox into the
// queues. With answer_threads, GPU workers hand the answer (on_done: building the response,
// completing the call) to answer threads and go back to the device.
//
//   auto executor = HybridQueryExecutor::Create(cpu, gpu, {.cpu_threads = 16, .gpu_threads = 4,
//                                                          .queue_capacity = 64,
//                                                          .predictor = cost_model.get()});
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/thread_affinity.h"
#include "base/thread_priority.h"
#include "index/engine.h"
#include "cost_model/cost_predictor.h"
#include "scheduler/work_queues.h"
#include "scheduler/query_executor.h"

namespace tandem::scheduler {

// One scheduling decision: which processor took a query, from which queue and why.
struct SchedulerDecision {
  scheduler::Processor processor = scheduler::Processor::kCpu;
  scheduler::QueueKind queue = scheduler::QueueKind::kShared;
  // An engine hint chose the processor. (Without a GPU engine every query waits pinned to the CPU
  // queue; only hinted ones count as pinned here.)
  bool pinned = false;
  scheduler::TakeReason reason = scheduler::TakeReason::kShortest;
};

// Where one worker's time went between two reports (one report per query or batch of expired
// queries): running the engine, answering (building the response and completing the call through
// on_done), waiting for the scheduler (lock: for its lock or for a round to serve the worker's
// request), scheduling (the rest: rounds run for itself and other workers, cost-model updates,
// hooks) and idle (parked: nothing to take). They add up to the worker's wall time.
struct WorkerTime {
  absl::Duration engine = absl::ZeroDuration();
  absl::Duration answer = absl::ZeroDuration();
  absl::Duration lock = absl::ZeroDuration();
  absl::Duration scheduling = absl::ZeroDuration();
  absl::Duration idle = absl::ZeroDuration();
};

// What the executor reports for metrics. Every hook may be null. Hooks marked "ordered" run under
// the executor's lock so their reports arrive in order: they must be cheap and must never call back
// into the executor. All run on executor threads, or on the submitting thread from Submit.
struct HybridExecutorHooks {
  using Processor = scheduler::Processor;
  // Ordered: jobs admitted and not yet all started (the admission queue's depth), reported when
  // the scheduler routes or takes work (a job admitted while every worker is busy waits in an
  // inbox until a worker comes back for more, and is counted from then).
  std::function<void(size_t jobs)> on_queue_depth = nullptr;
  // Ordered: queries waiting in each of the three queues.
  std::function<void(scheduler::QueueKind queue, size_t queries)> on_scheduler_queue_depth =
      nullptr;
  // Ordered: the cost-ratio thresholds after the load shift (scheduler::WorkQueues::thresholds):
  // a query whose ratio is at or below `cpu` joins the CPU queue, at or above `gpu` the GPU queue.
  std::function<void(double cpu, double gpu)> on_thresholds = nullptr;
  // Ordered: workers of `p` running a query now.
  std::function<void(Processor p, size_t busy)> on_busy_workers = nullptr;
  // A worker took a query.
  std::function<void(const SchedulerDecision& decision)> on_decision = nullptr;
  // A query answered by the engine it was routed to, with its prediction (for the ratio histogram).
  std::function<void(Processor p, double predicted_ms, double measured_ms)> on_measured = nullptr;
  // A worker of `p` spent `busy` on one query (utilization).
  std::function<void(Processor p, absl::Duration busy)> on_busy_time = nullptr;
  // A worker of `p` reports where its time went since its last report.
  std::function<void(Processor p, const WorkerTime& time)> on_worker_time = nullptr;
  // A query answered after its scheduling deadline, or dropped in the queue at its call deadline
  // (cancelled ones excepted).
  std::function<void()> on_deadline_miss = nullptr;
};

class HybridQueryExecutor final : public QueryExecutor {
 public:
  struct Options {
    size_t cpu_threads = 1;
    // Queries in flight on the GPU at once (one worker thread each); unused without a GPU engine.
    size_t gpu_threads = 4;
    // Threads that answer the queries the GPU workers ran (build the response and complete the
    // call through on_done), so that a GPU worker goes back to the device at once instead of
    // writing the response to the network itself; 0: GPU workers answer their own queries.
    size_t answer_threads = 0;
    // CPU workers hand their answers to the answer threads too (when there are any). The answer
    // costs the same CPU time on either thread, but completing a call takes gRPC's locks on the
    // connection (shared with every other call on it), and a CPU worker running at a lowered
    // priority (cpu_worker_priority) can be preempted while it holds them.
    bool answer_cpu_queries = false;
    // The CPU workers' priority below the thread that creates the executor (cpu/thread_priority.h:
    // nice levels, or SCHED_IDLE), so that on a busy machine the threads that keep the GPU fed
    // and the calls moving (GPU workers, answer threads, gRPC's threads) get the cores first. On
    // the H100 machine, CPU workers at the server's priority had slowed the GPU workers, which
    // wait for the CUDA driver's launch lock, by half (bench/results/hybrid_probe_h100.txt).
    base::ThreadPriority cpu_worker_priority = {};
    // The CPUs each kind of worker may run on (cpu/thread_affinity.h); empty: wherever the process
    // may. Disjoint sets keep CPU query workers off the cores of the GPU workers, which hold the
    // CUDA driver's launch lock while they launch: a GPU worker preempted there stalls the others.
    std::vector<int> cpu_worker_cpus = {};
    std::vector<int> gpu_worker_cpus = {};
    // Queries running at once on both processors together; 0: no limit beyond the workers. 1 is
    // the paper's "CPU+GPU serialized" configuration (one query at a time, on the processor the
    // policy picks), the baseline the parallel hybrid is measured against.
    size_t max_running = 0;
    // Jobs waiting for a worker (running ones not counted).
    size_t queue_capacity = 4;
    // Scheduling deadline of a query whose call deadline is later (see above); may be infinite.
    absl::Duration default_deadline = absl::Milliseconds(500);
    scheduler::WorkQueues::Policy policy = {};
    // Predicts costs and learns from measured ones; required with a GPU engine. Must outlive the
    // executor.
    scheduler::CostPredictor* predictor = nullptr;
    // Testing only: as PoolQueryExecutor::Options::debug_query_delay.
    absl::Duration debug_query_delay = absl::ZeroDuration();
    HybridExecutorHooks hooks = {};
  };

  // `cpu` must be non-null; `gpu` may be null. Engines and predictor must outlive the executor.
  static absl::StatusOr<std::unique_ptr<HybridQueryExecutor>> Create(const index::Engine* cpu,
                                                                     const index::Engine* gpu,
                                                                     Options options);
  ~HybridQueryExecutor() override;

  absl::Status Submit(QueryJob job) override;
  size_t queue_depth() const override;
  std::vector<std::string> engines() const override;
  void Shutdown() override;

 private:
  struct PendingJob {
    QueryJob job;
    absl::Time submitted;
    absl::Time schedule_deadline;  // earlier of job.deadline and submitted + default_deadline
    size_t unstarted = 0;          // guarded by mu_ (set when it leaves the inbox)
  };
  struct TaskRef {
    std::shared_ptr<PendingJob> job;
    size_t task = 0;
  };
  // What a worker does next: run `ready` (taken from the queues), answer `expired` without running
  // them, or, with neither, exit.
  struct Work {
    std::vector<std::pair<TaskRef, scheduler::Dequeued>> expired;
    std::optional<std::pair<TaskRef, scheduler::Dequeued>> ready;
  };

  // A worker's mailbox for combining. The owner publishes a request (kRequest, with the query it
  // finished); a round serves it (kServed, with the work) or parks it (kParked: nothing to take
  // until the queues change or wake_by). The owner reads the state without the slot's mutex while
  // it spins; every change is made under it, so a sleeping owner is always signalled.
  enum class SlotState { kRunning, kRequest, kParked, kServed };
  struct alignas(64) WorkerSlot {
    explicit WorkerSlot(scheduler::Processor p) : processor(p) {}
    const scheduler::Processor processor;
    absl::Mutex mu;  // taken after the executor's mu_, never before
    absl::CondVar changed;
    std::atomic<SlotState> state{SlotState::kRunning};   // written under mu
    std::optional<double> finished ABSL_GUARDED_BY(mu);  // with kRequest: its predicted ms
    Work work ABSL_GUARDED_BY(mu);                       // with kServed
    // With kParked: when to ask for a round by itself (the timekeeper: the earliest expiry;
    // others: never).
    absl::Time wake_by ABSL_GUARDED_BY(mu) = absl::InfiniteFuture();
    bool sleeping ABSL_GUARDED_BY(mu) = false;
    // A thread that ran its share of rounds asks this worker to run the next one. Set under mu
    // (so a sleeping owner is signalled), read without it while the owner spins.
    std::atomic<bool> poked{false};
  };

  HybridQueryExecutor(const index::Engine* cpu, const index::Engine* gpu, Options options);
  void WorkerLoop(WorkerSlot& slot);
  // A job admitted by Submit and not yet in the queues.
  struct Staged {
    std::shared_ptr<PendingJob> job;
    std::vector<scheduler::WorkItem> items;  // ids not yet assigned
  };
  // Publishes the worker's request (`finished`: the predicted ms of the query it ran last) and
  // waits until a round serves it; adds the time spent parked to `idle` and waiting for a round to
  // `lock_wait`. Work with neither a query nor expired ones means exit.
  Work NextWork(WorkerSlot& slot, std::optional<double> finished, absl::Duration& idle,
                absl::Duration& lock_wait);
  // Which processors (by Index) might take one of `items` (Submit, without mu_): the one whose
  // queue each would join by the last thresholds, both within a factor of them or for the shared
  // queue.
  std::array<bool, 2> MayTake(const std::vector<scheduler::WorkItem>& items) const;
  // One round (see "Threads and the lock"); returns whether it parked a worker that had asked.
  bool Combine() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tries the lock and runs rounds while requests are waiting (after the caller released mu_, or
  // instead of taking it), a few at most before it hands the next round to a waiting worker.
  // `parked`: the caller's last round parked a worker that had asked, so a job staged meanwhile
  // needs a round.
  void CombinePending(bool parked);
  // Pokes one waiting worker to run the next round: one that asked (a GPU worker's first: they
  // run at the server's priority), else a parked one. Returns false when every worker is busy.
  bool HandOverNextRound();
  // Moves the staged jobs into the queues; returns whether there were any.
  bool DrainInbox() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TaskRef Detach(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores `t` (queues_.thresholds()) for Submit's guess of where a job goes (MayTake).
  void PublishThresholds(const scheduler::WorkQueues::Thresholds& t)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReportDepths() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Both add their engine and answer times to `time`.
  void Run(scheduler::Processor p, const TaskRef& ref, const scheduler::Dequeued& taken,
           WorkerTime& time);
  void AnswerExpired(const TaskRef& ref, const scheduler::Dequeued& expired, WorkerTime& time);
  void Finish(const TaskRef& ref, QueryOutcome outcome);
  void AnswerLoop();
  static int Index(scheduler::Processor p) { return p == scheduler::Processor::kCpu ? 0 : 1; }

  const index::Engine* const cpu_;
  const index::Engine* const gpu_;
  const Options options_;
  mutable absl::Mutex mu_;
  scheduler::WorkQueues queues_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, TaskRef> tasks_ ABSL_GUARDED_BY(mu_);  // queued, by WorkItem id
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  // Jobs admitted and not yet all started (the admission queue's depth).
  std::atomic<size_t> waiting_jobs_{0};
  // One slot per worker, CPU workers' first; created before the threads and never resized.
  std::vector<std::unique_ptr<WorkerSlot>> slots_;
  size_t next_slot_ ABSL_GUARDED_BY(mu_) = 0;  // where a round starts serving, for fairness
  // The parked worker that wakes by itself at the earliest expiry (see Combine); null: none.
  WorkerSlot* timekeeper_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Published requests not yet served, and parked workers by processor (Submit starts a round only
  // when one of a processor that may take the job is parked).
  std::atomic<size_t> requests_{0};
  std::atomic<size_t> parked_[2] = {0, 0};
  // A Submit asked for a round while the lock was held: the holder runs one after releasing it.
  std::atomic<bool> round_wanted_{false};
  // When the timekeeper wakes by itself, as Unix nanoseconds (INT64_MAX: none), for Submit: a job
  // that expires sooner needs a round to hand it to a parked worker to answer at its deadline.
  std::atomic<int64_t> earliest_self_wakeup_ns_{INT64_MAX};
  // queues_.thresholds() as of the last round, for Submit's guess of where a job goes.
  std::atomic<double> routed_cpu_threshold_{0};
  std::atomic<double> routed_gpu_threshold_{0};
  size_t busy_[2] ABSL_GUARDED_BY(mu_) = {0, 0};
  size_t reported_depth_[3] ABSL_GUARDED_BY(mu_) = {0, 0, 0};  // by QueueKind
  scheduler::WorkQueues::Thresholds reported_thresholds_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Jobs admitted by Submit, moved into queues_ by the next round; inbox_size_ mirrors the size of
  // inbox_ for the check, after a round parked a worker, that no job was staged meanwhile.
  absl::Mutex inbox_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::vector<Staged> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  std::atomic<size_t> inbox_size_{0};
  bool inbox_closed_ ABSL_GUARDED_BY(inbox_mu_) = false;  // Shutdown: no more jobs
  std::vector<std::thread> workers_;
  // Answers handed from GPU workers to the answer threads (Options::answer_threads).
  absl::Mutex answer_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::deque<std::pair<TaskRef, QueryOutcome>> answers_ ABSL_GUARDED_BY(answer_mu_);
  bool answers_closed_ ABSL_GUARDED_BY(answer_mu_) = false;  // no more answers will come
  std::vector<std::thread> answerers_;
  absl::Mutex join_mu_;  // serializes Shutdown callers
};

}  // namespace tandem::scheduler
