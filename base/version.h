// File: version.h
//
// The version of this build and the commit it was built from, for --version, the tandem_build_info
// metric, the index manifest and every benchmark's JSON. The commit ends in "-dirty" when the tree
// had uncommitted changes, and is "unknown" outside a git checkout.
//
//   std::printf("tandem-server %s (%s)\n", base::Version(), base::Commit());
#pragma once

namespace tandem::base {

const char* Version();  // "0.1.0"
const char* Commit();   // "087c005e1d2f", "087c005e1d2f-dirty" or "unknown"

}  // namespace tandem::base
