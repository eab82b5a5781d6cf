#ifndef TAILSWEEP_CORE_SCHEMA_VERSION_H_
#define TAILSWEEP_CORE_SCHEMA_VERSION_H_

// The software version every executable prints for --version and every
// report records: the CMake project version, plus the git commit the build
// was configured from when it was built from a checkout ("0.1.0+abc1234").

namespace tailsweep {

const char* Version();

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_VERSION_H_
