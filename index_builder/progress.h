// File: progress.h
//
// Progress of a long build on stderr. On a terminal, one line refreshed twice a second:
//   reading   42.0%  1,234,567 documents  51,200 docs/s  18.4 MB/s  ETA 1m 12s
// Elsewhere (a log, a pipe), one line every `log_interval` (5 s by default), since a refreshing
// line would be a wall of carriage returns. Each report names its phase; the percent and the ETA
// come from `done` over `total` in that phase (the ETA from the phase's own rate so far), and are
// left out when the total is unknown (0).
//
//   Progress progress(/*enabled=*/!quiet);
//   if (progress.Due()) progress.Report("reading", bytes_read, bytes_total, "1,234 documents");
//   progress.Clear();  // before the summary line
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Progress(bool enabled, Clock::duration log_interval = std::chrono::seconds(5));
  // The same, as if stderr were (or were not) a terminal: for tests.
  Progress(bool enabled, bool terminal, Clock::duration log_interval);

  // True when a report is due now (always false when disabled).
  bool Due();
  // Reports `done` of `total` (any unit; total 0 when unknown) in `phase`, with `detail` after.
  void Report(absl::string_view phase, double done, double total, absl::string_view detail);
  // Ends a refreshing line.
  void Clear();
  ~Progress() { Clear(); }

  // The line Report would print at `now`, without the line end: for tests.
  std::string Line(absl::string_view phase, double done, double total, absl::string_view detail,
                   Clock::time_point now);

 private:
  bool enabled_;
  bool terminal_;
  bool shown_ = false;
  Clock::duration interval_;
  Clock::time_point last_;
  Clock::time_point start_;
  std::string phase_;
  Clock::time_point phase_start_;
};

// "1m 12s", "3h 05m", "42s".
std::string FormatDuration(double seconds);

}  // namespace tandem::index_builder
