// File: ccm_tables.h
//
// The host mirror of the CCM matcher's device tables (Margara & Cugola, section 4.1; layout in
// ccm_format.h), updated in place as subscriptions come and go, so a change costs the device a
// copy of the pages it touched instead of a rebuild. Plain C++, no CUDA: the matcher
// (ccm_matcher.cc) copies the dirty pages to the device before each Match.
//
// - Table Constraints is one pool; each row (the map Names: attribute name -> row, and one row per
//   term of `contains` constraints) owns a range with room to grow. A row that outgrows its range
//   moves to fresh space at the end of the pool; the pool doubles when full, or is first packed
//   again when most of it is space that rows left behind.
// - Removal is exact: each constraint knows its filter and its index in the filter, each filter
//   where its constraints sit (row, index in the row), so a removed constraint takes the row's last
//   element in its place. Rows stay dense (no thread of the kernel evaluates a dead constraint)
//   and a filter id is free for reuse at once.
// - String values are interned in one pool, reference-counted, and packed again when dead bytes
//   dominate.
//
//   CcmTables tables;
//   TANDEM_RETURN_IF_ERROR(CcmTables::CheckFilter(filter));
//   TANDEM_RETURN_IF_ERROR(tables.CheckRoom(1, filter.constraints.size()));
//   const uint32_t id = tables.AddFilter(interface, filter);
//   tables.RemoveFilter(id);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "match/ccm_format.h"
#include "match/model.h"

namespace tandem::match::ccm {

// Which pages of a host array changed since its device copy was last refreshed.
class DirtyPages {
 public:
  explicit DirtyPages(size_t page_elements) : page_(page_elements) {}

  void Mark(size_t begin, size_t end);  // elements [begin, end)
  void MarkAll() { all_ = true; }
  bool empty() const { return !all_ && low_ > high_; }

  // Calls `copy(begin, end)` for each run of dirty pages, clipped to the first `size` elements,
  // and forgets them. When a copy fails, every page stays dirty and its error is returned.
  template <typename Copy>
  absl::Status Drain(size_t size, Copy&& copy);

 private:
  void Clear();

  size_t page_;
  std::vector<uint64_t> bits_;  // one per page
  size_t low_ = SIZE_MAX;       // the dirty pages lie in [low_, high_]
  size_t high_ = 0;
  bool all_ = false;
};

// A row of table Constraints: its range of the pool.
struct Row {
  uint32_t begin = 0;
  uint32_t size = 0;  // SizeC
  uint32_t capacity = 0;
  bool term = false;  // a term's row (else an attribute name's)
  std::string key;    // the name or the term; empty for a free row
};

class CcmTables {
 public:
  static constexpr uint32_t kNoRow = ~0u;

  // Device copies are refreshed by pages of `page_bytes`: one Add touches a few pages, a bulk load
  // all of them (one copy per run of dirty pages). Tests take small pages to see every change.
  explicit CcmTables(size_t page_bytes = size_t{64} << 10);

  // INVALID_ARGUMENT for a filter this layout cannot hold: no constraint or more than
  // kMaxConstraintsPerFilter, an unknown operator or type, a NaN, a string over kMaxStringBytes.
  static absl::Status CheckFilter(const Filter& filter);
  // RESOURCE_EXHAUSTED when `filters` more filters of `constraints` constraints would pass the
  // 32-bit filter ids or pool positions.
  absl::Status CheckRoom(size_t filters, size_t constraints) const;

  // Adds a filter checked by CheckFilter and CheckRoom; returns its id. `interface` <
  // kMaxInterfaces.
  uint32_t AddFilter(InterfaceId interface, const Filter& filter);
  void RemoveFilter(uint32_t id);

  // The row of an attribute name or a term; kNoRow when no constraint has it.
  uint32_t FindNameRow(absl::string_view name) const;
  uint32_t FindTermRow(absl::string_view term) const;
  const Row& row(uint32_t id) const { return rows_[id]; }

