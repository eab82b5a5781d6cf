#include "core/schema/json_number.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

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

double JsonFields::Number(const char* key) {
  const auto it = doc_.find(key);
  if (it != doc_.end() && it->is_null()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::optional<double> v = NumberAt(doc_, key);
  if (!v) Fail(key, "a number");
  return v.value_or(0);
}

std::optional<double> JsonFields::OptionalNumber(const char* key) {
  return NumberAt(doc_, key);
}

int64_t JsonFields::Integer(const char* key) {
  const auto it = doc_.find(key);
  if (it == doc_.end() || !it->is_number_integer()) {
    Fail(key, "an integer");
    return 0;
  }
  return it->get<int64_t>();
}

int64_t JsonFields::StepOrNone(const char* key) {
  const auto it = doc_.find(key);
  if (it != doc_.end() && it->is_null()) return -1;
  return Integer(key);
}

bool JsonFields::Bool(const char* key) {
  const auto it = doc_.find(key);
  if (it == doc_.end() || !it->is_boolean()) {
    Fail(key, "true or false");
    return false;
  }
  return it->get<bool>();
}

void JsonFields::Fail(const char* key, absl::string_view expected) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(what_, ": field '", key, "' missing or not ", expected));
  }
}

}  // namespace tailsweep
