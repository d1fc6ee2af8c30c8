#include "match/subscription_registry.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/utf8.h"
#include "match/match_router.h"
#include "match/subscription_file.h"
#include "match/subscription_store.h"

namespace tandem::match {

absl::StatusOr<MatchEngine> ParseMatchEngine(absl::string_view name) {
  if (name == "auto") return MatchEngine::kAuto;
  if (name == "cpu") return MatchEngine::kCpu;
  if (name == "gpu") return MatchEngine::kGpu;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown match engine '", name, "' (expected auto, cpu or gpu)"));
}

namespace {

struct Entry {
  InterfaceId interface = 0;
  Predicate predicate;
  int64_t constraints = 0;
};

// Whether every string a record would be answered with is UTF-8. Builds before the model refused
// other bytes stored such records, after answering their Subscribe with a message no client could
// read; they are dropped at Open, since they would make every ListSubscriptions unreadable.
bool AnswerableAsUtf8(const SubscriptionRecord& r) {
  if (!base::IsValidUtf8(r.interface)) return false;
  for (const Filter& f : r.predicate.filters) {
    for (const Constraint& c : f.constraints) {
      if (!base::IsValidUtf8(c.name)) return false;
      if (c.value.type == ValueType::kString && !base::IsValidUtf8(c.value.s)) return false;
    }
  }
  return true;
}

int64_t CountConstraints(const Predicate& p) {
  int64_t n = 0;
  for (const Filter& f : p.filters) n += static_cast<int64_t>(f.constraints.size());
  return n;
}

}  // namespace

struct SubscriptionRegistry::State {
  State(const RegistryOptions& o, std::unique_ptr<Matcher> c, std::unique_ptr<Matcher> g)
      : options(o), cpu(std::move(c)), gpu(std::move(g)), router(gpu != nullptr) {}

  const RegistryOptions options;
  const std::unique_ptr<Matcher> cpu;
  const std::unique_ptr<Matcher> gpu;
  MatchRouter router;

  mutable std::shared_mutex mu;  // guards everything below
  std::map<SubscriptionId, Entry> subscriptions;
  absl::flat_hash_map<std::string, InterfaceId> interface_ids;
  std::vector<std::string> interface_names;
  // Constraints per attribute name and per term: the rows an event selects (CCM's table
  // Constraints, section 4.1), for the router's work feature.
  absl::flat_hash_map<std::string, int64_t> name_rows;
  absl::flat_hash_map<std::string, int64_t> term_rows;
  SubscriptionId next_id = 1;
  int64_t constraints = 0;

  InterfaceId Intern(absl::string_view name) {
    auto [it, inserted] =
        interface_ids.try_emplace(name, static_cast<InterfaceId>(interface_names.size()));
    if (inserted) interface_names.emplace_back(name);
    return it->second;
  }

  void CountRows(const Predicate& p, int64_t sign) {
    for (const Filter& f : p.filters) {
      for (const Constraint& c : f.constraints) {
        auto& rows = c.op == Op::kContains ? term_rows : name_rows;
        const std::string& key = c.op == Op::kContains ? c.value.s : c.name;
        auto it = rows.try_emplace(key, 0).first;
        it->second += sign;
        if (it->second == 0) rows.erase(it);
      }
    }
  }

  // Adds to both matchers and the maps; exclusive lock held.
  absl::Status AddLocked(SubscriptionId id, absl::string_view interface, Predicate predicate) {
    const InterfaceId iface = Intern(interface);
    if (absl::Status s = cpu->Add(id, iface, predicate); !s.ok()) return s;
    if (gpu != nullptr) {
      if (absl::Status s = gpu->Add(id, iface, predicate); !s.ok()) {
        (void)cpu->Remove(id);
        return s;
      }
    }
    CountRows(predicate, +1);
    const int64_t n = CountConstraints(predicate);
    constraints += n;
    subscriptions.emplace(id, Entry{iface, std::move(predicate), n});
    return absl::OkStatus();
  }

  absl::StatusOr<Entry> RemoveLocked(SubscriptionId id) {
    auto it = subscriptions.find(id);
    if (it == subscriptions.end()) {
      return absl::NotFoundError(absl::StrCat("no subscription ", id));
    }
    if (absl::Status s = cpu->Remove(id); !s.ok()) return s;
    if (gpu != nullptr) {
      if (absl::Status s = gpu->Remove(id); !s.ok()) {
        (void)cpu->Add(id, it->second.interface, it->second.predicate);
        return s;
      }
    }
    Entry entry = std::move(it->second);
    subscriptions.erase(it);
    CountRows(entry.predicate, -1);
    constraints -= entry.constraints;
    return entry;
  }

