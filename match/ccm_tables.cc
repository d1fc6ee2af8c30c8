#include "match/ccm_tables.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tandem::match::ccm {
namespace {

constexpr uint32_t kMinRowCapacity = 4;  // capacities are powers of two from here
constexpr size_t kInitialPool = 4096;
constexpr size_t kInitialFilters = 1024;
constexpr size_t kInitialStrings = 4096;
// Positions are 32-bit: with at most 2^29 live constraints, a pool packed to twice that plus a
// doubled row stays below 2^32.
constexpr size_t kMaxConstraints = size_t{1} << 29;
constexpr size_t kMaxFilters = size_t{1} << 28;

}  // namespace

void DirtyPages::Mark(size_t begin, size_t end) {
  if (begin >= end) return;
  const size_t first = begin / page_;
  const size_t last = (end - 1) / page_;
  if (bits_.size() <= last / 64) bits_.resize(last / 64 + 1, 0);
  for (size_t p = first; p <= last; ++p) bits_[p / 64] |= uint64_t{1} << (p % 64);
  low_ = std::min(low_, first);
  high_ = std::max(high_, last);
}

void DirtyPages::Clear() {
  if (low_ <= high_) {
    std::fill(bits_.begin() + low_ / 64, bits_.begin() + high_ / 64 + 1, 0);
  }
  low_ = SIZE_MAX;
  high_ = 0;
  all_ = false;
}

CcmTables::CcmTables(size_t page_bytes)
    : pool_(kInitialPool),
      index_in_filter_(kInitialPool),
      filters_(kInitialFilters),
      places_(kInitialFilters),
      strings_(kInitialStrings),
      dirty_pool_(std::max<size_t>(page_bytes / sizeof(DeviceConstraint), 1)),
      dirty_strings_(std::max<size_t>(page_bytes, 1)),
      dirty_filters_(std::max<size_t>(page_bytes / sizeof(uint32_t), 1)) {}

absl::Status CcmTables::CheckFilter(const Filter& filter) {
  if (filter.constraints.empty() || filter.constraints.size() > kMaxConstraintsPerFilter) {
    return absl::InvalidArgumentError(absl::StrCat("a filter has ", filter.constraints.size(),
                                                   " constraints; 1 to ", kMaxConstraintsPerFilter,
                                                   " are allowed"));
  }
  for (const Constraint& c : filter.constraints) {
    if (static_cast<int>(c.op) >= kNumOps) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown operator ", static_cast<int>(c.op), " on ", c.name));
    }
    if (c.value.type != ValueType::kInt && c.value.type != ValueType::kDouble &&
        c.value.type != ValueType::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown value type ", static_cast<int>(c.value.type), " on ", c.name));
    }
    if (c.value.type == ValueType::kDouble && std::isnan(c.value.d)) {
      return absl::InvalidArgumentError(absl::StrCat("a NaN value on ", c.name));
    }
    if (c.value.type == ValueType::kString && c.value.s.size() > kMaxStringBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a string of ", c.value.s.size(), " bytes on ",
                                                     c.name, "; at most ", kMaxStringBytes,
                                                     " are allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status CcmTables::CheckRoom(size_t filters, size_t constraints) const {
  if (live_constraints_ + constraints > kMaxConstraints) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the GPU matcher holds at most ", kMaxConstraints, " constraints"));
  }
  const size_t new_ids = filters - std::min(filters, free_filters_.size());
  if (filters_end_ + new_ids > kMaxFilters) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the GPU matcher holds at most ", kMaxFilters, " filters"));
  }
  return absl::OkStatus();
}

uint32_t CcmTables::AddFilter(InterfaceId interface, const Filter& filter) {
  uint32_t id;
  if (!free_filters_.empty()) {
    id = free_filters_.back();
    free_filters_.pop_back();
  } else {
    if (filters_end_ == filters_.size()) GrowFilters();
    id = static_cast<uint32_t>(filters_end_++);
  }
  std::vector<Place>& places = places_[id];
  places.clear();
  places.reserve(filter.constraints.size());
  for (size_t k = 0; k < filter.constraints.size(); ++k) {
    const Constraint& c = filter.constraints[k];
    DeviceConstraint element;
    element.filter = id;
    uint32_t r;
    if (c.op == Op::kContains) {
      r = RowFor(/*term=*/true, c.value.s);
      element.value = 0;
      element.meta = PackMeta(Op::kContains, ValueType::kString, 0);
    } else {
      r = RowFor(/*term=*/false, c.name);
      uint32_t length = 0;
      switch (c.value.type) {
        case ValueType::kInt:
          element.value = static_cast<uint64_t>(c.value.i);
          break;
        case ValueType::kDouble:
          element.value = DoubleBits(c.value.d);
          break;
        case ValueType::kString:
          element.value = InternString(c.value.s);
          length = static_cast<uint32_t>(c.value.s.size());
          break;
      }
      element.meta = PackMeta(c.op, c.value.type, length);
    }
    places.push_back(Place{r, Append(r, element, static_cast<uint8_t>(k))});
  }
  filters_[id] = PackFilter(interface, static_cast<uint32_t>(filter.constraints.size()));
  dirty_filters_.Mark(id, id + 1);
  if (interface >= interface_capacity_) interface_capacity_ = std::bit_ceil(interface + 1);
  ++live_filters_;
  live_constraints_ += filter.constraints.size();
  return id;
}

