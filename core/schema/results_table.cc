#include "core/schema/results_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"

namespace tailsweep {
namespace {

constexpr std::pair<ColumnType, absl::string_view> kTypeNames[] = {
    {ColumnType::kText, "text"},         {ColumnType::kInteger, "integer"},
    {ColumnType::kNumber, "number"},     {ColumnType::kBoolean, "boolean"},
    {ColumnType::kFraction, "fraction"},
};
constexpr std::pair<ColumnRole, absl::string_view> kRoleNames[] = {
    {ColumnRole::kKey, "key"},
    {ColumnRole::kValue, "value"},
    {ColumnRole::kDisplay, "display"},
};

template <typename Enum, size_t N>
absl::string_view NameIn(const std::pair<Enum, absl::string_view> (&names)[N],
                         Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "";
}

template <typename Enum, size_t N>
std::optional<Enum> ParseIn(
    const std::pair<Enum, absl::string_view> (&names)[N],
    absl::string_view text) {
  for (const auto& [v, name] : names) {
    if (name == text) return v;
  }
  return std::nullopt;
}

nlohmann::json CellJson(const ResultValue& v, bool fraction_as_number) {
  if (const auto* text = std::get_if<std::string>(&v)) return *text;
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return JsonNumber(*d);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto* f = std::get_if<Fraction>(&v)) {
    if (fraction_as_number) return JsonNumber(NumberOf(v));
    return {{"count", f->count}, {"of", f->of}};
  }
  return nullptr;
}

// A JSON cell of a column of `type`; InvalidArgument when it is not one.
absl::StatusOr<ResultValue> CellFromJson(const nlohmann::json& doc,
                                         ColumnType type) {
  if (doc.is_null()) return ResultValue();
  switch (type) {
    case ColumnType::kText:
      if (doc.is_string()) return ResultValue(doc.get<std::string>());
      break;
    case ColumnType::kInteger:
      if (doc.is_number_integer()) return ResultValue(doc.get<int64_t>());
      break;
    case ColumnType::kNumber:
      if (std::optional<double> d = NumberFromJson(doc)) return ResultValue(*d);
      break;
    case ColumnType::kBoolean:
      if (doc.is_boolean()) return ResultValue(doc.get<bool>());
      break;
    case ColumnType::kFraction:
      if (doc.is_object() && doc.contains("count") && doc.contains("of") &&
          doc["count"].is_number_integer() && doc["of"].is_number_integer()) {
        return ResultValue(
            Fraction{doc["count"].get<int64_t>(), doc["of"].get<int64_t>()});
      }
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("results table: ", doc.dump(), " is not a ",
                   ColumnTypeName(type), " (or null)"));
}

}  // namespace

absl::string_view ColumnTypeName(ColumnType type) {
  return NameIn(kTypeNames, type);
}
std::optional<ColumnType> ParseColumnType(absl::string_view name) {
  return ParseIn(kTypeNames, name);
}
absl::string_view ColumnRoleName(ColumnRole role) {
  return NameIn(kRoleNames, role);
}
std::optional<ColumnRole> ParseColumnRole(absl::string_view name) {
  return ParseIn(kRoleNames, name);
}

size_t ResultsTable::AddColumn(std::string name, ColumnType type,
                               ColumnRole role) {
  columns.push_back({std::move(name), type, role});
  return columns.size() - 1;
}

std::optional<size_t> ResultsTable::ColumnIndex(absl::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return i;
  }
  return std::nullopt;
}

std::vector<JobGroup> GroupJobs(absl::Span<const ResultJob> jobs,
                                bool over_seeds) {
  std::vector<JobGroup> groups;
  std::map<std::string, size_t> index;
  for (const ResultJob& job : jobs) {
    KeyValues cell;
    std::string key;
    for (const auto& kv : job.cell) {
      if (over_seeds && kv.first == "seed") continue;
      cell.push_back(kv);
      absl::StrAppend(&key, kv.first, "=", kv.second, "\n");
    }
    auto [it, added] = index.try_emplace(std::move(key), groups.size());
    if (added) groups.push_back({std::move(cell), {}, 0, 0});
    JobGroup& g = groups[it->second];
    g.jobs.push_back(&job);
    if (job.state == JobState::kDone) ++g.done;
    if (job.state == JobState::kFailed) ++g.failed;
  }
  return groups;
}

