// File: stale_files.h
//
// Temporary files and directories named after the process that made them, so that a later process
// can tell a killed one's leftovers from a live one's work in progress and remove only the former
// (a build killed mid-way leaves its half-written index and spill directories behind otherwise).
//
//   const std::string tmp = dir + PidTaggedSuffix(".tmp-");   // "/srv/idx.tmp-4242-9f3a2c"
//   RemoveStaleSiblings(parent, "idx.tmp-");                  // those of processes now gone
#pragma once

#include <string>
#include <string_view>

namespace tandem::base {

// `prefix` + this process's id + "-" + 12 random hex digits.
std::string PidTaggedSuffix(std::string_view prefix);

// Removes (recursively) every entry of `dir` named `prefix` + PID + "-" + anything whose process no
// longer exists. Entries of live processes, of other names, or whose PID does not parse are left
// alone. Returns how many were removed; errors (unreadable directory, a failed removal) skip the
// entry.
int RemoveStaleSiblings(const std::string& dir, std::string_view prefix);

}  // namespace tandem::base
