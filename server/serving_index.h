// File: serving_index.h
//
// One index and everything that answers its queries: the engines (and their device caches), the
// executor with its workers and cost model, and the query target the dispatcher admits calls to.
// A node serves one at a time and switches to a new one whole (Server::LoadIndex): the new one is
// opened beside the old, its device caches warmed with the old one's hottest lists, and the
// dispatcher's target switched; the old one is destroyed when the last call admitted to it is
// answered.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<ServingIndex> serving,
//                           ServingIndex::Open(dir, options, /*generation=*/1));
//   TANDEM_RETURN_IF_ERROR(serving->StartExecutor(options.scheduler, registry, metrics));
//   dispatcher.SwitchTarget(...serving->target()...);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "index/index.h"
#include "live/live_index.h"
#include "prometheus/registry.h"
#include "server/engine_factory.h"
#include "server/executor_factory.h"
#include "server/query_dispatcher.h"
#include "server/query_metrics.h"

namespace tandem::server {

struct ServerOptions;

struct ServingIndexOptions {
  // Another index stays on the devices meanwhile: each GPU cache takes at most its share of the
  // device memory free now (EngineOptions::gpu_cache_within_free).
  bool beside_another = false;
};

class ServingIndex {
 public:
  // Opens and checks the index at `dir` and creates its engines (options.engines, with a GPU
  // context per GPU worker). Errors name what failed: "cannot open index: ...", "cannot create
  // engines: ...".
  static absl::StatusOr<std::unique_ptr<ServingIndex>> Open(const std::string& dir,
                                                            const ServerOptions& options,
                                                            uint64_t generation,
                                                            ServingIndexOptions open = {});
  // Shuts the executor down (each admitted query is answered) before the engines and the index go.
  ~ServingIndex();

  // Creates the executor and the query target, whose filter cache takes `filter_cache`.
  // `registry`, `metrics` and the cache's breaker account must outlive this object.
  absl::Status StartExecutor(const SchedulerOptions& options, prometheus::Registry& registry,
                             QueryMetrics& metrics, filter::FilterCacheOptions filter_cache = {});

  const index::Index& index() const { return *index_; }
  const EngineSet& engines() const { return engines_; }
  const ExecutorSet& executors() const { return executors_; }
  scheduler::QueryExecutor& executor() const { return *executors_.executor; }
  QueryTarget& target() { return *target_; }
  // The live index that takes the node's writes, or why the node takes none (a read-only node, a
  // shard): FAILED_PRECONDITION with the reason.
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live() const;
  // 1 for the index a node starts with, one more for each index it loads after.
  uint64_t generation() const { return generation_; }

 private:
  ServingIndex() = default;
  // Opens the live index at `dir` over index_, unless the node takes no writes (writes_refused_).
  absl::Status OpenLive(const std::string& dir, const ServerOptions& options);

  // Declared in the order they are built; destroyed in reverse, the executor first.
  std::unique_ptr<index::Index> index_;
  // With a GPU and writes, the GPU engine created for index_: segment "." of the live index, whose
  // engines_.gpu is then the live device engine (live::LiveEngine) over every segment.
  std::unique_ptr<index::Engine> opened_gpu_;
  std::shared_ptr<live::LiveIndex> live_;  // null when the node takes no writes
  std::string writes_refused_;             // why, then
  EngineSet engines_;
  ExecutorSet executors_;
  std::unique_ptr<QueryTarget> target_;
  uint64_t generation_ = 0;
};

// The thread that creates and destroys a node's serving indexes. Creating them here gives a new
// index's query workers this thread's priority, that of the node's first workers (it starts before
// the node lowers the priority of its RPC threads, which ask for loads). Destroying them here is
// needed: the last call admitted to an old index is answered on one of that index's executor
// threads, which cannot join its own executor.
class IndexLifecycle {
 public:
  // `on_released(generation, directory)` runs on the thread after each destruction.
  explicit IndexLifecycle(std::function<void(uint64_t, const std::string&)> on_released);
  // Destroys what is handed over before it returns (an index whose last owner lets go later is
  // destroyed by that owner, without on_released).
  ~IndexLifecycle();

  // Runs `task` on the thread and returns its status when it is done.
  absl::Status Run(const std::function<absl::Status()>& task);
  // Shared ownership of `serving`: when the last owner lets go, the thread destroys it.
  std::shared_ptr<ServingIndex> Own(std::unique_ptr<ServingIndex> serving);
  // Indexes handed over and not yet destroyed (the serving one included).
  size_t pending() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

// Whether host memory holds a new index of `dir` beside the serving one: the new index's files
// must fit in MemAvailable (/proc/meminfo) less the serving index's mapped files, which stay in use
// until its last query ends. RESOURCE_EXHAUSTED says how much is needed and available; OK where
// the kernel does not say (no /proc).
absl::Status CheckHostRoomFor(const std::string& dir, const index::Index& serving);

// FAILED_PRECONDITION when `dir` is the directory `serving` serves (the same file, however named)
// and writes have reached it: its live index holds the directory's write-ahead log, and the
// serving index already is everything the directory holds; there is nothing to reload.
absl::Status CheckWritesAllowLoad(const std::string& dir, const ServingIndex& serving);

}  // namespace tandem::server
