#ifndef TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_
#define TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_

// Numbers in the job protocol's JSON (metrics lines, result.json). JSON has
// no literal for NaN or the infinities, so they are written as the strings
// "nan", "inf" and "-inf"; a missing value is a missing key or null. Every
// writer and reader of those files goes through these two functions.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

nlohmann::json JsonNumber(double value);

// The number `doc` holds: a JSON number, or "nan" / "inf" / "-inf".
// nullopt for null or anything else.
std::optional<double> NumberFromJson(const nlohmann::json& doc);

// The number under `key` of an object; nullopt when absent, null or not a
// number.
std::optional<double> NumberAt(const nlohmann::json& object, const char* key);

// Reads typed fields of one object, remembering the first problem as
// InvalidArgument "<what>: field '<key>' missing or not <type>".
class JsonFields {
 public:
  JsonFields(const nlohmann::json& doc, absl::string_view what)
      : doc_(doc), what_(what) {}

  // NaN for null (files written before non-finite values were encoded wrote
  // them as null).
  double Number(const char* key);
  std::optional<double> OptionalNumber(const char* key);
  int64_t Integer(const char* key);
  // -1 for null.
  int64_t StepOrNone(const char* key);
  bool Bool(const char* key);
  absl::Status status() const { return status_; }

 private:
  void Fail(const char* key, absl::string_view expected);
  const nlohmann::json& doc_;
  std::string what_;
  absl::Status status_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_
