// File: huge_page_array.h
//
// A fixed-size array for large tables read at random positions, such as a value per document.
// From 2 MiB up it is placed in 2 MiB-aligned memory that the kernel is asked to back with
// transparent huge pages (madvise(MADV_HUGEPAGE), which works where THP is "always" or
// "madvise"): on 4 KiB pages a read of a random entry of a 100 MB table misses the TLB as well as
// the cache, and the page walk adds to every load. Where the kernel declines, it is ordinary
// memory.
//
//   HugePageArray<float> norms(num_docs);
//   for (uint32_t d = 0; d < num_docs; ++d) norms[d] = ...;
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace tandem {

template <typename T>
class HugePageArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  HugePageArray() = default;
  // n elements, uninitialized.
  explicit HugePageArray(size_t n) : size_(n) {
    if (n == 0) return;
    const size_t bytes = n * sizeof(T);
    const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : alignof(std::max_align_t);
    const size_t rounded = (bytes + align - 1) / align * align;  // aligned_alloc wants a multiple
    void* p = std::aligned_alloc(align, rounded);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == kHugePageBytes) ::madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure is fine
#endif
    data_.reset(static_cast<T*>(p));
  }

  HugePageArray(HugePageArray&& other) noexcept
      : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
  HugePageArray& operator=(HugePageArray&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  size_t size_ = 0;
};

}  // namespace tandem
