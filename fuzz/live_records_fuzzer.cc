// Feeds arbitrary bytes to what a live index reads back from disk: a logged operation
// (live/operation.h, the payload of a write-ahead log record) and a commit point's JSON
// (live/commit_point.h).
//
// Checks, besides no crash and no read outside the input: an operation that decodes encodes to
// bytes that decode to the same operation, and a commit point that parses writes JSON that parses
// to the same commit point.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "live/commit_point.h"
#include "live/operation.h"

namespace {

bool SameOperation(const tandem::live::Operation& a, const tandem::live::Operation& b) {
  return a.kind == b.kind && a.version == b.version && a.id() == b.id() &&
         a.document.text == b.document.text && a.document.fields == b.document.fields &&
         a.document.attributes == b.document.attributes;
}

bool SameCommit(const tandem::live::CommitPoint& a, const tandem::live::CommitPoint& b) {
  if (a.generation != b.generation || a.next_segment != b.next_segment ||
      a.log_sequence != b.log_sequence || a.segments.size() != b.segments.size() ||
      a.versions.size() != b.versions.size()) {
    return false;
  }
  for (size_t i = 0; i < a.segments.size(); ++i) {
    if (a.segments[i].name != b.segments[i].name ||
        a.segments[i].deleted != b.segments[i].deleted) {
      return false;
    }
  }
  for (const auto& [id, v] : a.versions) {
    auto it = b.versions.find(id);
    if (it == b.versions.end() || it->second.version != v.version ||
        it->second.deleted != v.deleted) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tandem::fuzz::Bytes input({reinterpret_cast<const char*>(data), size});
  absl::StatusOr<tandem::live::Operation> op = tandem::live::Operation::Decode(input.view());
  if (op.ok()) {
    (void)op->Validate();
    absl::StatusOr<tandem::live::Operation> again = tandem::live::Operation::Decode(op->Encode());
    TANDEM_FUZZ_CHECK(again.ok() && SameOperation(*op, *again));
  }
  absl::StatusOr<tandem::live::CommitPoint> commit =
      tandem::live::CommitPoint::FromJson(input.view());
  if (commit.ok()) {
    absl::StatusOr<tandem::live::CommitPoint> again =
        tandem::live::CommitPoint::FromJson(commit->ToJson());
    TANDEM_FUZZ_CHECK(again.ok() && SameCommit(*commit, *again));
  }
  return 0;
}