void AddKeyColumns(const std::vector<JobGroup>& groups, ResultsTable& table,
                   absl::Span<const absl::string_view> except) {
  for (const JobGroup& g : groups) {
    for (const auto& kv : g.cell) {
      if (std::find(except.begin(), except.end(), kv.first) == except.end() &&
          !table.ColumnIndex(kv.first)) {
        table.AddColumn(kv.first, ColumnType::kText, ColumnRole::kKey);
      }
    }
  }
}

std::vector<ResultValue> KeyRow(const JobGroup& group,
                                const ResultsTable& table) {
  std::vector<ResultValue> row(table.columns.size());
  for (const auto& [k, v] : group.cell) {
    std::optional<size_t> c = table.ColumnIndex(k);
    if (c && table.columns[*c].role == ColumnRole::kKey) row[*c] = v;
  }
  return row;
}

void AddCellColumns(const std::vector<JobGroup>& groups, ResultsTable& table) {
  table.per_cell = true;
  AddKeyColumns(groups, table);
  const size_t keys = table.columns.size();
  for (const char* count : {"jobs", "done", "failed"}) {
    // A grid key of that name (a command's free-form one) keeps it.
    table.AddColumn(table.ColumnIndex(count) ? absl::StrCat("n_", count)
                                             : std::string(count),
                    ColumnType::kInteger);
  }
  for (const JobGroup& g : groups) {
    std::vector<ResultValue> row = KeyRow(g, table);
    row[keys] = static_cast<int64_t>(g.jobs.size());
    row[keys + 1] = g.done;
    row[keys + 2] = g.failed;
    table.rows.push_back(std::move(row));
  }
}

void AddHoursColumns(absl::Span<const ResultJob> jobs, bool over_seeds,
                     ResultsTable& table) {
  if (!table.per_cell || table.ColumnIndex("gpu_hours") ||
      table.ColumnIndex("cpu_hours")) {
    return;
  }
  const std::vector<JobGroup> groups = GroupJobs(jobs, over_seeds);
  if (groups.size() != table.rows.size()) return;
  // A row per group, in order: each row holds its group's cell.
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::vector<ResultValue> keys = KeyRow(groups[i], table);
    for (size_t c = 0; c < table.columns.size(); ++c) {
      if (table.columns[c].role == ColumnRole::kKey &&
          !(keys[c] == table.rows[i][c])) {
        return;
      }
    }
  }
  const size_t gpu = table.columns.size();
  table.AddColumn("gpu_hours", ColumnType::kNumber);
  table.AddColumn("cpu_hours", ColumnType::kNumber);
  for (size_t i = 0; i < groups.size(); ++i) {
    double g = 0, c = 0;
    for (const ResultJob* j : groups[i].jobs) {
      g += j->gpu_hours;
      c += j->cpu_hours;
    }
    table.rows[i].resize(table.columns.size());
    table.rows[i][gpu] = g;
    table.rows[i][gpu + 1] = c;
  }
}