void CcmTables::RemoveFilter(uint32_t id) {
  std::vector<Place>& places = places_[id];
  // Read each place afresh: moving a row's last element into a hole may move this filter's own.
  for (size_t k = 0; k < places.size(); ++k) RemoveAt(places[k].row, places[k].index);
  live_constraints_ -= places.size();
  places.clear();
  filters_[id] = 0;  // SizeF 0: no constraint refers to it any more, and it could never complete
  dirty_filters_.Mark(id, id + 1);
  free_filters_.push_back(id);
  --live_filters_;
}

uint32_t CcmTables::FindNameRow(absl::string_view name) const {
  const auto it = names_.find(name);
  return it == names_.end() ? kNoRow : it->second;
}

uint32_t CcmTables::FindTermRow(absl::string_view term) const {
  const auto it = terms_.find(term);
  return it == terms_.end() ? kNoRow : it->second;
}

uint32_t CcmTables::RowFor(bool term, absl::string_view key) {
  absl::flat_hash_map<std::string, uint32_t>& map = term ? terms_ : names_;
  if (const auto it = map.find(key); it != map.end()) return it->second;
  // Space first: packing the pool moves the live rows, and this one is not live yet.
  const uint32_t begin = AllocatePool(kMinRowCapacity);
  uint32_t r;
  if (!free_rows_.empty()) {
    r = free_rows_.back();
    free_rows_.pop_back();
  } else {
    r = static_cast<uint32_t>(rows_.size());
    rows_.emplace_back();
  }
  rows_[r] = Row{begin, 0, kMinRowCapacity, term, std::string(key)};
  reserved_ += kMinRowCapacity;
  map.emplace(std::string(key), r);
  return r;
}

void CcmTables::FreeRow(uint32_t r) {
  Row& row = rows_[r];
  (row.term ? terms_ : names_).erase(row.key);
  reserved_ -= row.capacity;  // its range is a hole until the pool is packed
  row = Row{};
  free_rows_.push_back(r);
}

uint32_t CcmTables::Append(uint32_t r, const DeviceConstraint& element, uint8_t index_in_filter) {
  if (rows_[r].size == rows_[r].capacity) GrowRow(r);
  Row& row = rows_[r];
  const uint32_t index = row.size++;
  const size_t pos = size_t{row.begin} + index;
  pool_[pos] = element;
  index_in_filter_[pos] = index_in_filter;
  dirty_pool_.Mark(pos, pos + 1);
  return index;
}

void CcmTables::RemoveAt(uint32_t r, uint32_t index) {
  Row& row = rows_[r];
  const size_t pos = size_t{row.begin} + index;
  const size_t last = size_t{row.begin} + row.size - 1;
  const DeviceConstraint removed = pool_[pos];
  if (!row.term && MetaType(removed.meta) == ValueType::kString) {
    ReleaseString(removed.value, MetaLength(removed.meta));
  }
  if (pos != last) {
    pool_[pos] = pool_[last];
    index_in_filter_[pos] = index_in_filter_[last];
    places_[pool_[pos].filter][index_in_filter_[pos]].index = index;
    dirty_pool_.Mark(pos, pos + 1);
  }
  // The element past the new size stays on the device: launches read a row only up to its size.
  if (--row.size == 0) FreeRow(r);
}

void CcmTables::GrowRow(uint32_t r) {
  const uint32_t capacity = rows_[r].capacity * 2;
  const uint32_t begin = AllocatePool(capacity);  // may pack the pool, moving row r
  Row& row = rows_[r];
  std::copy_n(pool_.begin() + row.begin, row.size, pool_.begin() + begin);
  std::copy_n(index_in_filter_.begin() + row.begin, row.size, index_in_filter_.begin() + begin);
  dirty_pool_.Mark(begin, size_t{begin} + row.size);
  reserved_ += capacity - row.capacity;
  row.begin = begin;
  row.capacity = capacity;
}

