// Feeds arbitrary bytes as a SMART collection (.I/.T/.W fields) to the "smart" document reader, as
// the single input file "cran.all.1400", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("smart", "cran.all.1400", data, size);
}
