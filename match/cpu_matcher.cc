#include "match/cpu_matcher.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "base/thread_name.h"
#include "match/cpu_matcher_internal.h"

namespace tandem::match {
namespace cpu_matcher_internal {

// Matches one event with one thread's scratch: constraint selection by name and term, then
// evaluation and counting (Margara & Cugola, section 4), with SFF's pruning of matched interfaces
// and its early stop once every interface is matched.
class EventMatch {
 public:
  EventMatch(const Index& index, Scratch& scratch) : index_(index), s_(scratch) {}

  void Run(const Event& event, std::vector<InterfaceId>* out) {
    for (const Attribute& a : event.attributes) {
      if (AllDone()) break;
      auto it = index_.names.find(a.name);
      if (it == index_.names.end()) continue;
      const ValueRef value = a.value.ref();
      if (value.type == ValueType::kString) {
        MatchString(*it->second, value);
      } else {
        MatchNumber(*it->second, value);
      }
    }
    for (const std::string& term : event.terms) {
      if (AllDone()) break;
      if (auto it = index_.terms.find(term); it != index_.terms.end()) HitAll(it->second);
    }
    out->clear();
    for (uint32_t dense : s_.done_list) {
      out->push_back(index_.interface_of[dense]);
      s_.done[dense] = 0;
    }
    std::sort(out->begin(), out->end());
    for (size_t k = 0; k < s_.touched_count; ++k) s_.counts[s_.touched[k]] = 0;
    s_.touched_count = 0;
    s_.done_list.clear();
  }

 private:
  bool AllDone() const { return s_.done_list.size() >= index_.live_interfaces; }

  void Hit(Ref r) {
    const uint32_t iface = r.iface();
    if (s_.done[iface]) return;
    uint8_t& count = s_.counts[r.filter];
    // Recorded without a branch: whether this is the filter's first count is unpredictable.
    s_.touched[s_.touched_count] = r.filter;
    s_.touched_count += count == 0;
    // Each entry counts once per event, so a count never passes 255; a removed filter's entries
    // may complete it, but it has size 0 in the table.
    if (++count == r.size() && index_.filter_size[r.filter] != 0) {
      s_.done[iface] = 1;
      s_.done_list.push_back(iface);
    }
  }
  void HitAll(const Ref* begin, const Ref* end) {
    for (const Ref* r = begin; r != end; ++r) Hit(*r);
  }
  void HitAll(const RefList& refs) { HitAll(refs.data(), refs.data() + refs.size()); }

  // Entries [begin, end) of `row`, each decided by Satisfies, once per distinct value.
  void Check(const NumericRow& row, Op op, size_t begin, size_t end, const ValueRef& attribute) {
    bool holds = false;
    for (size_t k = begin; k < end; ++k) {
      if (k == begin || !row.SameValue(k, k - 1)) holds = Satisfies(op, row.value(k), attribute);
      if (holds) Hit(row.refs[k]);
    }
  }

  void MatchNumber(const NameIndex& name, const ValueRef& attribute) {
    const double x =
        attribute.type == ValueType::kInt ? static_cast<double>(attribute.i) : attribute.d;
    for (int o = 0; o < 6 && !AllDone(); ++o) {
      const NumericRow& row = name.numeric[o];
      const Op op = static_cast<Op>(o);
      const size_t n = row.refs.size();
      if (n == 0) continue;
      if (std::isnan(x)) {  // no order: every constraint by Satisfies (model.cc rejects NaN)
        Check(row, op, 0, n, attribute);
        continue;
      }
      const double* keys = row.keys.data();
      const size_t lo = std::lower_bound(keys, keys + n, x) - keys;
      const size_t hi = std::upper_bound(keys + lo, keys + n, x) - keys;
      // Constraints below x hold for x != v, x > v, x >= v; those above for !=, <, <=.
      if (op == Op::kNe || op == Op::kGt || op == Op::kGe) HitAll(&row.refs[0], &row.refs[0] + lo);
      Check(row, op, lo, hi, attribute);
      if (op == Op::kNe || op == Op::kLt || op == Op::kLe) {
        HitAll(&row.refs[0] + hi, &row.refs[0] + n);
      }
    }
  }