uint32_t CcmTables::AllocatePool(uint32_t elements) {
  if (pool_end_ + elements > pool_.size()) {
    // Pack when most of the pool is holes that moved and freed rows left: each packing, O(pool),
    // follows at least as many elements allocated since the last.
    if (pool_end_ - reserved_ > pool_end_ / 2) PackPool();
    if (pool_end_ + elements > pool_.size()) {
      // The device copy is reallocated and copied whole once (the matcher sees the capacity).
      const size_t size = std::max(pool_.size() * 2, pool_end_ + elements);
      pool_.resize(size);
      index_in_filter_.resize(size);
    }
  }
  const size_t begin = pool_end_;
  pool_end_ += elements;
  return static_cast<uint32_t>(begin);
}

void CcmTables::PackPool() {
  std::vector<uint32_t> order;
  order.reserve(rows_.size());
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    if (rows_[r].capacity > 0) order.push_back(r);
  }
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return rows_[a].begin < rows_[b].begin; });
  // Capacities only shrink (to the power of two above the size), so each row moves down and a
  // forward copy never overwrites what it has yet to read.
  size_t cursor = 0;
  for (uint32_t r : order) {
    Row& row = rows_[r];
    const uint32_t capacity = std::max(kMinRowCapacity, std::bit_ceil(row.size));
    std::copy_n(pool_.begin() + row.begin, row.size, pool_.begin() + cursor);
    std::copy_n(index_in_filter_.begin() + row.begin, row.size, index_in_filter_.begin() + cursor);
    row.begin = static_cast<uint32_t>(cursor);
    row.capacity = capacity;
    cursor += capacity;
  }
  pool_end_ = cursor;
  reserved_ = cursor;
  dirty_pool_.MarkAll();
}

uint64_t CcmTables::InternString(absl::string_view s) {
  if (s.empty()) return 0;  // no byte is ever read
  if (const auto it = interned_.find(s); it != interned_.end()) {
    ++it->second.refs;
    return it->second.offset;
  }
  if (strings_end_ + s.size() > strings_.size()) {
    if (dead_string_bytes_ > strings_end_ / 2) PackStrings();
    if (strings_end_ + s.size() > strings_.size()) {
      strings_.resize(std::max(strings_.size() * 2, strings_end_ + s.size()));
    }
  }
  const uint64_t offset = strings_end_;
  std::memcpy(strings_.data() + offset, s.data(), s.size());
  strings_end_ += s.size();
  dirty_strings_.Mark(offset, strings_end_);
  interned_.emplace(std::string(s), InternedString{offset, 1});
  return offset;
}

void CcmTables::ReleaseString(uint64_t offset, uint32_t length) {
  if (length == 0) return;
  const auto it = interned_.find(absl::string_view(strings_.data() + offset, length));
  if (--it->second.refs > 0) return;
  interned_.erase(it);
  dead_string_bytes_ += length;
}

void CcmTables::PackStrings() {
  std::vector<char> packed(strings_.size());
  absl::flat_hash_map<uint64_t, uint64_t> moved;  // old offset -> new; empty strings never here
  moved.reserve(interned_.size());
  size_t end = 0;
  for (auto& [bytes, entry] : interned_) {
    std::memcpy(packed.data() + end, bytes.data(), bytes.size());
    moved.emplace(entry.offset, end);
    entry.offset = end;
    end += bytes.size();
  }
  for (const Row& row : rows_) {
    if (row.capacity == 0 || row.term) continue;
    for (size_t pos = row.begin; pos < size_t{row.begin} + row.size; ++pos) {
      DeviceConstraint& c = pool_[pos];
      if (MetaType(c.meta) == ValueType::kString && MetaLength(c.meta) > 0) {
        c.value = moved.at(c.value);
      }
    }
  }
  strings_ = std::move(packed);
  strings_end_ = end;
  dead_string_bytes_ = 0;
  dirty_strings_.MarkAll();
  dirty_pool_.MarkAll();
}

void CcmTables::GrowFilters() {
  const size_t size = filters_.size() * 2;
  filters_.resize(size, 0);
  places_.resize(size);
}

