#include "fuzz/fuzz_util.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/temp_dir.h"

namespace tandem::fuzz {

const std::string& ScratchDir() {
  static const base::TempDir dir;  // removed by its destructor when the fuzzer exits
  return dir.path();
}

std::string WriteScratchFile(absl::string_view name, absl::string_view bytes) {
  std::string path = ScratchDir() + "/" + std::string(name);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  TANDEM_FUZZ_CHECK(fd >= 0);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    TANDEM_FUZZ_CHECK(n > 0);
    done += static_cast<size_t>(n);
  }
  TANDEM_FUZZ_CHECK(::close(fd) == 0);
  return path;
}

}  // namespace tandem::fuzz
