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
#include "core/number_text.h"
#include "core/schema/boundary_search.h"
#include "core/schema/json_number.h"
#include "report/result_json.h"

namespace tailsweep::cli {
namespace {

std::string Number(double v) { return std::isnan(v) ? "" : FormatForPeople(v); }

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

}  // namespace

absl::Status PrintSearchResults(Connection& c, const SweepSpec& spec,
                                const std::string& format) {
  const SearchSpec& s = *spec.search;
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  absl::StatusOr<std::vector<CellSearch>> boundaries =
      BoundariesOf(**api, spec);
  if (!boundaries.ok()) return boundaries.status();
  const std::vector<CellSearch>& plan = *boundaries;
  if (format == "json") {
    PrintJson(SearchJson(plan, JsonNumber));
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
        "where '%s' flips along %s in [%s, %s] (%s scale; it holds %s the "
        "boundary): boundary = the bracket's midpoint; probes: value yes/n "
        "(+ runs to come); %d runs in all. The plan of each probe point: "
        "tailsweep results %s --probes\n",
        OutcomeName(s), s.key, ProbeText(s, s.lo), ProbeText(s, s.hi),
        s.log_scale ? "log" : "linear", s.rising ? "above" : "below", runs,
        spec.name);
  }
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