size_t CcmTables::host_bytes() const {
  size_t bytes = pool_.capacity() * sizeof(DeviceConstraint) + index_in_filter_.capacity() +
                 rows_.capacity() * sizeof(Row) + filters_.capacity() * sizeof(uint32_t) +
                 places_.capacity() * sizeof(std::vector<Place>) +
                 live_constraints_ * sizeof(Place) + strings_.capacity();
  // The maps: a slot and a key per entry (their exact overhead is abseil's).
  for (const auto* map : {&names_, &terms_}) {
    bytes += map->capacity() * (sizeof(std::string) + sizeof(uint32_t) + 1);
  }
  bytes += interned_.capacity() * (sizeof(std::string) + sizeof(InternedString) + 1);
  for (const Row& row : rows_) bytes += row.key.capacity();
  return bytes + strings_end_;  // the interned keys copy the live strings
}

absl::Status CcmTables::CheckInvariants() const {
  auto broken = [](auto&&... what) { return absl::InternalError(absl::StrCat(what...)); };
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // live rows' [begin, begin + capacity)
  size_t live = 0, reserved = 0;
  size_t string_refs = 0;
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    const Row& row = rows_[r];
    if (row.capacity == 0) continue;
    const auto& map = row.term ? terms_ : names_;
    const auto it = map.find(row.key);
    if (it == map.end() || it->second != r) {
      return broken("row ", r, " (", row.key, ") is not mapped");
    }
    if (row.size == 0 || row.size > row.capacity || !std::has_single_bit(row.capacity) ||
        size_t{row.begin} + row.capacity > pool_end_) {
      return broken("row ", r, " has size ", row.size, ", capacity ", row.capacity, " at ",
                    row.begin, " of a pool used to ", pool_end_);
    }
    ranges.emplace_back(row.begin, row.begin + row.capacity);
    live += row.size;
    reserved += row.capacity;
    for (uint32_t index = 0; index < row.size; ++index) {
      const size_t pos = size_t{row.begin} + index;
      const DeviceConstraint& c = pool_[pos];
      if ((MetaOp(c.meta) == Op::kContains) != row.term) {
        return broken("row ", r, " element ", index, " has operator ",
                      static_cast<int>(MetaOp(c.meta)));
      }
      if (c.filter >= filters_end_ || filters_[c.filter] == 0) {
        return broken("row ", r, " element ", index, " belongs to free filter ", c.filter);
      }
      const std::vector<Place>& places = places_[c.filter];
      const uint8_t k = index_in_filter_[pos];
      if (k >= places.size() || places[k].row != r || places[k].index != index) {
        return broken("filter ", c.filter, " does not place its constraint ", int{k}, " at row ", r,
                      " index ", index);
      }
      if (!row.term && MetaType(c.meta) == ValueType::kString && MetaLength(c.meta) > 0) {
        const absl::string_view s(strings_.data() + c.value, MetaLength(c.meta));
        const auto interned = interned_.find(s);
        if (c.value + MetaLength(c.meta) > strings_end_ || interned == interned_.end() ||
            interned->second.offset != c.value) {
          return broken("row ", r, " element ", index, " points to a string not interned there");
        }
        ++string_refs;
      }
    }
  }
  if (names_.size() + terms_.size() != ranges.size()) {
    return broken(names_.size() + terms_.size(), " keys map ", ranges.size(), " live rows");
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) return broken("two rows overlap");
  }
  if (live != live_constraints_ || reserved != reserved_) {
    return broken(live, " constraints in rows of ", reserved, " slots; counted ", live_constraints_,
                  " and ", reserved_);
  }
  size_t filters = 0;
  for (size_t f = 0; f < filters_end_; ++f) {
    if (filters_[f] == 0) {
      if (!places_[f].empty()) return broken("free filter ", f, " has places");
      continue;
    }
    ++filters;
    if (FilterSize(filters_[f]) != places_[f].size()) {
      return broken("filter ", f, " has SizeF ", FilterSize(filters_[f]), " and ",
                    places_[f].size(), " places");
    }
    if (FilterInterface(filters_[f]) >= interface_capacity_) {
      return broken("filter ", f, " has interface ", FilterInterface(filters_[f]));
    }
  }
  if (filters != live_filters_ || filters + free_filters_.size() != filters_end_) {
    return broken(filters, " live filters and ", free_filters_.size(), " free ids below ",
                  filters_end_, "; counted ", live_filters_);
  }
  size_t refs = 0;
  for (const auto& [bytes, entry] : interned_) refs += entry.refs;
  if (refs != string_refs)
    return broken(refs, " string references counted, ", string_refs, " held");
  return absl::OkStatus();
}

}  // namespace tandem::match::ccm
