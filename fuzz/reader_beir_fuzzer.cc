// Feeds arbitrary bytes as a BEIR corpus (JSON Lines) to the "beir" document reader, as the single
// input file "corpus.jsonl", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("beir", "corpus.jsonl", data, size);
}
