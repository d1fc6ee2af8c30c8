// Feeds arbitrary bytes as a CIFF file to CiffReader (index_builder/ciff_reader.h) and reads it the
// two ways tandem-index import does: every record in file order, and the lists again by skipping
// over them for their terms and then reading each at its offset.
//
// Checks, besides no crash and no read out of bounds:
//   - every failure is INVALID_ARGUMENT and starts with "ciff: ";
//   - every list read has docids strictly increasing below the header's num_docs, a frequency of
//     at least 1 for each, and a non-empty term; doc records come with docids 0, 1, 2, ...;
//   - a file that reads in file order also reads through the skip-then-seek path, list for list
//     the same.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "index_builder/ciff_reader.h"

namespace tandem::fuzz {
namespace {

using index_builder::CiffDocRecord;
using index_builder::CiffPostingsList;
using index_builder::CiffReader;

void CheckFailure(const absl::Status& status) {
  TANDEM_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  TANDEM_FUZZ_CHECK(absl::StartsWith(status.message(), "ciff: "));
}

void CheckList(const CiffPostingsList& list, uint32_t num_docs) {
  TANDEM_FUZZ_CHECK(!list.term.empty());
  TANDEM_FUZZ_CHECK(!list.docids.empty() && list.docids.size() == list.freqs.size());
  for (size_t i = 0; i < list.docids.size(); ++i) {
    TANDEM_FUZZ_CHECK(list.docids[i] < num_docs);
    TANDEM_FUZZ_CHECK(i == 0 || list.docids[i] > list.docids[i - 1]);
    TANDEM_FUZZ_CHECK(list.freqs[i] >= 1);
  }
}

// Reads every record in file order; the lists read, or the first failure.
absl::Status ReadInOrder(const std::string& path, std::vector<CiffPostingsList>* lists) {
  absl::StatusOr<std::unique_ptr<CiffReader>> reader = CiffReader::Open(path);
  if (!reader.ok()) return reader.status();
  for (uint32_t i = 0; i < (*reader)->num_postings_lists(); ++i) {
    CiffPostingsList list;
    if (absl::Status s = (*reader)->NextPostingsList(&list); !s.ok()) return s;
    CheckList(list, (*reader)->num_docs());
    lists->push_back(std::move(list));
  }
  CiffDocRecord doc;
  for (uint32_t d = 0; d < (*reader)->num_docs(); ++d) {
    if (absl::Status s = (*reader)->NextDocRecord(&doc); !s.ok()) return s;
    TANDEM_FUZZ_CHECK(doc.docid == d && !doc.collection_docid.empty());
  }
  return (*reader)->Finish();
}

}  // namespace
}  // namespace tandem::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem::fuzz;
  const std::string path =
      WriteScratchFile("input.ciff", absl::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<CiffPostingsList> lists;
  const absl::Status in_order = ReadInOrder(path, &lists);
  if (!in_order.ok()) {
    CheckFailure(in_order);
    return 0;
  }
  absl::StatusOr<std::unique_ptr<CiffReader>> reader = CiffReader::Open(path);
  TANDEM_FUZZ_CHECK(reader.ok());
  std::vector<std::pair<std::string, uint64_t>> places(lists.size());
  for (auto& [term, offset] : places) {
    TANDEM_FUZZ_CHECK((*reader)->SkipPostingsList(&term, &offset).ok());
  }
  for (uint32_t i = 0; i < places.size(); ++i) {
    TANDEM_FUZZ_CHECK(places[i].first == lists[i].term);
    CiffPostingsList list;
    TANDEM_FUZZ_CHECK((*reader)->ReadPostingsListAt(places[i].second, i, &list).ok());
    TANDEM_FUZZ_CHECK(list.term == lists[i].term && list.docids == lists[i].docids &&
                      list.freqs == lists[i].freqs);
  }
  return 0;
}
