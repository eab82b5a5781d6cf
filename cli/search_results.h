#ifndef TAILSWEEP_CLI_SEARCH_RESULTS_H_
#define TAILSWEEP_CLI_SEARCH_RESULTS_H_

// `tailsweep results` of a boundary sweep (core/schema/sweep_spec.h's
// search): per cell, where the outcome flips (the bracket and its
// midpoint), each probe point's yes/n, the runs spent and the search's
// state. The plan is computed here from the jobs, by the same function the
// coordinator uses to add the rounds (core/schema/boundary_search.h).

#include <string>

#include "absl/status/status.h"
#include "cli/connection.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep::cli {

// `format`: table, csv, json or markdown. REQUIRES: spec.search.
absl::Status PrintSearchResults(Connection& c, const SweepSpec& spec,
                                const std::string& format);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_SEARCH_RESULTS_H_