  void MatchString(const NameIndex& name, const ValueRef& attribute) {
    const absl::string_view value(attribute.s, attribute.len);
    if (auto it = name.eq.groups.find(value); it != name.eq.groups.end()) HitAll(it->second);
    for (const auto& [v, refs] : name.ne.groups) {
      if (v != value) HitAll(refs);
    }
    // Prefix: one lookup per prefix length that some constraint has.
    const std::vector<uint32_t>& prefix_lengths = name.prefix.keys_by_length;
    for (size_t len = 0; len < prefix_lengths.size() && len <= value.size(); ++len) {
      if (prefix_lengths[len] == 0) continue;
      auto it = name.prefix.groups.find(value.substr(0, len));
      if (it != name.prefix.groups.end()) HitAll(it->second);
    }
    // Substring: look each window of a needle length up, or test each distinct needle.
    const StringRow& sub = name.substring;
    if (sub.groups.empty() || AllDone()) return;
    size_t windows = 0;
    for (size_t len = 0; len < sub.keys_by_length.size() && len <= value.size(); ++len) {
      if (sub.keys_by_length[len] > 0) windows += value.size() - len + 1;
    }
    if (windows <= sub.groups.size()) {
      s_.found.clear();
      for (size_t len = 0; len < sub.keys_by_length.size() && len <= value.size(); ++len) {
        if (sub.keys_by_length[len] == 0) continue;
        for (size_t start = 0; start + len <= value.size(); ++start) {
          auto it = sub.groups.find(value.substr(start, len));
          if (it != sub.groups.end()) s_.found.push_back(&it->second);
        }
      }
      std::sort(s_.found.begin(), s_.found.end());  // a needle found twice counts once
      s_.found.erase(std::unique(s_.found.begin(), s_.found.end()), s_.found.end());
      for (const RefList* refs : s_.found) HitAll(*refs);
    } else {
      for (const auto& [needle, refs] : sub.groups) {
        const ValueRef c{ValueType::kString, 0, 0, needle.data(),
                         static_cast<uint32_t>(needle.size())};
        if (Satisfies(Op::kSubstring, c, attribute)) HitAll(refs);
      }
    }
  }

  const Index& index_;
  Scratch& s_;
};

// The threads that help the caller match one batch: each runs the batch's loop, which takes the
// next event from a shared counter. A job that a worker picks up after the caller has finished it
// is skipped, so the caller never waits for a worker busy with another batch.
class WorkerPool {
 public:
  explicit WorkerPool(int workers) {
    for (int i = 0; i < workers; ++i) {
      threads_.emplace_back([this] {
        base::NameThread("tandem-match");
        Loop();
      });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Runs `body` on the calling thread and on up to `helpers` workers; returns once every run of
  // it has returned.
  void Run(int helpers, const std::function<void()>& body) {
    auto job = std::make_shared<Job>();
    job->body = &body;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < helpers; ++i) queue_.push_back(job);
    }
    for (int i = 0; i < helpers; ++i) cv_.notify_one();
    body();
    std::unique_lock<std::mutex> lock(job->mu);
    job->closed = true;
    job->cv.wait(lock, [&] { return job->active == 0; });
  }

 private:
  struct Job {
    const std::function<void()>* body = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    int active = 0;
    bool closed = false;
  };

