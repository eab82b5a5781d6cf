#ifndef TAILSWEEP_COORDINATOR_STORE_SQL_H_
#define TAILSWEEP_COORDINATOR_STORE_SQL_H_

// The store's read rules that the offline Python client runs too: the
// fragments of python/tailsweep/store.sql, compiled in at build time
// (cmake/embed.cmake), so the coordinator and tailsweep.Client.open read a
// database file by one definition.

#include "absl/strings/string_view.h"

namespace tailsweep {

// The fragment `name` ("sweep_job_state", "early_stops"), comment lines
// left out. Aborts for a name the file lacks: a build defect, which every
// store test meets at once.
absl::string_view StoreSql(absl::string_view name);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_STORE_SQL_H_
