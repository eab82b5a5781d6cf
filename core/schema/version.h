#ifndef TAILSWEEP_CORE_SCHEMA_VERSION_H_
#define TAILSWEEP_CORE_SCHEMA_VERSION_H_

// The software version every executable prints for --version and every
// report, result and sweep records: the CMake project version, plus, when
// built from a checkout, the commit built and ".dirty" when tracked files
// differed from it ("0.1.0+abc1234", "0.1.0+abc1234.dirty"). Written at
// build time by cmake/write_version.cmake.

namespace tailsweep {

const char* Version();

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_VERSION_H_
