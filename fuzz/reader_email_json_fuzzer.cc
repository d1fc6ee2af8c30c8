// Feeds arbitrary bytes as a JSON file of SpamAssassin e-mail records to the "email" document
// reader, as the single input file "records.json", and reads every document (reader_fuzz.h lists
// the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("email", "records.json", data, size);
}
