// Feeds arbitrary bytes as a TREC SGML file (<DOC> elements) to the "trec" document reader, as the
// single input file "collection.trec", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("trec", "collection.trec", data, size);
}
