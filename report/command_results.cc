#include "report/command_results.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"

namespace tailsweep {
namespace {

using json = nlohmann::json;

struct Row {
  std::vector<std::pair<std::string, std::string>> cell;
  int64_t jobs = 0, done = 0, failed = 0;
  std::map<std::string, std::vector<double>> last;  // per metric
  std::map<std::string, int64_t> holds;             // per outcome
};

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end(), [](double a, double b) {
    // NaN last
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  });
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

cli::Table CommandResultsTable(const std::vector<v1::JobInfo>& jobs,
                               bool per_seed, bool full_precision) {
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  std::set<std::string> metrics, outcomes;
  std::vector<std::string> keys;
  for (const v1::JobInfo& j : jobs) {
    Row key_row;
    std::string key;
    for (const v1::KeyValue& kv : j.cell()) {
      if (!per_seed && kv.key() == "seed") continue;
      key_row.cell.emplace_back(kv.key(), kv.value());
      absl::StrAppend(&key, kv.key(), "=", kv.value(), "\n");
    }
    if (per_seed) key = j.job_id();
    auto [it, added] = index.emplace(key, rows.size());
    if (added) {
      rows.push_back(std::move(key_row));
      if (keys.empty()) {
        for (const auto& kv : rows.back().cell) keys.push_back(kv.first);
      }
    }
    Row& row = rows[it->second];
    ++row.jobs;
    if (j.state() == "failed") ++row.failed;
    if (j.state() != "done") continue;
    ++row.done;
    const json result =
        json::parse(j.result_json(), nullptr, /*allow_exceptions=*/false);
    if (!result.is_object()) continue;
    if (result.contains("summary") && result["summary"].is_object()) {
      for (const auto& [name, s] : result["summary"].items()) {
        metrics.insert(name);
        const std::optional<double> v = s.is_object() && s.contains("last")
                                            ? NumberFromJson(s["last"])
                                            : std::nullopt;
        row.last[name].push_back(v ? *v : std::nan(""));
      }
    }
    if (result.contains("outcomes") && result["outcomes"].is_object()) {
      for (const auto& [name, v] : result["outcomes"].items()) {
        outcomes.insert(name);
        if (v.is_boolean() && v.get<bool>()) ++row.holds[name];
      }
    }
  }
  cli::Table t;
  t.header = keys;
  if (per_seed) t.header.insert(t.header.begin(), "job");
  t.header.push_back("done");
  for (const std::string& m : metrics) t.header.push_back(m);
  for (const std::string& o : outcomes) t.header.push_back(o);
  size_t r = 0;
  for (const Row& row : rows) {
    std::vector<std::string> line;
    if (per_seed) line.push_back(jobs.empty() ? "" : "");
    for (const auto& kv : row.cell) line.push_back(kv.second);
    line.push_back(absl::StrCat(
        row.done, "/", row.jobs,
        row.failed > 0 ? absl::StrCat(" (", row.failed, " failed)") : ""));
    for (const std::string& m : metrics) {
      const auto it = row.last.find(m);
      if (it == row.last.end()) {
        line.push_back("");
        continue;
      }
      const double v = Median(it->second);
      line.push_back(full_precision ? FormatDouble(v) : FormatForPeople(v));
    }
    for (const std::string& o : outcomes) {
      const auto it = row.holds.find(o);
      line.push_back(
          absl::StrCat(it == row.holds.end() ? 0 : it->second, "/", row.done));
    }
    t.rows.push_back(std::move(line));
    ++r;
  }
  if (per_seed) {
    // The job column: each row's job id (the key it was grouped by).
    for (const auto& [key, i] : index) t.rows[i][0] = key.substr(0, 12);
  }
  return t;
}

}  // namespace tailsweep
