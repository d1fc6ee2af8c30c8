// File: scratch_arena.h
//
// A bump allocator over one device allocation made when the engine starts, so the query path never
// calls cudaMalloc: each query context owns one arena, takes its temporaries from it and rolls back
// when a stage ends. Running out is RESOURCE_EXHAUSTED (the scheduler then runs the query on the
// CPU). Compiles as C++17 (nvcc) and C++20 (g++); host code only.
//
//   ScratchArena arena(device_base, bytes);
//   const size_t mark = arena.mark();
//   TANDEM_ASSIGN_OR_RETURN(float* acc, arena.Take<float>(num_docs));
//   arena.Rollback(mark);
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tandem::gpu {

class ScratchArena {
 public:
  // Every allocation is aligned to this (cudaMalloc's alignment; the decoders need 16 bytes).
  static constexpr size_t kAlignment = 256;

  ScratchArena() = default;
  ScratchArena(void* base, size_t bytes) : base_(static_cast<char*>(base)), capacity_(bytes) {}

  template <typename T>
  absl::StatusOr<T*> Take(size_t count) {
    const size_t bytes = (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    if (count > capacity_ / sizeof(T) || bytes > capacity_ - used_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the query needs more GPU scratch memory than its context holds (",
                       capacity_, " bytes; ", used_, " in use, ", bytes, " more asked)"));
    }
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += bytes;
    if (used_ > high_water_) high_water_ = used_;
    return p;
  }

  size_t mark() const { return used_; }
  void Rollback(size_t mark) { used_ = mark; }
  size_t capacity() const { return capacity_; }
  size_t high_water() const { return high_water_; }

 private:
  char* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  size_t high_water_ = 0;
};

}  // namespace tandem::gpu
