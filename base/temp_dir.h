// File: temp_dir.h
//
// A fresh directory under the system's temporary directory, removed with everything in it when the
// object goes away. For tests and for benchmarks that build an index inside their run.
//
//   base::TempDir dir;
//   BuildIndex(docs, dir.path() + "/index");
#pragma once

#include <string>

namespace tandem::base {

class TempDir {
 public:
  TempDir();  // aborts when no directory can be made: callers have nowhere else to go
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tandem::base
