#include "worker/slots.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace tailsweep {

std::vector<std::string> MakeSlots(const std::vector<std::string>& devices,
                                   int slots_per_device) {
  std::vector<std::string> slots;
  for (const std::string& device : devices) {
    for (int s = 0; s < slots_per_device; ++s) {
      slots.push_back(absl::StrCat(device, "/", s));
    }
  }
  return slots;
}

std::string SlotDevice(const std::string& slot) {
  return slot.substr(0, slot.rfind('/'));
}

std::vector<std::vector<std::string>> FreeSlotsPerUnit(
    const std::vector<std::string>& all_slots,
    const std::vector<std::string>& free) {
  const std::set<std::string> is_free(free.begin(), free.end());
  std::vector<std::vector<std::string>> units;
  std::string last_device;
  for (const std::string& slot : all_slots) {
    const std::string device = SlotDevice(slot);
    if (units.empty() || device == "cpu" || device != last_device) {
      units.emplace_back();
    }
    last_device = device;
    if (is_free.count(slot) > 0) units.back().push_back(slot);
  }
  return units;
}

std::optional<std::vector<std::string>> TakeSlots(
    std::vector<std::vector<std::string>>& units,
    const std::vector<int>& placed) {
  for (int unit : placed) {
    if (unit < 0 || unit >= static_cast<int>(units.size()) ||
        units[unit].empty()) {
      return std::nullopt;
    }
  }
  std::vector<std::string> taken;
  for (int unit : placed) {
    taken.push_back(units[unit].front());
    units[unit].erase(units[unit].begin());
  }
  return taken;
}

}  // namespace tailsweep
