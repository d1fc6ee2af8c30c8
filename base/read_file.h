// File: read_file.h
//
// The whole contents of a small file (a certificate, a key, a credentials file), or NOT_FOUND
// naming it as `what`:
//   TANDEM_ASSIGN_OR_RETURN(std::string pem, base::ReadFile(path, "TLS certificate"));
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem::base {

inline absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  if (in) contents << in.rdbuf();
  if (!in || in.bad())
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "'"));
  return contents.str();
}

}  // namespace tandem::base
