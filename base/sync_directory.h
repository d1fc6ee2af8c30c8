// File: sync_directory.h
//
// Makes a directory's entries durable: after a file is renamed into a directory (or created or
// removed in it), the rename survives a crash only once the directory itself is fsynced.
//
//   std::rename(tmp.c_str(), path.c_str());
//   TANDEM_RETURN_IF_ERROR(base::SyncDirectory(dir));
#pragma once

#include <string>

#include "absl/status/status.h"

namespace tandem::base {

// Fsyncs `dir`; the error (from open or fsync, with errno's text) names it.
absl::Status SyncDirectory(const std::string& dir);

}  // namespace tandem::base
