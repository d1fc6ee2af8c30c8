#include "base/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tandem::base {

void NameThread(const char* name) {
  // pthread_setname_np refuses names longer than 15 characters instead of truncating them.
  const std::string truncated(name, std::min<size_t>(std::strlen(name), 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

}  // namespace tandem::base
