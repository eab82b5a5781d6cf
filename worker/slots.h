#ifndef TAILSWEEP_WORKER_SLOTS_H_
#define TAILSWEEP_WORKER_SLOTS_H_

// A worker's slots, named "DEVICE/INDEX" (e.g. "cuda:1/0", "cpu/1"), and
// how they map onto placement units (core/schema/device_placement.h): a GPU
// is one unit holding its slots, every CPU slot is a unit of its own.
// Pure; no I/O.

#include <optional>
#include <string>
#include <vector>

namespace tailsweep {

// slots_per_device slots for each device, grouped by device, in order.
std::vector<std::string> MakeSlots(const std::vector<std::string>& devices,
                                   int slots_per_device);

// The device of a slot: "cuda:1" of "cuda:1/0".
std::string SlotDevice(const std::string& slot);

// The placement units of `all_slots` (MakeSlots' order) in a fixed order,
// each with those of its slots that are in `free`.
std::vector<std::vector<std::string>> FreeSlotsPerUnit(
    const std::vector<std::string>& all_slots,
    const std::vector<std::string>& free);

// Takes one free slot from each unit in `placed` (PlaceJob's answer),
// removing them from `units`. nullopt, `units` unchanged, when an index is
// out of range or a unit has no free slot left.
std::optional<std::vector<std::string>> TakeSlots(
    std::vector<std::vector<std::string>>& units,
    const std::vector<int>& placed);

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_SLOTS_H_
