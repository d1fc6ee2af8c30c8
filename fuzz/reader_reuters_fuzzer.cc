// Feeds arbitrary bytes as a Reuters-21578 SGML file to the "reuters" document reader, as the
// single input file "reut2-000.sgm", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("reuters", "reut2-000.sgm", data, size);
}
