#include "cost_model/cost_model.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/thread_name.h"
#include "base/thread_priority.h"
#include "cost_model/cost_training.h"

namespace tandem::cost_model {
namespace {

// CostModel::id_: tells the models apart in the threads' rules caches (an address may be reused).
uint64_t NextModelId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

constexpr Processor kProcessors[] = {Processor::kCpu, Processor::kGpu};
constexpr size_t kHoldOut = 5;  // one sample in five validates a refinement
int Slot(Processor p) { return p == Processor::kCpu ? 0 : 1; }

}  // namespace

// The features Predict computed, by query, for Observe: a direct-mapped table (a later query with
// the same slot replaces an earlier one; a miss only means recomputing the features). Every
// submitted query puts and every answered one gets, from many threads: one mutex per 16 slots.
class CostModel::FeatureMemo {
 public:
  static uint64_t Key(const index::Query& query) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(query.mode) << 32) ^ query.k;
    for (const index::QueryTerm& t : query.terms) {
      h = (h ^ std::hash<std::string>()(t.term)) * 0x100000001b3ull;
    }
    return h | 1;  // 0 marks an empty slot
  }
  void Put(uint64_t key, const QueryFeatures& f) {
    const size_t slot = key % kSlots;
    std::lock_guard<std::mutex> lock(mu_[slot / kSlotsPerLock]);
    slots_[slot] = {key, f};
  }
  bool Get(uint64_t key, QueryFeatures* f) const {
    const size_t slot = key % kSlots;
    std::lock_guard<std::mutex> lock(mu_[slot / kSlotsPerLock]);
    const Entry& e = slots_[slot];
    if (e.key != key) return false;
    *f = e.features;
    return true;
  }

 private:
  static constexpr size_t kSlots = 1024;
  static constexpr size_t kSlotsPerLock = 16;
  struct Entry {
    uint64_t key = 0;
    QueryFeatures features;
  };
  mutable std::mutex mu_[kSlots / kSlotsPerLock];
  std::array<Entry, kSlots> slots_;
};

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::Load(const std::string& path,
                                                           CostModelOptions options) {
  absl::StatusOr<CostModelFile> file = ReadCostModelFile(path);
  if (!file.ok()) return file.status();
  return FromFile(*std::move(file), std::move(options), path);
}

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::Heuristic(CostModelOptions options) {
  return FromFile(CostModelFile{}, std::move(options), "");
}

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::FromFile(CostModelFile file,
                                                               CostModelOptions options,
                                                               std::string origin) {
  if (options.index == nullptr) return absl::InvalidArgumentError("cost model needs an index");
  if (options.refine_min_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the cost model's refine interval must not be negative");
  }
  return std::unique_ptr<CostModel>(
      new CostModel(std::move(file), std::move(options), std::move(origin)));
}

CostModel::CostModel(CostModelFile file, CostModelOptions options, std::string origin)
    : options_(std::move(options)),
      origin_(std::move(origin)),
      file_(std::move(file)),
      memo_(std::make_unique<FeatureMemo>()),
      id_(NextModelId()) {
  for (Processor p : kProcessors) {
    rules_[Slot(p)] = std::move(file_.engine(p).rules);
    live_[Slot(p)].samples.reserve(options_.live_samples);
    live_[Slot(p)].errors.reserve(options_.live_samples);
  }
  if (options_.refine_every > 0 && options_.live_samples > 0) {
    refiner_ = std::thread([this] { RefineLoop(); });
  }
}

CostModel::~CostModel() {
  {
    std::lock_guard<std::mutex> lock(samples_mu_);
    stopping_ = true;
  }
  refine_cv_.notify_all();
  if (refiner_.joinable()) refiner_.join();
}

std::shared_ptr<const M5Rules> CostModel::rules(Processor p) const {
  std::lock_guard<std::mutex> lock(models_mu_);
  return rules_[Slot(p)];
}

QueryFeatures CostModel::Features(const index::PreparedQuery& query) const {
  return ComputeFeatures(query, options_.resident_fraction);
}

