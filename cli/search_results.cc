#include "cli/search_results.h"

#include <cmath>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "cli/render.h"
#include "core/schema/boundary_search.h"
#include "core/schema/json_number.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

std::string Number(double v) {
  return std::isnan(v) ? "" : absl::StrFormat("%.4g", v);
}

std::string Verdict(ProbePoint::Verdict v) {
  switch (v) {
    case ProbePoint::Verdict::kPending:
      return "pending";
    case ProbePoint::Verdict::kBelow:
      return "below";
    case ProbePoint::Verdict::kAbove:
      return "above";
    case ProbePoint::Verdict::kUnknown:
      return "no results";
  }
  return "";
}

// "x yes/n" per probe point, "(+k)" for runs still to come.
std::string ProbesText(const CellSearch& c) {
  std::vector<std::string> parts;
  for (const ProbePoint& p : c.probes) {
    std::string t = absl::StrCat(p.value, " ", p.yes, "/", p.yes + p.no);
    if (p.pending > 0) absl::StrAppend(&t, " (+", p.pending, ")");
    parts.push_back(std::move(t));
  }
  return absl::StrJoin(parts, ", ");
}

std::string CellLabel(const KeyValues& cell) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : cell) parts.push_back(absl::StrCat(k, "=", v));
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

json SearchJson(const std::vector<CellSearch>& plan) {
  json doc = json::array();
  for (const CellSearch& c : plan) {
    json row = json::object();
    for (const auto& [k, v] : c.cell) row[k] = v;
    row["state"] = std::string(CellSearchStateName(c.state));
    row["estimate"] = JsonNumber(c.estimate);
    row["bracket_lo"] = JsonNumber(c.bracket_lo);
    row["bracket_hi"] = JsonNumber(c.bracket_hi);
    row["runs"] = c.runs;
    json probes = json::array();
    for (const ProbePoint& p : c.probes) {
      probes.push_back({{"value", p.value},
                        {"yes", p.yes},
                        {"n", p.yes + p.no},
                        {"failed", p.failed},
                        {"pending", p.pending},
                        {"low", JsonNumber(p.low)},
                        {"high", JsonNumber(p.high)},
                        {"verdict", Verdict(p.verdict)}});
    }
    row["probes"] = std::move(probes);
    doc.push_back(std::move(row));
  }
  return doc;
}

}  // namespace

absl::Status PrintSearchResults(Connection& c, const SweepSpec& spec,
                                const std::string& format) {
  const SearchSpec& s = *spec.search;
  absl::StatusOr<std::vector<v1::JobInfo>> infos =
      ListAllJobs(c, spec.name, "");
  if (!infos.ok()) return infos.status();
  std::vector<SearchJob> jobs;
  for (const v1::JobInfo& j : *infos) {
    SearchJob job;
    for (const v1::KeyValue& kv : j.cell())
      job.cell.emplace_back(kv.key(), kv.value());
    job.state = ParseJobState(j.state()).value_or(JobState::kQueued);
    job.result_json = j.result_json();
    jobs.push_back(std::move(job));
  }
  const std::vector<CellSearch> plan = PlanSearch(spec, jobs);
  if (format == "json") {
    PrintJson(SearchJson(plan));
    return absl::OkStatus();
  }
  Table t;
  const bool flat = format == "csv";
  if (flat) {
    for (const auto& [k, v] : plan.empty() ? KeyValues{} : plan[0].cell) {
      t.header.push_back(k);
    }
  } else {
    t.header.push_back("cell");
  }
  for (const char* h :
       {"state", "boundary", "bracket_lo", "bracket_hi", "runs", "probes"}) {
    t.header.push_back(h);
  }
  int64_t runs = 0;
  for (const CellSearch& cell : plan) {
    std::vector<std::string> row;
    if (flat) {
      for (const auto& kv : cell.cell) row.push_back(kv.second);
    } else {
      row.push_back(CellLabel(cell.cell));
    }
    for (const std::string& v :
         {std::string(CellSearchStateName(cell.state)), Number(cell.estimate),
          Number(cell.bracket_lo), Number(cell.bracket_hi),
          absl::StrCat(cell.runs), ProbesText(cell)}) {
      row.push_back(v);
    }
    t.rows.push_back(std::move(row));
    runs += cell.runs;
  }
  if (flat) {
    std::cout << RenderCsv(t);
    return absl::OkStatus();
  }
  std::cout << (format == "markdown" ? RenderMarkdown(t) : RenderText(t));
  if (format == "table") {
    std::cout << absl::StrFormat(
        "where '%s' flips along %s in [%s, %s] (%s scale): boundary = the "
        "bracket's midpoint; probes: value yes/n (+ runs to come); %d runs "
        "in all. The plan of each probe point: tailsweep results %s --probes\n",
        OutcomeName(s), s.key, ProbeText(s, s.lo), ProbeText(s, s.hi),
        s.log_scale ? "log" : "linear", runs, spec.name);
  }
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
