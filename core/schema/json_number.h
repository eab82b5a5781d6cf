#ifndef TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_
#define TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_

// Numbers in the job protocol's JSON (metrics lines, result.json). JSON has
// no literal for NaN or the infinities, so they are written as the strings
// "nan", "inf" and "-inf"; a missing value is a missing key or null. Every
// writer and reader of those files goes through these two functions.

#include <nlohmann/json.hpp>
#include <optional>

namespace tailsweep {

nlohmann::json JsonNumber(double value);

// The number `doc` holds: a JSON number, or "nan" / "inf" / "-inf".
// nullopt for null or anything else.
std::optional<double> NumberFromJson(const nlohmann::json& doc);

// The number under `key` of an object; nullopt when absent, null or not a
// number.
std::optional<double> NumberAt(const nlohmann::json& object, const char* key);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JSON_NUMBER_H_