  int64_t SelectedConstraints(absl::Span<const Event> events) const {
    std::shared_lock<std::shared_mutex> lock(mu);
    int64_t work = 0;
    for (const Event& e : events) {
      for (const Attribute& a : e.attributes) {
        if (auto it = name_rows.find(a.name); it != name_rows.end()) work += it->second;
      }
      for (const std::string& t : e.terms) {
        if (auto it = term_rows.find(t); it != term_rows.end()) work += it->second;
      }
    }
    return work;
  }

  // One batch on the engine the router picks.
  absl::StatusOr<MatchResult> MatchNow(absl::Span<const Event> events) {
    State& st = *this;
    MatchResult result;
    if (events.empty()) return result;
    const int64_t work = st.SelectedConstraints(events);
    MatchRouter::Engine engine = MatchRouter::kCpu;
    switch (st.options.engine) {
      case MatchEngine::kCpu:
        engine = MatchRouter::kCpu;
        break;
      case MatchEngine::kGpu:
        engine = MatchRouter::kGpu;
        break;
      case MatchEngine::kAuto:
        engine = st.router.Choose(work);
        break;
    }
    std::vector<std::vector<InterfaceId>> ids;
    Matcher* matcher = engine == MatchRouter::kGpu ? st.gpu.get() : st.cpu.get();
    const auto start = std::chrono::steady_clock::now();
    absl::Status s = matcher->Match(events, &ids);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok() && engine == MatchRouter::kGpu) {
      // A device fault costs the batch nothing: the CPU matcher holds the same subscriptions.
      std::fprintf(stderr, "tandem: GPU matcher failed (%s); matching on the CPU\n",
                   s.ToString().c_str());
      engine = MatchRouter::kCpu;
      matcher = st.cpu.get();
      s = matcher->Match(events, &ids);
    } else if (s.ok()) {
      st.router.Record(engine, work, seconds);
    }
    if (!s.ok()) return s;
    result.engine = matcher->name();
    result.interfaces.resize(events.size());
    std::shared_lock<std::shared_mutex> lock(st.mu);
    for (size_t e = 0; e < ids.size() && e < events.size(); ++e) {
      auto& names = result.interfaces[e];
      names.reserve(ids[e].size());
      for (InterfaceId i : ids[e]) names.push_back(st.interface_names[i]);
      std::sort(names.begin(), names.end());
    }
    return result;
  }

  // Match calls that arrive while a batch runs wait, and the next caller to find no batch running
  // matches all of them as one (flat combining): concurrent small calls share a launch, the way
  // CCM matches events in bursts (Margara & Cugola, section 5's closing remarks) and the query
  // path's BatchingEngine gathers GPU queries.
  struct MatchRequest {
    absl::Span<const Event> events;
    absl::StatusOr<MatchResult> result;
    bool done = false;
  };
  std::mutex batch_mu;
  std::condition_variable batch_done;
  std::deque<MatchRequest*> waiting;  // guarded by batch_mu
  bool batch_running = false;         // guarded by batch_mu

  void RunCombined(const std::vector<MatchRequest*>& batch) {
    if (batch.size() == 1) {
      batch[0]->result = MatchNow(batch[0]->events);
      return;
    }
    std::vector<Event> events;
    for (const MatchRequest* r : batch)
      events.insert(events.end(), r->events.begin(), r->events.end());
    absl::StatusOr<MatchResult> all = MatchNow(events);
    if (!all.ok()) {  // each on its own, so one call's failure stays its own
      for (MatchRequest* r : batch) r->result = MatchNow(r->events);
      return;
    }
    size_t offset = 0;
    for (MatchRequest* r : batch) {
      MatchResult part;
      part.engine = all->engine;
      part.interfaces.assign(
          std::make_move_iterator(all->interfaces.begin() + offset),
          std::make_move_iterator(all->interfaces.begin() + offset + r->events.size()));
      offset += r->events.size();
      r->result = std::move(part);
    }
  }

  // What a caller is told when its change could not be saved: the I/O error names paths and the
  // process id, which are the operator's, so it goes to the log and the caller gets UNAVAILABLE
  // (the change was undone; a later call may succeed once the disk is fixed).
  absl::Status SaveFailed(const absl::Status& error) const {
    std::fprintf(stderr, "tandem: cannot save subscriptions to %s: %s; the change was undone\n",
                 options.path.c_str(), error.ToString().c_str());
    return absl::UnavailableError(
        "the subscriptions could not be saved, so the change was not made (the node's log has "
        "the reason)");
  }

