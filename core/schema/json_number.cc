#include "core/schema/json_number.h"

#include <cmath>
#include <limits>

namespace tailsweep {

nlohmann::json JsonNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::optional<double> NumberFromJson(const nlohmann::json& doc) {
  if (doc.is_number()) return doc.get<double>();
  if (!doc.is_string()) return std::nullopt;
  const std::string& text = doc.get_ref<const std::string&>();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::optional<double> NumberAt(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  return NumberFromJson(*it);
}

}  // namespace tailsweep
