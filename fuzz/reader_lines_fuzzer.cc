// Feeds arbitrary bytes as a text file of one document per line to the "lines" document reader, as
// the single input file "lines.txt", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("lines", "lines.txt", data, size);
}
