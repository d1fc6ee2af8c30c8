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

namespace tandem::match {
namespace cpu_matcher_internal {

// Dense interface indices fit in 24 bits of a Ref.
constexpr uint32_t kMaxDenseInterfaces = uint32_t{1} << 24;

// A constraint's entry in an index row: the filter it counts for, that filter's interface (a
// dense index) and size, so that a satisfied constraint of an interface already matched costs one
// load (SFF's pruning: "purges all the constraints and filters exposed by that interface",
// Margara & Cugola, section 5) and counting needs no other table.
struct Ref {
  uint32_t filter;
  uint32_t iface_size;  // dense interface << 8 | the filter's number of constraints

  static Ref Make(uint32_t filter, uint32_t iface, size_t size) {
    return Ref{filter, iface << 8 | static_cast<uint32_t>(size)};
  }
  uint32_t iface() const { return iface_size >> 8; }
  uint32_t size() const { return iface_size & 0xff; }
};
using RefList = std::vector<Ref>;

template <typename T>
size_t VectorBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

size_t StringBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;  // beyond the inline buffer
}

template <typename Map>
size_t TableBytes(const Map& map) {
  return map.bucket_count() * (sizeof(typename Map::slot_type) + 1);
}

// The numeric constraints of one name and one operator, ascending by their value as a double.
// Converting an int64 to a double is monotonic, so the constraints whose double is below the
// attribute's are below it under every rule of `Satisfies` (int-int exact, otherwise as
// doubles), and those above are above: what an attribute satisfies is one or two contiguous ranges
// found by binary search, plus the constraints whose double equals the attribute's, few, each
// decided by `Satisfies` itself (an int64 beyond 2^53 may share its double with its neighbors).
struct NumericRow {
  struct Entry {
    double key;
    int64_t i;
    bool is_int;
    Ref ref;
  };
  // Parallel, sorted by (key, is_int, i): equal values are adjacent.
  std::vector<double> keys;
  std::vector<int64_t> ints;  // the exact value of an int constraint, 0 for a double
  std::vector<uint8_t> is_int;
  RefList refs;
  std::vector<Entry> pending;  // added since the row was last sorted

  size_t held() const { return refs.size() + pending.size(); }
  size_t bytes() const {
    return VectorBytes(keys) + VectorBytes(ints) + VectorBytes(is_int) + VectorBytes(refs) +
           VectorBytes(pending);
  }
  ValueRef value(size_t k) const {
    ValueRef v;
    if (is_int[k]) {
      v.type = ValueType::kInt;
      v.i = ints[k];
    } else {
      v.type = ValueType::kDouble;
      v.d = keys[k];
    }
    return v;
  }
  bool SameValue(size_t a, size_t b) const {
    return keys[a] == keys[b] && is_int[a] == is_int[b] && ints[a] == ints[b];
  }

  // Merges the pending entries in and drops those of removed filters (size 0).
  void Rebuild(const std::vector<uint8_t>& filter_size) {
    auto less = [](const Entry& a, const Entry& b) {
      if (a.key != b.key) return a.key < b.key;
      if (a.is_int != b.is_int) return a.is_int < b.is_int;
      return a.i < b.i;
    };
    std::sort(pending.begin(), pending.end(), less);
    NumericRow out;
    const size_t total = refs.size() + pending.size();
    out.keys.reserve(total);
    out.ints.reserve(total);
    out.is_int.reserve(total);
    out.refs.reserve(total);
    auto push = [&](const Entry& e) {
      if (filter_size[e.ref.filter] == 0) return;
      out.keys.push_back(e.key);
      out.ints.push_back(e.i);
      out.is_int.push_back(e.is_int);
      out.refs.push_back(e.ref);
    };
    size_t j = 0;
    for (size_t k = 0; k < refs.size(); ++k) {
      const Entry old{keys[k], ints[k], is_int[k] != 0, refs[k]};
      while (j < pending.size() && less(pending[j], old)) push(pending[j++]);
      push(old);
    }
    while (j < pending.size()) push(pending[j++]);
    *this = std::move(out);
  }
};

// String constraints of one name and one operator, grouped by value: = and prefix look the
// attribute (or its prefixes) up, != takes every group but the attribute's, substring looks up the
// attribute's windows or tests each distinct needle, whichever is fewer steps.
struct StringRow {
  absl::flat_hash_map<std::string, RefList> groups;
  std::vector<uint32_t> keys_by_length;  // distinct values of each length
  size_t held = 0;