  // The registry's state for a snapshot, taken under the shared lock.
  SubscriptionSnapshot Capture(const std::function<void()>& while_locked) const {
    SubscriptionSnapshot snapshot;
    std::shared_lock<std::shared_mutex> lock(mu);
    snapshot.next_id = next_id;
    snapshot.records.reserve(subscriptions.size());
    for (const auto& [id, entry] : subscriptions) {
      snapshot.records.push_back(
          SubscriptionRecord{id, interface_names[entry.interface], entry.predicate});
    }
    while_locked();
    return snapshot;
  }

  // Logs a change made under the exclusive lock, which the caller holds; null without a file.
  std::shared_ptr<SubscriptionStore::Batch> Log(const SubscriptionChange& change) {
    if (store == nullptr) return nullptr;
    std::string bytes;
    EncodeChange(change, &bytes);
    return store->Enqueue(bytes);
  }

  absl::Status WaitDurable(const std::shared_ptr<SubscriptionStore::Batch>& batch) {
    return batch == nullptr ? absl::OkStatus() : store->WaitDurable(batch);
  }

  // Last: stopped (its compaction thread reads the state) before anything else goes.
  std::unique_ptr<SubscriptionStore> store;
};

SubscriptionRegistry::SubscriptionRegistry(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
SubscriptionRegistry::~SubscriptionRegistry() = default;

absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> SubscriptionRegistry::Open(
    const RegistryOptions& options, std::unique_ptr<Matcher> cpu, std::unique_ptr<Matcher> gpu) {
  if (cpu == nullptr) return absl::InvalidArgumentError("the registry needs a CPU matcher");
  if (options.engine == MatchEngine::kGpu && gpu == nullptr) {
    return absl::FailedPreconditionError("match engine gpu: this node has no GPU matcher");
  }
  if (options.max_subscriptions < 1 || options.max_constraints < 1 ||
      options.max_interface_bytes < 1 || options.max_batch_events < 1 ||
      options.compact_log_bytes < 1) {
    return absl::InvalidArgumentError("subscription limits must be positive");
  }
  auto state = std::make_unique<State>(options, std::move(cpu), std::move(gpu));
  if (!options.path.empty()) {
    state->store = std::make_unique<SubscriptionStore>(SubscriptionStoreOptions{
        .path = options.path, .compact_log_bytes = options.compact_log_bytes});
    absl::StatusOr<SubscriptionSnapshot> loaded = state->store->Load();
    if (!loaded.ok()) return loaded.status();
    std::unique_lock<std::shared_mutex> lock(state->mu);
    state->next_id = loaded->next_id;
    for (SubscriptionRecord& r : loaded->records) {
      if (!AnswerableAsUtf8(r)) {
        std::fprintf(stderr,
                     "tandem: %s: dropped subscription %llu of interface \"%s\": it holds a "
                     "string that is not UTF-8 (its Subscribe could not be answered)\n",
                     options.path.c_str(), static_cast<unsigned long long>(r.id),
                     absl::CHexEscape(r.interface).c_str());
        continue;
      }
      if (absl::Status s = state->AddLocked(r.id, r.interface, std::move(r.predicate)); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat(options.path, ": subscription ", r.id, ": ", s.message()));
      }
    }
    lock.unlock();
    // A fresh snapshot and an empty log at once, so an unwritable path fails at startup rather
    // than at the first Subscribe.
    State* st = state.get();
    TANDEM_RETURN_IF_ERROR(state->store->Start(
        [st](const std::function<void()>& while_locked) { return st->Capture(while_locked); }));
  }
  return std::unique_ptr<SubscriptionRegistry>(new SubscriptionRegistry(std::move(state)));
}

absl::StatusOr<SubscriptionId> SubscriptionRegistry::Subscribe(absl::string_view interface,
                                                               Predicate predicate) {
  State& st = *state_;
  if (interface.empty()) return absl::InvalidArgumentError("empty interface name");
  if (interface.size() > static_cast<size_t>(st.options.max_interface_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("interface name of ", interface.size(),
                                                   " bytes, above the limit of ",
                                                   st.options.max_interface_bytes));
  }
  if (!base::IsValidUtf8(interface)) {
    // It is answered in proto3 string fields, which a client cannot read unless they are UTF-8.
    return absl::InvalidArgumentError("the interface name is not valid UTF-8");
  }
  const int64_t n = CountConstraints(predicate);
  SubscriptionId id;
  std::string bytes;
  std::shared_ptr<SubscriptionStore::Batch> batch;
  {
    std::unique_lock<std::shared_mutex> lock(st.mu);
    if (static_cast<int64_t>(st.subscriptions.size()) >= st.options.max_subscriptions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the node holds ", st.subscriptions.size(), " subscriptions, its limit"));
    }
    if (st.constraints + n > st.options.max_constraints) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the node holds ", st.constraints, " constraints; ", n,
                       " more would pass its limit of ", st.options.max_constraints));
    }
    id = st.next_id++;
    SubscriptionChange change{.record = {id, std::string(interface), std::move(predicate)}};
    if (st.store != nullptr) EncodeChange(change, &bytes);
    if (absl::Status s = st.AddLocked(id, interface, std::move(change.record.predicate)); !s.ok()) {
      return s;
    }
    if (st.store != nullptr) batch = st.store->Enqueue(bytes);
  }
  if (absl::Status s = st.WaitDurable(batch); !s.ok()) {
    {
      std::unique_lock<std::shared_mutex> lock(st.mu);
      if (st.RemoveLocked(id).ok()) {  // logged too: the change may have reached the file
        (void)st.Log(SubscriptionChange{.remove = true, .record = {.id = id}});
      }
    }
    return st.SaveFailed(s);
  }
  return id;
}

