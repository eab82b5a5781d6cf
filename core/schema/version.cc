#include "core/schema/version.h"

#include "tailsweep_version.h"  // generated: cmake/write_version.cmake

namespace tailsweep {

const char* Version() { return TAILSWEEP_VERSION; }

}  // namespace tailsweep