  void Add(absl::string_view value, Ref ref) {
    auto [it, inserted] = groups.try_emplace(value);
    if (inserted) {
      if (keys_by_length.size() <= value.size()) keys_by_length.resize(value.size() + 1);
      ++keys_by_length[value.size()];
    }
    it->second.push_back(ref);
    ++held;
  }

  void Purge(const std::vector<uint8_t>& filter_size) {
    held = 0;
    for (auto it = groups.begin(); it != groups.end();) {
      RefList& refs = it->second;
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](Ref r) { return filter_size[r.filter] == 0; }),
                 refs.end());
      if (refs.empty()) {
        --keys_by_length[it->first.size()];
        groups.erase(it++);
        continue;
      }
      if (refs.size() < refs.capacity() / 2) refs.shrink_to_fit();
      held += refs.size();
      ++it;
    }
  }

  size_t bytes() const {
    size_t b = TableBytes(groups) + VectorBytes(keys_by_length);
    for (const auto& [value, refs] : groups) b += StringBytes(value) + VectorBytes(refs);
    return b;
  }
};

// Everything indexed under one attribute name (CCM's row of table Constraints, section 4.1, split
// by operator and type as SFF's per-name tables).
struct NameIndex {
  NumericRow numeric[6];  // by Op: kEq, kNe, kLt, kGt, kLe, kGe
  StringRow eq, ne, prefix, substring;
  bool dirty = false;  // a numeric row has pending entries

  size_t held() const {
    size_t n = eq.held + ne.held + prefix.held + substring.held;
    for (const NumericRow& row : numeric) n += row.held();
    return n;
  }
  size_t bytes() const {
    size_t b = sizeof(NameIndex) + eq.bytes() + ne.bytes() + prefix.bytes() + substring.bytes();
    for (const NumericRow& row : numeric) b += row.bytes();
    return b;
  }
};

// One matching thread's counters (SFF's and CCM's per-filter counts, 8 bits as CCM's Count), kept
// zero between events: what an event touched is reset from the lists, not by clearing everything.
struct Scratch {
  std::vector<uint8_t> counts;    // by filter
  std::vector<uint32_t> touched;  // filters counted for this event: the first `touched_count`
  size_t touched_count = 0;
  std::vector<uint8_t> done;        // by dense interface: matched for this event
  std::vector<uint32_t> done_list;  // the interfaces matched, in the order found
  std::vector<const RefList*> found;
  size_t bytes = 0;  // as of its last release, read by stats() under the pool's lock
};

struct Index {
  // Shared by Match, exclusive for Add, Remove and sorting pending rows. absl::Mutex lets a waiting
  // writer in ahead of new readers, so Add is not starved by a stream of Match calls.
  mutable absl::Mutex mu;
  absl::flat_hash_map<std::string, std::unique_ptr<NameIndex>> names;
  absl::flat_hash_map<std::string, RefList> terms;
  std::vector<NameIndex*> dirty;

  // By filter id: its number of constraints, 0 for a free or removed id. A removed filter's id
  // waits in `removed` until Compact has purged its entries, then is reused.
  std::vector<uint8_t> filter_size;
  std::vector<uint32_t> free_filters;
  std::vector<uint32_t> removed_filters;

  struct Subscription {
    uint32_t iface = 0;  // dense
    std::vector<uint32_t> filters;
  };
  absl::flat_hash_map<SubscriptionId, Subscription> subscriptions;