CostEstimate CostModel::PredictFeatures(const QueryFeatures& f) const {
  // This thread's copy of the rules (see rules_generation_); refreshed after a retraining.
  struct RulesCache {
    uint64_t model = 0;
    uint64_t generation = 0;
    std::shared_ptr<const M5Rules> rules[2];
  };
  thread_local RulesCache cache;
  if (cache.model != id_ || cache.generation != rules_generation_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(models_mu_);
    cache.model = id_;
    cache.generation = rules_generation_.load(std::memory_order_relaxed);
    cache.rules[0] = rules_[0];
    cache.rules[1] = rules_[1];
  }
  const M5Rules* cpu = cache.rules[0].get();
  const M5Rules* gpu = cache.rules[1].get();
  CostEstimate e;
  e.cpu_ms = cpu ? PredictMs(*cpu, file_.space, f) : HeuristicMs(f, Processor::kCpu);
  e.gpu_ms = gpu ? PredictMs(*gpu, file_.space, f) : HeuristicMs(f, Processor::kGpu);
  return e;
}

CostEstimate CostModel::Predict(const index::PreparedQuery& query) const {
  const QueryFeatures f = Features(query);
  memo_->Put(FeatureMemo::Key(query.query()), f);
  return PredictFeatures(f);
}

void CostModel::Observe(const index::PreparedQuery& query, Processor processor,
                        double measured_ms) {
  QueryFeatures f;
  if (!memo_->Get(FeatureMemo::Key(query.query()), &f)) f = Features(query);
  ObserveFeatures(f, processor, measured_ms);
}

void CostModel::ObserveFeatures(const QueryFeatures& f, Processor processor, double measured_ms) {
  if (!std::isfinite(measured_ms) || measured_ms < 0 || options_.live_samples == 0) return;
  const double predicted = PredictFeatures(f).ms(processor);
  const double error = measured_ms > 0 ? std::fabs(predicted - measured_ms) / measured_ms : 0;
  std::lock_guard<std::mutex> lock(samples_mu_);
  Ring& ring = live_[Slot(processor)];
  if (ring.samples.size() < options_.live_samples) {
    ring.samples.push_back({f, measured_ms});
    ring.errors.push_back(error);
  } else {
    ring.error_sum -= ring.errors[ring.next];
    ring.samples[ring.next] = {f, measured_ms};
    ring.errors[ring.next] = error;
  }
  ring.error_sum += error;
  ring.next = (ring.next + 1) % options_.live_samples;
  ring.fresh = true;
  if (options_.refine_every > 0 && ++since_refine_ >= options_.refine_every && !refine_requested_) {
    const absl::Time now = absl::Now();
    if (now - last_refine_ < options_.refine_min_interval) return;
    last_refine_ = now;
    refine_requested_ = true;
    since_refine_ = 0;
    refine_cv_.notify_one();
  }
}

void CostModel::RefineLoop() {
  base::NameThread("tandem-refine");
  // A retraining takes a core for a second or more and can wait: below the threads that feed the
  // GPU and answer calls, level with the hybrid scheduler's CPU workers (+10 by default). Where the
  // system refuses, it runs at the server's priority.
  (void)base::LowerThreadPriority(10);
  std::unique_lock<std::mutex> lock(samples_mu_);
  while (true) {
    refine_cv_.wait(lock, [this] { return stopping_ || refine_requested_; });
    if (stopping_) break;
    std::vector<CostSample> live[2];
    for (Processor p : kProcessors) {
      Ring& ring = live_[Slot(p)];
      if (!ring.fresh) continue;
      ring.fresh = false;
      live[Slot(p)] = ring.samples;
    }
    lock.unlock();
    bool retrained = false;
    for (Processor p : kProcessors) {
      if (live[Slot(p)].empty()) continue;
      std::vector<CostSample> samples = file_.engine(p).samples;  // read-only after construction
      samples.insert(samples.end(), live[Slot(p)].begin(), live[Slot(p)].end());
      if (samples.size() < options_.min_train_samples) continue;
      // Every kHoldOut-th sample is held out: the new rules, trained on the others, replace the
      // ones in use only when they predict the held-out samples at least as well. Live timings
      // come only from the queries the scheduler sent to this processor, and under load; a model
      // refitted to them alone routed worse on the H100 machine: it priced the CPU's queries at
      // twice their cost at 16,000 q/s, and the hybrid failed a rate it passed without refinement.
      std::vector<CostSample> train, held_out;
      for (size_t i = 0; i < samples.size(); ++i) {
        (i % kHoldOut == kHoldOut - 1 ? held_out : train).push_back(samples[i]);
      }
      absl::StatusOr<M5Rules> rules = TrainCostRules(train, file_.space, options_.m5);
      if (!rules.ok()) continue;  // the samples were checked on the way in; keep the old rules
      const std::shared_ptr<const M5Rules> current = this->rules(p);
      const double new_error = MeanRelativeError(*rules, file_.space, held_out);
      const double current_error =
          current ? MeanRelativeError(*current, file_.space, held_out)
                  : MeanRelativeError([&](const QueryFeatures& f) { return HeuristicMs(f, p); },
                                      held_out);
      if (new_error > current_error) {
        std::lock_guard<std::mutex> samples_lock(samples_mu_);
        ++rejected_refinements_;
        continue;
      }
      auto fresh = std::make_shared<const M5Rules>(*std::move(rules));
      std::lock_guard<std::mutex> models_lock(models_mu_);
      rules_[Slot(p)] = std::move(fresh);
      rules_generation_.fetch_add(1, std::memory_order_release);
      retrained = true;
    }
    lock.lock();
    refine_requested_ = false;
    if (retrained) ++refinements_;
    idle_cv_.notify_all();
  }
}

