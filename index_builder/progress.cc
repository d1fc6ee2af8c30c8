#include "index_builder/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::index_builder {

Progress::Progress(bool enabled, Clock::duration log_interval)
    : Progress(enabled, ::isatty(STDERR_FILENO) != 0, log_interval) {}

Progress::Progress(bool enabled, bool terminal, Clock::duration log_interval)
    : enabled_(enabled),
      terminal_(terminal),
      interval_(terminal ? std::chrono::milliseconds(500) : log_interval),
      last_(Clock::now()),
      start_(last_),
      phase_start_(last_) {}

bool Progress::Due() {
  if (!enabled_) return false;
  const auto now = Clock::now();
  if (now - last_ < interval_) return false;
  last_ = now;
  return true;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<uint64_t>(std::llround(seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm %02ds", s / 60, s % 60);
  return absl::StrFormat("%dh %02dm", s / 3600, s / 60 % 60);
}

std::string Progress::Line(absl::string_view phase, double done, double total,
                           absl::string_view detail, Clock::time_point now) {
  // The first phase began with the Progress; a later one at its first report.
  if (phase != phase_) {
    if (!phase_.empty()) phase_start_ = now;
    phase_ = std::string(phase);
  }
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = absl::StrFormat("%7s  %-8s", FormatDuration(elapsed), phase);
  if (total > 0) {
    const double fraction = std::min(1.0, std::max(0.0, done / total));
    absl::StrAppendFormat(&line, "  %5.1f%%", 100 * fraction);
    const double in_phase = std::chrono::duration<double>(now - phase_start_).count();
    if (fraction > 0 && fraction < 1 && in_phase >= 1) {
      absl::StrAppend(&line, "  ETA ", FormatDuration(in_phase * (1 - fraction) / fraction));
    }
  }
  if (!detail.empty()) absl::StrAppend(&line, "  ", detail);
  return line;
}

void Progress::Report(absl::string_view phase, double done, double total,
                      absl::string_view detail) {
  if (!enabled_) return;
  const std::string line = Line(phase, done, total, detail, Clock::now());
  if (terminal_) {
    std::fprintf(stderr, "\r%-110s", line.c_str());
    shown_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void Progress::Clear() {
  if (enabled_ && terminal_ && shown_) std::fprintf(stderr, "\r%*s\r", 110, "");
  shown_ = false;
}

}  // namespace tandem::index_builder
