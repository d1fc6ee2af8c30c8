// What `tandem-index inspect` prints of a live index (live/live_index.h): its commit generation,
// each segment with its documents and deletes, and the live documents in all. An index no write
// has reached says so.
#pragma once

#include <string>

namespace tandem {

// Prints to standard output; returns the exit code (1 with a message on standard error when the
// commit point or a segment cannot be read).
int InspectLive(const std::string& dir);

}  // namespace tandem
