#include "worker/allocation.h"

#include <sched.h>

#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tailsweep {
namespace {

// "0,1", "GPU-aa,GPU-bb" -> entries; "", "NoDevFiles" -> none.
std::vector<std::string> Entries(const std::string& value) {
  std::vector<std::string> out;
  if (value == "NoDevFiles") return out;
  for (absl::string_view e : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    e = absl::StripAsciiWhitespace(e);
    if (!e.empty()) out.emplace_back(e);
  }
  return out;
}

}  // namespace

absl::StatusOr<Allocation> ReadAllocation(const GetEnv& env,
                                          int affinity_cpus) {
  Allocation out;
  for (const char* name :
       {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (std::optional<std::string> value = env(name)) {
      out.gpus = Entries(*value);
      out.gpus_from = absl::StrCat(name, "=", *value);
      break;
    }
  }
  out.cpus = std::max(1, affinity_cpus);
  out.cpus_from = "CPU affinity";
  if (std::optional<std::string> value = env("SLURM_CPUS_PER_TASK")) {
    int cpus = 0;
    if (!absl::SimpleAtoi(*value, &cpus) || cpus < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SLURM_CPUS_PER_TASK='", *value, "': expected a count >= 1"));
    }
    if (cpus <= out.cpus) {
      out.cpus = cpus;
      out.cpus_from = "SLURM_CPUS_PER_TASK";
    }
  }
  for (const char* name : {"TAILSWEEP_ALLOCATION_END", "SLURM_JOB_END_TIME"}) {
    std::optional<std::string> value = env(name);
    if (!value) continue;
    int64_t seconds = 0;
    if (!absl::SimpleAtoi(*value, &seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", *value, "': expected Unix seconds"));
    }
    out.end_wall_ms = seconds * 1000;
    break;
  }
  return out;
}

absl::StatusOr<Allocation> ReadAllocationFromProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  return ReadAllocation(
      [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      },
      cpus);
}

absl::StatusOr<std::string> VisibleDeviceFor(const Allocation& allocation,
                                             const std::string& device) {
  int index = 0;
  if (!absl::StartsWith(device, "cuda:") ||
      !absl::SimpleAtoi(absl::string_view(device).substr(5), &index) ||
      index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", device, "'; expected cuda:N"));
  }
  if (!allocation.gpus) return absl::StrCat(index);
  const std::vector<std::string>& gpus = *allocation.gpus;
  if (index >= static_cast<int>(gpus.size())) {
    return absl::OutOfRangeError(absl::StrCat(
        device, ": this worker was given ", gpus.size(), " GPU(s) (",
        allocation.gpus_from, "); cuda:N counts within them, from 0"));
  }
  return gpus[static_cast<size_t>(index)];
}

}  // namespace tailsweep