  // The mirrored arrays, as long as their device copies must be (capacities), the prefixes in use,
  // and their dirty pages.
  absl::Span<const DeviceConstraint> constraints() const { return pool_; }
  size_t constraints_used() const { return pool_end_; }
  DirtyPages& dirty_constraints() { return dirty_pool_; }
  absl::Span<const char> strings() const { return strings_; }
  size_t strings_used() const { return strings_end_; }
  DirtyPages& dirty_strings() { return dirty_strings_; }
  absl::Span<const uint32_t> filters() const { return filters_; }
  size_t filters_used() const { return filters_end_; }
  DirtyPages& dirty_filters() { return dirty_filters_; }

  // Filter ids are below filter_capacity() (a multiple of 16: four counters a word, four words a
  // 128-bit store); interface ids below interface_capacity() (a multiple of 128).
  uint32_t filter_capacity() const { return static_cast<uint32_t>(filters_.size()); }
  uint32_t interface_capacity() const { return interface_capacity_; }

  size_t live_filters() const { return live_filters_; }
  size_t live_constraints() const { return live_constraints_; }
  size_t host_bytes() const;

  // For tests: every invariant of the tables, O(size). INTERNAL naming the first one broken.
  absl::Status CheckInvariants() const;

 private:
  // Where a filter's constraint sits.
  struct Place {
    uint32_t row;
    uint32_t index;
  };
  struct InternedString {
    uint64_t offset;
    uint32_t refs;
  };

  uint32_t RowFor(bool term, absl::string_view key);
  void FreeRow(uint32_t r);
  uint32_t Append(uint32_t r, const DeviceConstraint& element, uint8_t index_in_filter);
  void RemoveAt(uint32_t r, uint32_t index);
  void GrowRow(uint32_t r);
  uint32_t AllocatePool(uint32_t elements);
  void PackPool();
  uint64_t InternString(absl::string_view s);
  void ReleaseString(uint64_t offset, uint32_t length);
  void PackStrings();
  void GrowFilters();

  std::vector<DeviceConstraint> pool_;    // table Constraints, capacity long
  std::vector<uint8_t> index_in_filter_;  // beside each element of the pool
  size_t pool_end_ = 0;                   // rows' ranges lie below
  size_t reserved_ = 0;                   // the live rows' capacities; the rest below is holes
  std::vector<Row> rows_;
  std::vector<uint32_t> free_rows_;
  absl::flat_hash_map<std::string, uint32_t> names_;  // Names
  absl::flat_hash_map<std::string, uint32_t> terms_;

  std::vector<uint32_t> filters_;  // table Filters, capacity long
  std::vector<std::vector<Place>> places_;
  std::vector<uint32_t> free_filters_;
  size_t filters_end_ = 0;  // ids in use lie below
  uint32_t interface_capacity_ = 128;

  std::vector<char> strings_;
  size_t strings_end_ = 0;
  size_t dead_string_bytes_ = 0;
  absl::flat_hash_map<std::string, InternedString> interned_;

  size_t live_filters_ = 0;
  size_t live_constraints_ = 0;
  DirtyPages dirty_pool_;
  DirtyPages dirty_strings_;
  DirtyPages dirty_filters_;
};

template <typename Copy>
absl::Status DirtyPages::Drain(size_t size, Copy&& copy) {
  if (empty()) return absl::OkStatus();
  absl::Status status;
  if (all_) {
    if (size > 0) status = copy(size_t{0}, size);
  } else {
    size_t p = low_;
    while (status.ok() && p <= high_) {
      if ((bits_[p / 64] >> (p % 64) & 1) == 0) {
        ++p;
        continue;
      }
      size_t q = p + 1;
      while (q <= high_ && (bits_[q / 64] >> (q % 64) & 1) != 0) ++q;
      const size_t begin = p * page_;
      const size_t end = q * page_ < size ? q * page_ : size;
      if (begin < end) status = copy(begin, end);
      p = q;
    }
  }
  if (!status.ok()) {
    all_ = true;
    return status;
  }
  Clear();
  return absl::OkStatus();
}

}  // namespace tandem::match::ccm
