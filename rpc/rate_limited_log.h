// File: rate_limited_log.h
//
// Log lines a caller can provoke at will (a malformed request, a library's complaint about one)
// must not flood the node's log. A RateLimitedLog passes at most one line per interval and counts
// the lines it drops; the count rides on the next line it passes.
//
//   RateLimitedLog log(absl::Minutes(1), sink);
//   log.Log("tandem-server: a request did not parse");
//   // a minute later, after 41 more: "... did not parse (41 similar lines dropped before this
//   one)"
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tandem::rpc {

// Where the node's few log lines go (one line each, no newline); null: standard error.
using LogSink = std::function<void(absl::string_view line)>;

// The sink itself, or one that writes to standard error when it is null.
LogSink SinkOrStderr(LogSink sink);

class RateLimitedLog {
 public:
  using Clock = std::function<absl::Time()>;
  RateLimitedLog(absl::Duration interval, LogSink sink, Clock clock = &absl::Now);

  // Thread-safe.
  void Log(absl::string_view line);
  uint64_t dropped_total() const;

 private:
  const absl::Duration interval_;
  const LogSink sink_;
  const Clock clock_;
  mutable absl::Mutex mu_;
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;  // since the last line passed
  uint64_t dropped_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem::rpc
