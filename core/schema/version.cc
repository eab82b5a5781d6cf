#include "core/schema/version.h"

#ifndef TAILSWEEP_VERSION
#define TAILSWEEP_VERSION "unknown"
#endif

namespace tailsweep {

const char* Version() { return TAILSWEEP_VERSION; }

}  // namespace tailsweep