void CostModel::WaitForRefinement() const {
  std::unique_lock<std::mutex> lock(samples_mu_);
  idle_cv_.wait(lock, [this] { return !refine_requested_ || stopping_; });
}

bool CostModel::has_model(Processor processor) const { return rules(processor) != nullptr; }

double CostModel::mean_relative_error(Processor processor) const {
  const double e = file_.engine(processor).mean_relative_error;
  return e >= 0 ? e : std::numeric_limits<double>::quiet_NaN();
}

double CostModel::live_relative_error(Processor processor) const {
  std::lock_guard<std::mutex> lock(samples_mu_);
  const Ring& ring = live_[Slot(processor)];
  if (ring.errors.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::max(0.0, ring.error_sum) / static_cast<double>(ring.errors.size());
}

size_t CostModel::refinements() const {
  std::lock_guard<std::mutex> lock(samples_mu_);
  return refinements_;
}

size_t CostModel::rejected_refinements() const {
  std::lock_guard<std::mutex> lock(samples_mu_);
  return rejected_refinements_;
}

std::string CostModel::description() const {
  std::vector<std::string> engines;
  bool any_model = false, any_heuristic = false;
  for (Processor p : kProcessors) {
    std::shared_ptr<const M5Rules> r = rules(p);
    if (!r) {
      any_heuristic = true;
      engines.push_back(absl::StrCat(ProcessorName(p), " heuristic"));
      continue;
    }
    any_model = true;
    const double e = mean_relative_error(p);
    engines.push_back(absl::StrCat(ProcessorName(p), " ", r->rules().size(), " rules",
                                   std::isnan(e)
                                       ? std::string(" (not evaluated)")
                                       : absl::StrFormat(" (evaluation error %.1f%%)", 100 * e)));
  }
  std::string out = "cost model: ";
  if (any_model) {
    absl::StrAppend(&out, "M5 rules (", FeatureSpaceName(file_.space), " space)");
    if (!origin_.empty()) absl::StrAppend(&out, " from ", origin_);
    const std::string machine = file_.meta("machine"), date = file_.meta("date");
    if (!machine.empty() || !date.empty()) {
      absl::StrAppend(&out, ", trained on ", machine.empty() ? "?" : machine, " at ",
                      date.empty() ? "?" : date);
    }
    absl::StrAppend(&out, "; ");
  }
  absl::StrAppend(&out, absl::StrJoin(engines, ", "));
  const size_t refined = refinements();
  if (refined > 0) absl::StrAppend(&out, "; refined ", refined, " times from live timings");
  if (const size_t rejected = rejected_refinements(); rejected > 0) {
    absl::StrAppend(&out, "; ", rejected, " refinements rejected (worse on held-out samples)");
  }
  if (any_heuristic) absl::StrAppend(&out, "; ", HeuristicDescription());
  return out;
}

CostModelFile CostModel::Snapshot() const {
  CostModelFile out;
  out.space = file_.space;
  out.metadata = file_.metadata;
  out.metadata.emplace_back("refinements", absl::StrCat(refinements()));
  for (Processor p : kProcessors) {
    const EngineCostRecord& from = file_.engine(p);
    EngineCostRecord& to = out.engine(p);
    to.trained_samples = from.trained_samples;
    to.evaluated_samples = from.evaluated_samples;
    to.mean_relative_error = from.mean_relative_error;
    to.heuristic_relative_error = from.heuristic_relative_error;
    to.rules = rules(p);
    std::vector<CostSample> all = from.samples;
    {
      std::lock_guard<std::mutex> lock(samples_mu_);
      const Ring& ring = live_[Slot(p)];
      all.insert(all.end(), ring.samples.begin(), ring.samples.end());
    }
    to.samples = ThinSamples(all, kMaxFileSamples);
  }
  return out;
}

}  // namespace tandem::cost_model
