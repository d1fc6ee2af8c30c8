// File: cpu_matcher_internal.h
//
// The CPU matcher's constraint index (Margara & Cugola, DEBS 2011, section 4.1, with SFF's
// counting): per attribute name, numeric constraints sorted by value and string constraints
// grouped by value, each entry naming the filter it counts for; the per-thread counters; and the
// whole index with its filters and interfaces. Internal to match/: cpu_matcher.cc matches events
// against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "match/cpu_matcher.h"
#include "match/model.h"

namespace tandem::match::cpu_matcher_internal {

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

// Drops the references to removed filters (filter_size 0), giving memory back when under half of
// it is left in use; returns whether none is left.
inline bool PurgeRefs(RefList& refs, const std::vector<uint8_t>& filter_size) {
  refs.erase(
      std::remove_if(refs.begin(), refs.end(), [&](Ref r) { return filter_size[r.filter] == 0; }),
      refs.end());
  if (refs.empty()) return true;
  if (refs.size() < refs.capacity() / 2) refs.shrink_to_fit();
  return false;
}

template <typename T>
inline size_t VectorBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

inline size_t StringBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;  // beyond the inline buffer
}

template <typename Map>
inline size_t TableBytes(const Map& map) {
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
      if (PurgeRefs(it->second, filter_size)) {
        --keys_by_length[it->first.size()];
        groups.erase(it++);
        continue;
      }
      held += it->second.size();
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
      if (PurgeRefs(it->second, filter_size)) {
        terms.erase(it++);
      } else {
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

}  // namespace tandem::match::cpu_matcher_internal
