#include "base/temp_dir.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace tandem::base {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("tandem: cannot create a temporary directory");
    std::abort();
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace tandem::base