  void Loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      {
        std::lock_guard<std::mutex> lock(job->mu);
        if (job->closed) continue;
        ++job->active;
      }
      (*job->body)();
      {
        std::lock_guard<std::mutex> lock(job->mu);
        --job->active;
      }
      job->cv.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

namespace {

// Removed constraints are purged once they outnumber half the live ones (and a floor, so that a
// small index is not rebuilt at every Remove): each purge costs O(index), paid for by as many
// removals.
constexpr size_t kCompactFloor = 4096;

absl::Status CheckEvents(absl::Span<const Event> events) {
  for (size_t e = 0; e < events.size(); ++e) {
    const Event& event = events[e];
    for (size_t a = 1; a < event.attributes.size(); ++a) {
      if (!(event.attributes[a - 1].name < event.attributes[a].name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", e, ": attribute names are not sorted and unique (MakeEvent)"));
      }
    }
    for (size_t t = 1; t < event.terms.size(); ++t) {
      if (!(event.terms[t - 1] < event.terms[t])) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", e, ": terms are not sorted and unique (MakeEvent)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPredicate(const Predicate& predicate) {
  for (size_t f = 0; f < predicate.filters.size(); ++f) {
    const Filter& filter = predicate.filters[f];
    if (filter.constraints.empty() || filter.constraints.size() > kMaxConstraintsPerFilter) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter ", f + 1, " has ", filter.constraints.size(), " constraints; 1 to ",
                       kMaxConstraintsPerFilter, " are allowed"));
    }
    for (const Constraint& c : filter.constraints) {
      if (c.value.type == ValueType::kDouble && std::isnan(c.value.d)) {
        return absl::InvalidArgumentError(absl::StrCat("filter ", f + 1, ": a NaN value"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace cpu_matcher_internal

using cpu_matcher_internal::EventMatch;
using cpu_matcher_internal::Index;
using cpu_matcher_internal::Ref;
using cpu_matcher_internal::Scratch;

absl::StatusOr<std::unique_ptr<CpuMatcher>> CpuMatcher::Create(const CpuMatcherOptions& options) {
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("the CPU matcher takes 1 to 256 threads, not ", options.threads));
  }
  return std::unique_ptr<CpuMatcher>(new CpuMatcher(options));
}

CpuMatcher::CpuMatcher(const CpuMatcherOptions& options)
    : options_(options), index_(std::make_unique<Index>()) {
  if (options_.threads > 1) {
    pool_ = std::make_unique<cpu_matcher_internal::WorkerPool>(options_.threads - 1);
  }
}

CpuMatcher::~CpuMatcher() = default;

absl::Status CpuMatcher::Add(SubscriptionId id, InterfaceId interface, const Predicate& predicate) {
  if (absl::Status s = cpu_matcher_internal::CheckPredicate(predicate); !s.ok()) return s;
  Index& ix = *index_;
  absl::MutexLock lock(&ix.mu);
  if (ix.subscriptions.contains(id)) {
    return absl::AlreadyExistsError(absl::StrCat("subscription ", id, " exists"));
  }
  const size_t new_ids =
      predicate.filters.size() - std::min(predicate.filters.size(), ix.free_filters.size());
  if (ix.filter_size.size() + new_ids > std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError("the CPU matcher holds 2^32 filters");
  }
  if (!ix.dense_of.contains(interface) && ix.free_dense.empty() &&
      ix.interface_of.size() >= cpu_matcher_internal::kMaxDenseInterfaces) {
    return absl::ResourceExhaustedError("the CPU matcher holds 2^24 interfaces");
  }
  Index::Subscription& sub = ix.subscriptions[id];
  sub.iface = ix.AcquireInterface(interface);
  sub.filters.reserve(predicate.filters.size());
  for (const Filter& filter : predicate.filters) {
    uint32_t f;
    if (!ix.free_filters.empty()) {
      f = ix.free_filters.back();
      ix.free_filters.pop_back();
    } else {
      f = static_cast<uint32_t>(ix.filter_size.size());
      ix.filter_size.push_back(0);
    }
    ix.filter_size[f] = static_cast<uint8_t>(filter.constraints.size());
    sub.filters.push_back(f);
    for (const Constraint& c : filter.constraints)
      ix.AddConstraint(c, Ref::Make(f, sub.iface, filter.constraints.size()));
    ++ix.live_filters;
    ix.live_constraints += filter.constraints.size();
  }
  return absl::OkStatus();
}

absl::Status CpuMatcher::Remove(SubscriptionId id) {
  Index& ix = *index_;
  absl::MutexLock lock(&ix.mu);
  auto it = ix.subscriptions.find(id);
  if (it == ix.subscriptions.end()) {
    return absl::NotFoundError(absl::StrCat("no subscription ", id));
  }
  for (uint32_t f : it->second.filters) {
    ix.live_constraints -= ix.filter_size[f];
    ix.dead_constraints += ix.filter_size[f];
    ix.filter_size[f] = 0;  // its entries count no more (EventMatch::Hit)
    ix.removed_filters.push_back(f);
    --ix.live_filters;
  }
  ix.ReleaseInterface(it->second.iface);
  ix.subscriptions.erase(it);
  if (ix.dead_constraints > cpu_matcher_internal::kCompactFloor + ix.live_constraints / 2) {
    ix.Compact();
  }
  return absl::OkStatus();
}

absl::Status CpuMatcher::Match(absl::Span<const Event> events,
                               std::vector<std::vector<InterfaceId>>* matched) {
  if (absl::Status s = cpu_matcher_internal::CheckEvents(events); !s.ok()) return s;
  matched->resize(events.size());
  Index& ix = *index_;
  for (;;) {
    {
      absl::ReaderMutexLock lock(&ix.mu);
      if (ix.dirty.empty()) {
        MatchLocked(events, matched);
        return absl::OkStatus();
      }
    }
    absl::MutexLock lock(&ix.mu);  // sort the rows changed since the last Match, then retry
    ix.Refresh();
  }
}

void CpuMatcher::MatchLocked(absl::Span<const Event> events,
                             std::vector<std::vector<InterfaceId>>* matched) const {
  const Index& ix = *index_;
  std::atomic<size_t> next{0};
  const std::function<void()> body = [&] {
    Scratch* scratch = AcquireScratch();
    EventMatch match(ix, *scratch);
    for (;;) {
      const size_t e = next.fetch_add(1, std::memory_order_relaxed);
      if (e >= events.size()) break;
      match.Run(events[e], &(*matched)[e]);
    }
    ReleaseScratch(scratch);
  };
  const int helpers = static_cast<int>(
      std::min<size_t>(options_.threads - 1, events.empty() ? 0 : events.size() - 1));
  if (helpers > 0) {
    pool_->Run(helpers, body);
  } else {
    body();
  }
}

// Called under the shared lock: the number of filter ids and interfaces cannot change.
Scratch* CpuMatcher::AcquireScratch() const {
  const Index& ix = *index_;
  std::lock_guard<std::mutex> lock(ix.scratch_mu);
  Scratch* scratch;
  if (ix.scratch_free.empty()) {
    ix.scratch_all.push_back(std::make_unique<Scratch>());
    scratch = ix.scratch_all.back().get();
  } else {
    scratch = ix.scratch_free.back();
    ix.scratch_free.pop_back();
  }
  // New counters are zero, as the invariant wants.
  if (scratch->counts.size() < ix.filter_size.size()) {
    scratch->counts.resize(ix.filter_size.size());
    scratch->touched.resize(ix.filter_size.size() + 1);  // every filter once, and one spare
  }
  if (scratch->done.size() < ix.interface_of.size()) scratch->done.resize(ix.interface_of.size());
  return scratch;
}

void CpuMatcher::ReleaseScratch(Scratch* scratch) const {
  const Index& ix = *index_;
  std::lock_guard<std::mutex> lock(ix.scratch_mu);
  scratch->bytes = sizeof(Scratch) + cpu_matcher_internal::VectorBytes(scratch->counts) +
                   cpu_matcher_internal::VectorBytes(scratch->touched) +
                   cpu_matcher_internal::VectorBytes(scratch->done) +
                   cpu_matcher_internal::VectorBytes(scratch->done_list) +
                   cpu_matcher_internal::VectorBytes(scratch->found);
  ix.scratch_free.push_back(scratch);
}

MatcherStats CpuMatcher::stats() const {
  using cpu_matcher_internal::StringBytes;
  using cpu_matcher_internal::TableBytes;
  using cpu_matcher_internal::VectorBytes;
  const Index& ix = *index_;
  absl::ReaderMutexLock lock(&ix.mu);
  MatcherStats stats;
  stats.subscriptions = ix.subscriptions.size();
  stats.filters = ix.live_filters;
  stats.constraints = ix.live_constraints;
  size_t b = sizeof(CpuMatcher) + sizeof(Index);
  b += TableBytes(ix.names) + TableBytes(ix.terms) + VectorBytes(ix.dirty);
  for (const auto& [name, index] : ix.names) b += StringBytes(name) + index->bytes();
  for (const auto& [term, refs] : ix.terms) b += StringBytes(term) + VectorBytes(refs);
  b += VectorBytes(ix.filter_size) + VectorBytes(ix.free_filters) + VectorBytes(ix.removed_filters);
  b += TableBytes(ix.subscriptions);
  for (const auto& [id, sub] : ix.subscriptions) b += VectorBytes(sub.filters);
  b += TableBytes(ix.dense_of) + VectorBytes(ix.interface_of) +
       VectorBytes(ix.interface_subscriptions) + VectorBytes(ix.free_dense);
  {
    std::lock_guard<std::mutex> scratch_lock(ix.scratch_mu);
    for (const auto& scratch : ix.scratch_all) b += scratch->bytes;
  }
  stats.host_bytes = b;
  return stats;
}

int64_t CpuMatcher::SelectedConstraints(absl::Span<const Event> events) const {
  const Index& ix = *index_;
  absl::ReaderMutexLock lock(&ix.mu);
  int64_t selected = 0;
  for (const Event& event : events) {
    for (const Attribute& a : event.attributes) {
      if (auto it = ix.names.find(a.name); it != ix.names.end()) selected += it->second->held();
    }
    for (const std::string& term : event.terms) {
      if (auto it = ix.terms.find(term); it != ix.terms.end()) selected += it->second.size();
    }
  }
  return selected;
}

}  // namespace tandem::match
