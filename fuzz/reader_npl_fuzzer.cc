// Feeds arbitrary bytes as an NPL doc-text file to the "npl" document reader, as the single input
// file "doc-text", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("npl", "doc-text", data, size);
}
