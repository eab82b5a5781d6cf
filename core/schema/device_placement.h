#ifndef TAILSWEEP_CORE_SCHEMA_DEVICE_PLACEMENT_H_
#define TAILSWEEP_CORE_SCHEMA_DEVICE_PLACEMENT_H_

// How many devices a job asks for (its "gpus" key) and how a worker's free
// slots are given to such jobs. The coordinator and the worker run the same
// placement, so a worker can always start what it was leased.
//
// A worker's slots fall into placement units: a GPU (cuda:N) is one unit
// with as many slots as the worker runs on it; on the CPU every slot is a
// unit of its own (the CPU is one device, and its slots are shares of its
// cores). A job with gpus = G takes one free slot on each of G distinct
// units: G GPUs, or G CPU slots and their threads. Torch-free.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

inline constexpr char kGpusKey[] = "gpus";
inline constexpr int kMaxGpusPerJob = 64;

// The value of key "gpus": a whole number from 1 to kMaxGpusPerJob.
// InvalidArgument otherwise, naming the key and what is allowed.
absl::StatusOr<int> ParseGpus(absl::string_view value);

// The devices a job asks for: its "gpus" key, 1 when absent.
// InvalidArgument for a bad value.
absl::StatusOr<int> JobGpus(
    const std::vector<std::pair<std::string, std::string>>& params);

// Places a job of `gpus` units: takes one slot from each of the `gpus`
// units with the most free slots (ties: the lower index), so single-device
// jobs spread over the GPUs first; returns their indices in increasing
// order and lowers `free` accordingly. nullopt, `free` unchanged, when fewer
// than `gpus` units have a free slot. REQUIRES: gpus >= 1.
std::optional<std::vector<int>> PlaceJob(std::vector<int>& free, int gpus);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_DEVICE_PLACEMENT_H_
