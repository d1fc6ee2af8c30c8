// attributes.bin's payload, as Index::Open reads it. The bytes are the payload; its own document
// count (the first 4 bytes, capped) stands for the index's. AttributeIndex::Decode never crashes
// and refuses only with DATA_LOSS; a payload it accepts encodes back to the same bytes, and every
// column of it is a bitmap whose count, rows and cursor agree.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "fuzz/fuzz_util.h"

namespace {

using namespace tandem::filter;  // NOLINT: a fuzzer's one file

constexpr uint32_t kMaxDocs = 1 << 16;  // keeps Rows() of a column small

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t num_docs = 0;
  std::memcpy(&num_docs, data, 4);
  if (num_docs > kMaxDocs) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  auto decoded = AttributeIndex::Decode(payload, num_docs);
  if (!decoded.ok()) {
    TANDEM_FUZZ_CHECK(decoded.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  TANDEM_FUZZ_CHECK((*decoded)->Encode() == payload);
  for (const AttributeField& field : (*decoded)->fields()) {
    for (uint32_t id = 0; id < field.cardinality(); ++id) {
      const BitmapView column = (*decoded)->Column(field, id);
      const std::vector<uint32_t> rows = column.Rows();
      TANDEM_FUZZ_CHECK(column.Count() == rows.size());
      BitmapCursor cursor(column);
      std::vector<uint32_t> walked;
      for (uint32_t r = cursor.NextGeq(0); r != BitmapCursor::kEnd; r = cursor.NextGeq(r + 1)) {
        walked.push_back(r);
        if (r + 1 >= num_docs) break;
      }
      TANDEM_FUZZ_CHECK(walked == rows);
      for (uint32_t r : rows) TANDEM_FUZZ_CHECK(r < num_docs);
    }
  }
  return 0;
}
