#ifndef TAILSWEEP_CORE_SCHEMA_STATUS_MACROS_H_
#define TAILSWEEP_CORE_SCHEMA_STATUS_MACROS_H_

// TS_RETURN_IF_ERROR(expr): returns `expr`'s absl::Status from the calling
// function unless it is OK. The one macro the project uses for it.

#include "absl/status/status.h"

#define TS_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

#endif  // TAILSWEEP_CORE_SCHEMA_STATUS_MACROS_H_
