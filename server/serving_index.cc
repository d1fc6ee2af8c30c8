#include "server/serving_index.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "filter/filter.h"
#include "live/live_engine.h"
#include "server/server.h"

namespace tandem::server {
namespace {

// MemAvailable from /proc/meminfo, in bytes; nullopt where it cannot be read.
std::optional<uint64_t> MemAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "MemAvailable:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    uint64_t kb = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kb)) return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

uint64_t MiB(uint64_t bytes) { return bytes >> 20; }

}  // namespace

absl::StatusOr<std::unique_ptr<ServingIndex>> ServingIndex::Open(const std::string& dir,
                                                                 const ServerOptions& options,
                                                                 uint64_t generation,
                                                                 ServingIndexOptions open) {
  std::unique_ptr<ServingIndex> serving(new ServingIndex());
  serving->generation_ = generation;
  absl::StatusOr<std::unique_ptr<index::Index>> index = index::Index::Open(dir);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        absl::StrCat("cannot open index: ", index.status().message()));
  }
  serving->index_ = *std::move(index);
  EngineOptions engine_options = options.engines;
  engine_options.gpu_cache_within_free = open.beside_another;
  // A context per GPU worker, or with the batch path (where workers wait in the batch buffer) per
  // query that runs alone, up to 4: each holds scratch for an OR over every document.
  // With several GPUs, each gets its share of the GPU workers.
  const size_t gpus = ResolveGpuDevices(options.engines.gpu_devices).size();
  const size_t gpu_threads = (options.scheduler.executor.gpu_threads + gpus - 1) / gpus;
  engine_options.gpu_contexts = static_cast<int>(std::min<size_t>(
      options.engines.gpu_batch ? std::min<size_t>(gpu_threads, 4) : gpu_threads, INT32_MAX));
  absl::StatusOr<EngineSet> engines = CreateEngines(*serving->index_, engine_options);
  if (!engines.ok()) {
    return absl::Status(engines.status().code(),
                        absl::StrCat("cannot create engines: ", engines.status().message()));
  }
  serving->engines_ = *std::move(engines);
  TANDEM_RETURN_IF_ERROR(serving->OpenLive(dir, options));
  return serving;
}

absl::Status ServingIndex::OpenLive(const std::string& dir, const ServerOptions& options) {
  if (options.read_only) {
    writes_refused_ = "this node is read-only (--read-only): it takes no writes";
    return absl::OkStatus();
  }
  if (index_->shard() != nullptr) {
    writes_refused_ =
        "this index is a shard cut by tandem-index shard: it scores with its collection's "
        "statistics, which writes to one shard would change; write to an unsharded index";
    return absl::OkStatus();
  }
  live::LiveIndexOptions live;
  if (engines_.gpu != nullptr) {
    opened_gpu_ = std::move(engines_.gpu);
    live.device = {.create = engines_.segment_engine,
                   .min_docs = options.live_gpu_min_docs,
                   .opened = opened_gpu_.get()};
  }
  live.engine = options.engines.cpu;
  // Segment "." is the index just opened; the serving index outlives its live index.
  live.opened = std::shared_ptr<const index::Index>(index_.get(), [](const index::Index*) {});
  live.refresh_interval = options.refresh_interval;
  live.sync_writes = options.sync_writes;
  absl::StatusOr<std::unique_ptr<live::LiveIndex>> opened = live::LiveIndex::Open(dir, live);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("cannot open the live index: ", opened.status().message()));
  }
  live_ = *std::move(opened);
  // Queries then run on the live index's snapshot of the moment.
  engines_.cpu = std::make_unique<live::LiveEngine>(live_, *index_);
  if (opened_gpu_ != nullptr) {
    engines_.gpu =
        std::make_unique<live::LiveEngine>(live_, *index_, live::LiveEngine::Where::kDevice);
  }
  return absl::OkStatus();
}

absl::Status CheckWritesAllowLoad(const std::string& dir, const ServingIndex& serving) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = serving.live();
  if (!live.ok() || !(*live)->stats().log_open) return absl::OkStatus();
  std::error_code ec;
  if (!std::filesystem::equivalent(dir, serving.index().directory(), ec)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the node serves '", dir,
      "' and has taken writes into it: the index it serves is "
      "everything the directory holds, so there is nothing to reload (Flush makes it durable)"));
}

absl::StatusOr<std::shared_ptr<live::LiveIndex>> ServingIndex::live() const {
  if (live_ == nullptr) return absl::FailedPreconditionError(writes_refused_);
  return live_;
}

ServingIndex::~ServingIndex() {
  if (executors_.executor != nullptr) executors_.executor->Shutdown();
}

