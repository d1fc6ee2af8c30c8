#include "base/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tandem::base {
namespace {

// The thread id setpriority(2) takes for one thread (PRIO_PROCESS with a TID: Linux only).
id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

}  // namespace

absl::StatusOr<int> ThreadNice() {
  errno = 0;  // -1 is a valid nice value: errno tells an error apart
  const int nice = getpriority(PRIO_PROCESS, ThreadId());
  if (nice == -1 && errno != 0) {
    return absl::InternalError(absl::StrCat("getpriority: ", std::strerror(errno)));
  }
  return nice;
}

absl::Status LowerThreadPriority(int levels) {
  if (levels < 0 || levels > 39) {
    return absl::InvalidArgumentError(
        absl::StrCat("a thread's priority is lowered by 0 to 39 nice levels, got ", levels));
  }
  if (levels == 0) return absl::OkStatus();
  absl::StatusOr<int> nice = ThreadNice();
  if (!nice.ok()) return nice.status();
  const int target = std::min(19, *nice + levels);
  if (setpriority(PRIO_PROCESS, ThreadId(), target) != 0) {
    return absl::InternalError(
        absl::StrCat("setpriority(nice ", target, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status CheckThreadPriority(const ThreadPriority& priority) {
  if (!priority.idle && (priority.nice < 0 || priority.nice > 19)) {
    return absl::InvalidArgumentError(absl::StrCat("nice levels are 0 to 19, got ", priority.nice));
  }
  return absl::OkStatus();
}

absl::StatusOr<ThreadPriority> ParseThreadPriority(absl::string_view text) {
  if (text == "idle") return ThreadPriority{.idle = true};
  int nice = 0;
  if (absl::SimpleAtoi(text, &nice) && nice >= 0 && nice <= 19) return ThreadPriority{.nice = nice};
  return absl::InvalidArgumentError(absl::StrCat(
      "a thread priority is idle or a number of nice levels 0 to 19, got '", text, "'"));
}

std::string ThreadPriorityName(const ThreadPriority& priority) {
  return priority.idle ? "idle" : absl::StrCat("nice +", priority.nice);
}

bool ThreadIsIdle() {
  int policy = 0;
  sched_param param{};
  return pthread_getschedparam(pthread_self(), &policy, &param) == 0 && policy == SCHED_IDLE;
}

absl::Status LowerThreadPriority(const ThreadPriority& priority) {
  if (absl::Status valid = CheckThreadPriority(priority); !valid.ok()) return valid;
  if (!priority.idle) return LowerThreadPriority(priority.nice);
  const sched_param param{.sched_priority = 0};
  if (const int error = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param); error != 0) {
    return absl::InternalError(absl::StrCat("SCHED_IDLE: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace tandem::base
