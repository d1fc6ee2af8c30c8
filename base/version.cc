#include "base/version.h"

#include "base/version_info.h"  // generated into the build tree

namespace tandem::base {

const char* Version() { return TANDEM_VERSION_STRING; }
const char* Commit() { return TANDEM_COMMIT_STRING; }

}  // namespace tandem::base
