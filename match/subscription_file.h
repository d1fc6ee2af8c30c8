// File: subscription_file.h
//
// The file that keeps a node's subscriptions across restarts: framed and checksummed like every
// index file (index/file_format.h, kind `SUBSCRIB`), written whole to a process-tagged temporary
// name, fsynced, renamed over the old file, and the directory fsynced, so a crash leaves either
// the old snapshot or the new one. Layout in index/FORMAT.md ("Subscriptions").
//
//   TANDEM_RETURN_IF_ERROR(WriteSubscriptionFile(path, snapshot));
//   TANDEM_ASSIGN_OR_RETURN(SubscriptionSnapshot loaded, ReadSubscriptionFile(path));
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "match/subscription_registry.h"

namespace tandem::match {

struct SubscriptionSnapshot {
  SubscriptionId next_id = 1;  // the id the next Subscribe gets: ids are never reused
  std::vector<SubscriptionRecord> records;
};

absl::Status WriteSubscriptionFile(const std::string& path, const SubscriptionSnapshot& snapshot);

// NOT_FOUND when the file does not exist; DATA_LOSS naming the file and the problem when it is
// truncated, damaged or malformed (a bad operator, type, count or id); FAILED_PRECONDITION for
// another format version.
absl::StatusOr<SubscriptionSnapshot> ReadSubscriptionFile(const std::string& path);

// The payload alone, for the fuzzer: DATA_LOSS as above.
absl::StatusOr<SubscriptionSnapshot> DecodeSubscriptions(absl::string_view payload);
std::string EncodeSubscriptions(const SubscriptionSnapshot& snapshot);

}  // namespace tandem::match
