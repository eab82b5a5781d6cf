#include "cli/exports.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

constexpr char kParamPrefix[] = "params_";

// A grid value as its type: a number or boolean when the text is one,
// else the text.
json TypedValue(const std::string& text) {
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_number() || parsed.is_boolean()) return parsed;
  return text;
}

void SetCell(const v1::JobInfo& job, FlatTable* table) {
  for (const v1::KeyValue& kv : job.cell()) {
    table->Set(kParamPrefix + kv.key(), TypedValue(kv.value()));
  }
}

std::string CellText(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return FormatDouble(v.get<double>());
  return v.dump();
}

}  // namespace

void FlatTable::AddRow() { rows_.emplace_back(); }

void FlatTable::Set(const std::string& column, json value) {
  auto it = std::find(columns_.begin(), columns_.end(), column);
  const size_t index = it - columns_.begin();
  if (it == columns_.end()) columns_.push_back(column);
  std::vector<json>& row = rows_.back();
  if (row.size() <= index) row.resize(index + 1);
  row[index] = std::move(value);
}

std::string FlatTable::Csv(bool header) const {
  Table t;
  t.header = columns_;
  for (const std::vector<json>& row : rows_) {
    std::vector<std::string> fields(columns_.size());
    for (size_t i = 0; i < row.size(); ++i) fields[i] = CellText(row[i]);
    t.rows.push_back(std::move(fields));
  }
  std::string out = RenderCsv(t);
  if (!header) out.erase(0, out.find("\r\n") + 2);
  return out;
}

std::string FlatTable::JsonLines() const {
  std::string out;
  for (const std::vector<json>& row : rows_) {
    json object = json::object();
    for (size_t i = 0; i < columns_.size(); ++i) {
      object[columns_[i]] = i < row.size() ? row[i] : json();
    }
    // Keys in column order, not nlohmann's sorted order.
    std::string line = "{";
    for (size_t i = 0; i < columns_.size(); ++i) {
      absl::StrAppend(&line, i ? "," : "", json(columns_[i]).dump(), ":",
                      object[columns_[i]].dump(-1, ' ', false,
                                               json::error_handler_t::replace));
    }
    absl::StrAppend(&out, line, "}\n");
  }
  return out;
}

FlatTable JobsExport(const std::vector<v1::JobInfo>& jobs) {
  FlatTable t;
  for (const v1::JobInfo& j : jobs) {
    t.AddRow();
    t.Set("job_id", j.job_id());
    t.Set("state", j.state());
    t.Set("job_state", j.job_state());
    t.Set("attempt", j.attempt());
    t.Set("epoch", j.epoch());
    t.Set("holder", j.holder());
    t.Set("last_error", j.last_error());
    SetCell(j, &t);
  }
  return t;
}

absl::StatusOr<FlatTable> ResultsExport(const std::vector<v1::JobInfo>& jobs) {
  FlatTable t;
  for (const v1::JobInfo& j : jobs) {
    if (j.result_json().empty()) continue;
    const json doc = json::parse(j.result_json(), nullptr, false);
    if (doc.is_array()) {  // tails: one row per testbed row
      for (const json& row : doc) {
        if (!row.is_object()) continue;
        t.AddRow();
        t.Set("job_id", j.job_id());
        SetCell(j, &t);
        for (const auto& [key, value] : row.items()) t.Set(key, value);
      }
      continue;
    }
    if (!doc.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", j.job_id(), ": its stored result is not a JSON object"));
    }
    t.AddRow();
    t.Set("job_id", j.job_id());
    if (const auto config = doc.find("config");
        config != doc.end() && config->is_object()) {
      for (const auto& [key, value] : config->items()) {
        t.Set(kParamPrefix + key, value);
      }
    } else {
      SetCell(j, &t);
    }
    for (const auto& [key, value] : doc.items()) {
      if (key != "config" && key != "samples") t.Set(key, value);
    }
  }
  return t;
}

void AddMetricsExport(const v1::JobInfo& job,
                      const std::vector<v1::MetricPoint>& points,
                      FlatTable* table) {
  for (const v1::MetricPoint& p : points) {
    table->AddRow();
    table->Set("job_id", job.job_id());
    SetCell(job, table);
    table->Set("name", p.name());
    table->Set("step", p.step());
    table->Set("value", JsonNumber(p.value()));
  }
}

}  // namespace tailsweep::cli