double NumberOf(const ResultValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (const auto* f = std::get_if<Fraction>(&v)) {
    return f->of > 0 ? static_cast<double>(f->count) / f->of
                     : std::numeric_limits<double>::quiet_NaN();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string TextOf(const ResultValue& v, bool precise) {
  if (const auto* text = std::get_if<std::string>(&v)) return *text;
  if (const auto* i = std::get_if<int64_t>(&v)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "";
    return precise ? FormatDouble(*d) : FormatForPeople(*d);
  }
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* f = std::get_if<Fraction>(&v)) {
    return absl::StrCat(f->count, "/", f->of);
  }
  return "";
}

ResultsPivot PivotOf(const ResultsTable& table, const std::string& group_by) {
  ResultsPivot p;
  p.group_by = group_by;
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    std::string column = "-";
    std::vector<std::string> parts;
    for (size_t c = 0; c < table.columns.size(); ++c) {
      if (table.columns[c].role != ColumnRole::kKey) continue;
      const auto* v = std::get_if<std::string>(&table.rows[i][c]);
      if (v == nullptr) continue;
      if (table.columns[c].name == group_by) {
        column = *v;
      } else {
        parts.push_back(absl::StrCat(table.columns[c].name, "=", *v));
      }
    }
    auto at = std::find(p.columns.begin(), p.columns.end(), column);
    const size_t col = static_cast<size_t>(at - p.columns.begin());
    if (at == p.columns.end()) {
      p.columns.push_back(column);
      for (ResultsPivot::Row& r : p.rows) r.cells.push_back(-1);
    }
    const std::string label = parts.empty() ? "-" : absl::StrJoin(parts, " ");
    auto [it, added] = row_of.try_emplace(label, p.rows.size());
    if (added)
      p.rows.push_back({label, std::vector<int>(p.columns.size(), -1)});
    p.rows[it->second].cells[col] = static_cast<int>(i);
  }
  return p;
}

nlohmann::json ResultsTableJson(const ResultsTable& table) {
  nlohmann::json columns = nlohmann::json::array();
  for (const ResultsColumn& c : table.columns) {
    columns.push_back({{"name", c.name},
                       {"type", ColumnTypeName(c.type)},
                       {"role", ColumnRoleName(c.role)}});
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const std::vector<ResultValue>& row : table.rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const ResultValue& v : row) out.push_back(CellJson(v, false));
    rows.push_back(std::move(out));
  }
  return {{"columns", std::move(columns)},
          {"rows", std::move(rows)},
          {"headline", table.headline},
          {"group_by", table.group_by},
          {"note", table.note}};
}

absl::StatusOr<ResultsTable> ResultsTableFromJson(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("columns") ||
      !doc["columns"].is_array() || !doc.contains("rows") ||
      !doc["rows"].is_array()) {
    return absl::InvalidArgumentError(
        "results table: an object with 'columns' and 'rows' arrays expected");
  }
  ResultsTable t;
  for (const nlohmann::json& c : doc["columns"]) {
    const std::optional<ColumnType> type =
        c.is_object() && c.value("type", "").size() > 0
            ? ParseColumnType(c.value("type", ""))
            : std::nullopt;
    const std::optional<ColumnRole> role = ParseColumnRole(
        c.is_object() ? c.value("role", "value") : std::string());
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() ||
        !type || !role) {
      return absl::InvalidArgumentError(absl::StrCat(
          "results table: column ", c.dump(),
          " needs a name, a type (text, integer, number, boolean, fraction) "
          "and a role (key, value, display)"));
    }
    t.AddColumn(c["name"].get<std::string>(), *type, *role);
  }
  for (const nlohmann::json& r : doc["rows"]) {
    if (!r.is_array() || r.size() != t.columns.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "results table: a row of ", t.columns.size(), " cells expected"));
    }
    std::vector<ResultValue> row;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      absl::StatusOr<ResultValue> v = CellFromJson(r[c], t.columns[c].type);
      if (!v.ok()) return v.status();
      row.push_back(*std::move(v));
    }
    t.rows.push_back(std::move(row));
  }
  t.headline = doc.value("headline", "");
  t.group_by = doc.value("group_by", "");
  t.note = doc.value("note", "");
  return t;
}

nlohmann::json ResultRecordsJson(const ResultsTable& table) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::vector<ResultValue>& row : table.rows) {
    nlohmann::json record = nlohmann::json::object();
    for (size_t c = 0; c < table.columns.size(); ++c) {
      if (table.columns[c].role == ColumnRole::kDisplay) continue;
      record[table.columns[c].name] = CellJson(row[c], true);
    }
    out.push_back(std::move(record));
  }
  return out;
}

}  // namespace tailsweep
