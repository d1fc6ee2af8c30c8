// File: sanitizers.h
//
// Whether this translation unit is built with AddressSanitizer (deploy/asan-test.sh, the fuzzers),
// for the few checks that mean something else under it: a resident size that includes ASan's
// quarantine, or a time bound on a machine where instrumented threads run a few times slower.
//
//   const absl::Duration bound = base::kAddressSanitizer ? absl::Milliseconds(450)
//                                                        : absl::Milliseconds(150);
#pragma once

namespace tandem::base {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace tandem::base
