#include "live/commit_point.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/sync_directory.h"
#include "index/file_format.h"
#include "nlohmann/json.hpp"

namespace tandem::live {

namespace fs = std::filesystem;

namespace {

constexpr absl::string_view kPrefix = "segments_";

// The generation a commit point's file name carries; nullopt for other names.
std::optional<uint64_t> GenerationOf(absl::string_view name) {
  if (!absl::StartsWith(name, kPrefix)) return std::nullopt;
  uint64_t g = 0;
  if (!absl::SimpleAtoi(name.substr(kPrefix.size()), &g)) return std::nullopt;
  return g;
}

}  // namespace

std::string CommitPoint::ToJson() const {
  nlohmann::json j;
  j["generation"] = generation;
  j["next_segment"] = next_segment;
  j["log_sequence"] = log_sequence;
  j["segments"] = nlohmann::json::array();
  for (const CommittedSegment& s : segments) {
    j["segments"].push_back({{"name", s.name}, {"deleted", s.deleted}});
  }
  j["versions"] = nlohmann::json::object();
  for (const auto& [id, v] : versions) j["versions"][id] = {v.version, v.deleted};
  return j.dump();
}

absl::StatusOr<CommitPoint> CommitPoint::FromJson(absl::string_view json) {
  CommitPoint c;
  try {
    const nlohmann::json j = nlohmann::json::parse(json);
    c.generation = j.at("generation").get<uint64_t>();
    c.next_segment = j.at("next_segment").get<uint64_t>();
    c.log_sequence = j.at("log_sequence").get<uint64_t>();
    for (const nlohmann::json& s : j.at("segments")) {
      CommittedSegment& segment = c.segments.emplace_back();
      segment.name = s.at("name").get<std::string>();
      segment.deleted = s.at("deleted").get<std::vector<uint32_t>>();
      const bool named = segment.name == "." ||
                         (absl::StartsWith(segment.name, "_") &&
                          segment.name.find_first_not_of("0123456789", 1) == std::string::npos &&
                          segment.name.size() > 1);
      if (!named) return absl::DataLossError(absl::StrCat("bad segment name '", segment.name, "'"));
    }
    for (const auto& [id, v] : j.at("versions").items()) {
      c.versions[id] = {v.at(0).get<uint64_t>(), v.at(1).get<bool>()};
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("not a commit point: ", e.what()));
  }
  if (c.segments.empty()) return absl::DataLossError("a commit point names no segment");
  return c;
}

absl::StatusOr<std::optional<CommitPoint>> ReadLatestCommitPoint(const std::string& dir) {
  std::optional<uint64_t> newest;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::optional<uint64_t> g = GenerationOf(e.path().filename().string());
    if (g && (!newest || *g > *newest)) newest = g;
  }
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  if (!newest) return std::nullopt;
  const std::string path = absl::StrCat(dir, "/", kPrefix, *newest);
  absl::StatusOr<std::string> file = base::ReadFile(path, "commit point");
  // It was named in the listing just now: a commit point that cannot be read is damage.
  if (!file.ok()) return absl::DataLossError(file.status().message());
  TANDEM_ASSIGN_OR_RETURN(absl::string_view payload,
                          index::VerifyFrame(*file, index::FileKind::kCommitPoint, path));
  absl::StatusOr<CommitPoint> commit = CommitPoint::FromJson(payload);
  if (!commit.ok()) {
    return absl::DataLossError(
        absl::StrCat("commit point '", path, "': ", commit.status().message()));
  }
  if (commit->generation != *newest) {
    return absl::DataLossError(
        absl::StrCat("commit point '", path, "' holds generation ", commit->generation));
  }
  return std::optional<CommitPoint>(*std::move(commit));
}

absl::Status WriteCommitPointFile(const std::string& dir, const CommitPoint& commit) {
  const std::string path = absl::StrCat(dir, "/", kPrefix, commit.generation);
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::FileWriter> writer,
                            index::FileWriter::Create(tmp, index::FileKind::kCommitPoint));
    TANDEM_RETURN_IF_ERROR(writer->Append(commit.ToJson()));
    TANDEM_RETURN_IF_ERROR(writer->Finish());  // flushed and fsynced
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return base::SyncDirectory(dir);
}

bool IsStaleCommitPoint(absl::string_view file_name, uint64_t generation) {
  if (!absl::StartsWith(file_name, kPrefix)) return false;
  if (absl::EndsWith(file_name, ".tmp")) return true;
  const std::optional<uint64_t> g = GenerationOf(file_name);
  return g && *g < generation;
}

}  // namespace tandem::live
