// File: cpu_relax.h
//
// One pause of a spin-wait: lets the core's other hardware thread run and saves power.
//
//   while (!ready.load(std::memory_order_acquire)) base::CpuRelax();
#pragma once

namespace tandem::base {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace tandem::base
