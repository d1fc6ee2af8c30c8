// Feeds arbitrary bytes as one RFC 5322 e-mail message to the "email" document reader, as the
// single input file "message.eml", and reads every document (reader_fuzz.h lists the checks).
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tandem::fuzz::FuzzDocumentReader("email", "message.eml", data, size);
}
