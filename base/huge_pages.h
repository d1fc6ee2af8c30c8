// File: huge_pages.h
//
// What the kernel made of a request for transparent huge pages (THP): how many bytes of one
// mapping are backed by 2 MiB pages, read from /proc/self/smaps, and the system's THP setting.
// madvise(MADV_HUGEPAGE) is advice; these say whether it was taken, so a server can log it and a
// benchmark can report it beside its timings.
//
//   std::optional<uint64_t> huge = base::HugePageBytes(data);  // nullopt: no such mapping
//   LOG(INFO) << "THP: " << base::TransparentHugePagesMode();  // "always", "madvise" or "never"
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tandem::base {

// Bytes of the mapping that holds `address` backed by huge pages (smaps' AnonHugePages,
// ShmemPmdMapped and FilePmdMapped). nullopt when /proc/self/smaps cannot be read or no mapping
// holds `address`.
std::optional<uint64_t> HugePageBytes(const void* address);

// The system's THP mode, the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
// ("always", "madvise" or "never"); "unavailable" when the file is missing (no THP in the kernel).
std::string TransparentHugePagesMode();

}  // namespace tandem::base