absl::Status ServingIndex::StartExecutor(const SchedulerOptions& options,
                                         prometheus::Registry& registry, QueryMetrics& metrics,
                                         filter::FilterCacheOptions filter_cache) {
  TANDEM_ASSIGN_OR_RETURN(executors_,
                          CreateExecutor(options, *index_, engines_, registry, metrics));
  filter::FilterEvaluator filters = engines_.filters;
  if (live_ != nullptr && index_->attributes() != nullptr) {
    // Once the index took writes, the opened index is one segment of several: a value it lacks
    // may be in another, and the live engine evaluates the filter per segment (and refuses a
    // value none holds). Until then the filter is evaluated as on any index.
    filters = [live = live_.get(), attributes = index_->attributes(),
               evaluate = engines_.filters](const filter::FilterNode& node) {
      if (!live->snapshot()->as_built()) return filter::EvaluateFilterOnPart(node, *attributes);
      return evaluate != nullptr ? evaluate(node) : filter::EvaluateFilter(node, *attributes);
    };
  }
  target_ = std::make_unique<QueryTarget>(*index_, *executors_.executor, std::move(filters),
                                          filter_cache);
  target_->generation = generation_;
  target_->live = live_.get();
  return absl::OkStatus();
}

struct IndexLifecycle::State {
  absl::Mutex mu;
  std::deque<std::function<void()>> queue ABSL_GUARDED_BY(mu);
  size_t owned ABSL_GUARDED_BY(mu) = 0;  // handed over by Own, not yet destroyed
  bool stopped ABSL_GUARDED_BY(mu) = false;
  std::function<void(uint64_t, const std::string&)> on_released;
};

IndexLifecycle::IndexLifecycle(std::function<void(uint64_t, const std::string&)> on_released)
    : state_(std::make_shared<State>()) {
  state_->on_released = std::move(on_released);
  thread_ = std::thread([state = state_] {
    base::NameThread("tandem-indexes");
    while (true) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&state->mu);
        state->mu.Await(absl::Condition(
            +[](State* s)
                 ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->stopped || !s->queue.empty(); },
            state.get()));
        if (state->queue.empty()) return;  // stopped, nothing left
        task = std::move(state->queue.front());
        state->queue.pop_front();
      }
      task();
    }
  });
}

IndexLifecycle::~IndexLifecycle() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopped = true;
  }
  thread_.join();
}

absl::Status IndexLifecycle::Run(const std::function<absl::Status()>& task) {
  absl::Status status;
  absl::Notification done;
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->stopped) return absl::UnavailableError("the node is stopping");
    state_->queue.push_back([&] {
      status = task();
      done.Notify();
    });
  }
  done.WaitForNotification();
  return status;
}

std::shared_ptr<ServingIndex> IndexLifecycle::Own(std::unique_ptr<ServingIndex> serving) {
  {
    absl::MutexLock lock(&state_->mu);
    ++state_->owned;
  }
  return std::shared_ptr<ServingIndex>(serving.release(), [state = state_](ServingIndex* s) {
    auto destroy = [state, s] {
      const uint64_t generation = s->generation();
      const std::string dir = s->index().directory();
      delete s;
      {
        absl::MutexLock lock(&state->mu);
        --state->owned;
      }
      if (state->on_released) state->on_released(generation, dir);
    };
    {
      absl::MutexLock lock(&state->mu);
      if (!state->stopped) {
        state->queue.push_back(std::move(destroy));
        return;
      }
    }
    destroy();  // the thread is gone: on this one
  });
}

size_t IndexLifecycle::pending() const {
  absl::MutexLock lock(&state_->mu);
  return state_->owned;
}

absl::Status CheckHostRoomFor(const std::string& dir, const index::Index& serving) {
  std::error_code error;
  uint64_t needed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::error_code size_error;
    if (entry.is_regular_file(size_error)) needed += entry.file_size(size_error);
  }
  // An unreadable directory is Index::Open's to report, with its reason.
  if (error) return absl::OkStatus();
  const std::optional<uint64_t> available = MemAvailableBytes();
  if (!available.has_value()) return absl::OkStatus();
  // Mapped files count as available (the kernel may drop their pages), yet the serving index
  // reads its own until its last query ends.
  const uint64_t in_use =
      serving.postings_memory() == index::FileMemory::kMapped ? serving.index_bytes() : 0;
  const uint64_t room = *available > in_use ? *available - in_use : 0;
  if (needed > room) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "not enough host memory to open the new index beside the serving one: its files take ",
        MiB(needed), " MiB, ", MiB(room), " MiB are available (MemAvailable ", MiB(*available),
        " MiB less the serving index's ", MiB(in_use), " MiB); restart the node to switch"));
  }
  return absl::OkStatus();
}

}  // namespace tandem::server
