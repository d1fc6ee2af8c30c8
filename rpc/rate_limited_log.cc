#include "rpc/rate_limited_log.h"

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem::rpc {

LogSink SinkOrStderr(LogSink sink) {
  if (sink != nullptr) return sink;
  return [](absl::string_view line) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  };
}

RateLimitedLog::RateLimitedLog(absl::Duration interval, LogSink sink, Clock clock)
    : interval_(interval), sink_(SinkOrStderr(std::move(sink))), clock_(std::move(clock)) {}

void RateLimitedLog::Log(absl::string_view line) {
  uint64_t dropped = 0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_();
    if (now < next_) {
      ++dropped_;
      ++dropped_total_;
      return;
    }
    next_ = now + interval_;
    dropped = std::exchange(dropped_, 0);
  }
  // Outside the lock: a slow sink delays only this caller.
  if (dropped == 0) {
    sink_(line);
  } else {
    sink_(absl::StrCat(line, " (", dropped, " similar lines dropped before this one)"));
  }
}

uint64_t RateLimitedLog::dropped_total() const {
  absl::MutexLock lock(&mu_);
  return dropped_total_;
}

}  // namespace tandem::rpc
