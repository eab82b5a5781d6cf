#ifndef TAILSWEEP_CLI_CONTROL_H_
#define TAILSWEEP_CLI_CONTROL_H_

// How a sweep's settings and device hours read in the CLI (status, the
// list of sweeps): one place for control_commands.cc and sweep_commands.cc.

#include <string>
#include <vector>

#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

// "1.50 GPU-h, 0.20 CPU-h (0.10 h of it preempted)"; "0 h" for none.
std::string HoursText(const v1::SweepHours& hours);
// "held", "paused" or "-".
std::string StateText(const v1::SweepSettings& settings);
// The lines `status SWEEP` prints under the counts: a hold, a pause, the
// priority and limits with the hours, tags, notes, the stop rule.
std::vector<std::string> SettingsLines(const v1::SweepSettings& settings,
                                       const v1::SweepHours& hours);
// (Their JSON: report/result_json.h's SweepSettingsJson.)

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_CONTROL_H_