  // Interfaces by a dense index, reused once the interface has no subscription left.
  absl::flat_hash_map<InterfaceId, uint32_t> dense_of;
  std::vector<InterfaceId> interface_of;
  std::vector<uint32_t> interface_subscriptions;
  std::vector<uint32_t> free_dense;

  size_t live_interfaces = 0;
  size_t live_filters = 0;
  size_t live_constraints = 0;
  size_t dead_constraints = 0;  // of removed filters, still in the rows

  mutable std::mutex scratch_mu;
  mutable std::vector<std::unique_ptr<Scratch>> scratch_all;
  mutable std::vector<Scratch*> scratch_free;

  void AddConstraint(const Constraint& c, Ref ref) {
    if (c.op == Op::kContains) {  // decided by the term's presence, whatever the name (model.cc)
      terms[c.value.s].push_back(ref);
      return;
    }
    std::unique_ptr<NameIndex>& slot = names[c.name];
    if (slot == nullptr) slot = std::make_unique<NameIndex>();
    NameIndex& name = *slot;
    if (c.value.type == ValueType::kString) {
      switch (c.op) {
        case Op::kEq:
          name.eq.Add(c.value.s, ref);
          break;
        case Op::kNe:
          name.ne.Add(c.value.s, ref);
          break;
        case Op::kPrefix:
          name.prefix.Add(c.value.s, ref);
          break;
        case Op::kSubstring:
          name.substring.Add(c.value.s, ref);
          break;
        default:
          break;  // an ordering operator on a string never holds: nothing to index
      }
      return;
    }
    if (c.op > Op::kGe) return;  // prefix or substring of a number never holds
    const bool is_int = c.value.type == ValueType::kInt;
    name.numeric[static_cast<int>(c.op)].pending.push_back(NumericRow::Entry{
        is_int ? static_cast<double>(c.value.i) : c.value.d, is_int ? c.value.i : 0, is_int, ref});
    if (!name.dirty) {
      name.dirty = true;
      dirty.push_back(&name);
    }
  }

  // Sorts the numeric rows that took constraints since the last Match.
  void Refresh() {
    for (NameIndex* name : dirty) {
      for (NumericRow& row : name->numeric) {
        if (!row.pending.empty()) row.Rebuild(filter_size);
      }
      name->dirty = false;
    }
    dirty.clear();
  }

  // Purges the entries of removed filters everywhere, then frees their ids.
  void Compact() {
    Refresh();
    for (auto it = names.begin(); it != names.end();) {
      NameIndex& name = *it->second;
      for (NumericRow& row : name.numeric) row.Rebuild(filter_size);
      for (StringRow* row : {&name.eq, &name.ne, &name.prefix, &name.substring}) {
        row->Purge(filter_size);
      }
      if (name.held() == 0) {
        names.erase(it++);
      } else {
        ++it;
      }
    }
    for (auto it = terms.begin(); it != terms.end();) {
      RefList& refs = it->second;
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](Ref r) { return filter_size[r.filter] == 0; }),
                 refs.end());
      if (refs.empty()) {
        terms.erase(it++);
      } else {
        if (refs.size() < refs.capacity() / 2) refs.shrink_to_fit();
        ++it;
      }
    }
    free_filters.insert(free_filters.end(), removed_filters.begin(), removed_filters.end());
    removed_filters.clear();
    dead_constraints = 0;
  }

  uint32_t AcquireInterface(InterfaceId interface) {
    auto [it, inserted] = dense_of.try_emplace(interface, 0);
    if (inserted) {
      if (free_dense.empty()) {
        it->second = static_cast<uint32_t>(interface_of.size());
        interface_of.push_back(interface);
        interface_subscriptions.push_back(0);
      } else {
        it->second = free_dense.back();
        free_dense.pop_back();
        interface_of[it->second] = interface;
      }
      ++live_interfaces;
    }
    ++interface_subscriptions[it->second];
    return it->second;
  }

  void ReleaseInterface(uint32_t dense) {
    if (--interface_subscriptions[dense] > 0) return;
    dense_of.erase(interface_of[dense]);
    free_dense.push_back(dense);
    --live_interfaces;
  }
};

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