absl::Status SubscriptionRegistry::Unsubscribe(SubscriptionId id) {
  State& st = *state_;
  std::shared_ptr<SubscriptionStore::Batch> batch;
  Entry removed;
  {
    std::unique_lock<std::shared_mutex> lock(st.mu);
    absl::StatusOr<Entry> entry = st.RemoveLocked(id);
    if (!entry.ok()) return entry.status();
    removed = *std::move(entry);
    batch = st.Log(SubscriptionChange{.remove = true, .record = {.id = id}});
  }
  if (absl::Status s = st.WaitDurable(batch); !s.ok()) {
    {
      std::unique_lock<std::shared_mutex> lock(st.mu);
      const std::string interface = st.interface_names[removed.interface];
      SubscriptionChange redo{.record = {id, interface, removed.predicate}};
      if (st.AddLocked(id, interface, std::move(removed.predicate)).ok()) (void)st.Log(redo);
    }
    return st.SaveFailed(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SubscriptionRegistry::InterfaceOf(SubscriptionId id) const {
  const State& st = *state_;
  std::shared_lock<std::shared_mutex> lock(st.mu);
  auto it = st.subscriptions.find(id);
  if (it == st.subscriptions.end())
    return absl::NotFoundError(absl::StrCat("no subscription ", id));
  return st.interface_names[it->second.interface];
}

std::vector<SubscriptionRecord> SubscriptionRegistry::List(absl::string_view interface) const {
  const State& st = *state_;
  std::shared_lock<std::shared_mutex> lock(st.mu);
  std::vector<SubscriptionRecord> out;
  std::optional<InterfaceId> only;
  if (!interface.empty()) {
    auto it = st.interface_ids.find(interface);
    if (it == st.interface_ids.end()) return out;
    only = it->second;
  }
  for (const auto& [id, entry] : st.subscriptions) {
    if (only && entry.interface != *only) continue;
    out.push_back(SubscriptionRecord{id, st.interface_names[entry.interface], entry.predicate});
  }
  return out;
}

int64_t SubscriptionRegistry::SelectedConstraints(absl::Span<const Event> events) const {
  return state_->SelectedConstraints(events);
}

absl::StatusOr<MatchResult> SubscriptionRegistry::Match(absl::Span<const Event> events) {
  State& st = *state_;
  if (events.empty()) return MatchResult{};
  State::MatchRequest mine;
  mine.events = events;
  std::unique_lock<std::mutex> lock(st.batch_mu);
  st.waiting.push_back(&mine);
  while (!mine.done) {
    if (st.batch_running) {
      st.batch_done.wait(lock);
      continue;
    }
    st.batch_running = true;
    std::vector<State::MatchRequest*> batch;
    size_t taken = 0;
    while (!st.waiting.empty() &&
           (batch.empty() || taken + st.waiting.front()->events.size() <=
                                 static_cast<size_t>(st.options.max_batch_events))) {
      taken += st.waiting.front()->events.size();
      batch.push_back(st.waiting.front());
      st.waiting.pop_front();
    }
    lock.unlock();
    st.RunCombined(batch);
    lock.lock();
    for (State::MatchRequest* r : batch) r->done = true;
    st.batch_running = false;
    st.batch_done.notify_all();
  }
  return std::move(mine.result);
}

MatcherStats SubscriptionRegistry::stats() const {
  MatcherStats stats = state_->cpu->stats();
  if (state_->gpu != nullptr) stats.device_bytes = state_->gpu->stats().device_bytes;
  return stats;
}

SubscriptionStoreStats SubscriptionRegistry::store_stats() const {
  return state_->store == nullptr ? SubscriptionStoreStats{} : state_->store->stats();
}

bool SubscriptionRegistry::has_gpu() const { return state_->gpu != nullptr; }
const RegistryOptions& SubscriptionRegistry::options() const { return state_->options; }

}  // namespace tandem::match
