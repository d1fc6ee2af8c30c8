// Feeds arbitrary bytes as a WikiExtractor output file (<doc> elements) to the "wikiextractor"
// document reader, as the single input file "wiki_00", and reads every document (reader_fuzz.h
// lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("wikiextractor", "wiki_00", data, size);
}
