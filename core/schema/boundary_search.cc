#include "core/schema/boundary_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "core/schema/job_kinds.h"

namespace tailsweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Verdict = ProbePoint::Verdict;
using State = CellSearch::State;

double Midpoint(const SearchSpec& s, double a, double b) {
  return s.log_scale ? std::sqrt(a * b) : (a + b) / 2;
}

bool NarrowEnough(const SearchSpec& s, double lo, double hi) {
  return s.log_scale ? hi / lo - 1 <= s.tolerance : hi - lo <= s.tolerance;
}

// The verdict of a probe whose runs are all in; may ask for extra seeds.
Verdict Judge(const SearchSpec& s, ProbePoint& p,
              std::vector<std::pair<std::string, int64_t>>& add) {
  const int64_t n = p.yes + p.no;
  if (n == 0) return Verdict::kUnknown;
  std::tie(p.low, p.high) = WilsonInterval(p.yes, n);
  if (p.high < 0.5) return Verdict::kBelow;
  if (p.low > 0.5) return Verdict::kAbove;
  const int64_t seeds = p.yes + p.no + p.failed;
  if (seeds < s.seeds + s.extra_seeds) {
    for (int64_t seed = seeds; seed < s.seeds + s.extra_seeds; ++seed) {
      add.emplace_back(p.value, seed);
    }
    return Verdict::kPending;
  }
  return 2 * p.yes >= n ? Verdict::kAbove : Verdict::kBelow;
}

// Counts the jobs of one cell into its probe points, by x.
std::vector<ProbePoint> Probes(const SweepSpec& spec,
                               const std::vector<const SearchJob*>& jobs) {
  const SearchSpec& s = *spec.search;
  std::map<std::string, ProbePoint> by_value;
  for (const SearchJob* job : jobs) {
    std::string value;
    for (const auto& [k, v] : job->cell) {
      if (k == s.key) value = v;
    }
    ProbePoint& p = by_value[value];
    p.value = value;
    if (!absl::SimpleAtod(value, &p.x)) p.x = kNaN;
    switch (job->state) {
      case JobState::kQueued:
      case JobState::kLeased:
        ++p.pending;
        break;
      case JobState::kDone: {
        const std::optional<bool> yes = OutcomeOf(spec, job->result_json);
        if (!yes) {
          ++p.failed;
        } else if (*yes) {
          ++p.yes;
        } else {
          ++p.no;
        }
        break;
      }
      case JobState::kFailed:
      case JobState::kCancelled:
        ++p.failed;
        break;
    }
  }
  std::vector<ProbePoint> out;
  for (auto& [value, p] : by_value) out.push_back(std::move(p));
  std::sort(out.begin(), out.end(),
            [](const ProbePoint& a, const ProbePoint& b) { return a.x < b.x; });
  return out;
}

void AddProbe(const SearchSpec& s, const std::string& value, CellSearch& c) {
  for (int64_t seed = 0; seed < s.seeds; ++seed)
    c.add.emplace_back(value, seed);
}

// The state, bracket and next probe once the verdicts are in.
void Advance(const SearchSpec& s, CellSearch& c) {
  const std::string lo = ProbeText(s, s.lo), hi = ProbeText(s, s.hi);
  bool has_lo = false, has_hi = false, pending = !c.add.empty();
  for (const ProbePoint& p : c.probes) {
    has_lo = has_lo || p.value == lo;
    has_hi = has_hi || p.value == hi;
    if (p.verdict == Verdict::kPending) pending = true;
    if (p.verdict == Verdict::kUnknown) {
      c.state = State::kNoResults;
      return;
    }
  }
  // Both ends first (they are the sweep's first jobs; asked again if gone).
  if (!has_lo) AddProbe(s, lo, c);
  if (!has_hi) AddProbe(s, hi, c);
  if (!has_lo || !has_hi) return;
  // The verdicts of points above and below the boundary: a rising outcome
  // holds (the vote is above 1/2) above it, a falling one below it.
  const Verdict upper_side = s.rising ? Verdict::kAbove : Verdict::kBelow;
  const Verdict lower_side = s.rising ? Verdict::kBelow : Verdict::kAbove;
  // The bracket: the smallest point judged above the boundary, and the
  // largest point below that judged below it.
  const auto above = std::find_if(
      c.probes.begin(), c.probes.end(),
      [&](const ProbePoint& p) { return p.verdict == upper_side; });
  const ProbePoint* below = nullptr;
  for (auto it = c.probes.begin(); it != above; ++it) {
    if (it->verdict == lower_side) below = &*it;
  }
  if (above != c.probes.end() && below != nullptr) {
    c.bracket_lo = below->x;
    c.bracket_hi = above->x;
    c.estimate = Midpoint(s, below->x, above->x);
  }
  if (pending) return;
  if (above == c.probes.end()) {
    c.state = State::kAboveRange;
    return;
  }
  if (below == nullptr) {
    c.state = State::kBelowRange;
    return;
  }
  const std::string mid = ProbeText(s, c.estimate);
  if (NarrowEnough(s, below->x, above->x) || mid == below->value ||
      mid == above->value) {
    c.state = State::kFound;
    return;
  }
  if (static_cast<int64_t>(c.probes.size()) >= s.max_probes) {
    c.state = State::kOutOfProbes;
    return;
  }
  AddProbe(s, mid, c);
}

}  // namespace

absl::string_view CellSearchStateName(CellSearch::State state) {
  switch (state) {
    case State::kSearching:
      return "searching";
    case State::kFound:
      return "found";
    case State::kOutOfProbes:
      return "out of probes";
    case State::kBelowRange:
      return "below range";
    case State::kAboveRange:
      return "above range";
    case State::kNoResults:
      return "no results";
  }
  return "";
}

absl::string_view ProbeVerdictName(ProbePoint::Verdict verdict) {
  switch (verdict) {
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

std::optional<bool> OutcomeOf(const SweepSpec& spec,
                              const std::string& result_json) {
  const SearchSpec& search = *spec.search;
  const JobKindDef& def = KindDef(spec.kind);
  if (def.outcomes == nullptr) return std::nullopt;
  const JobOutcomes o = def.outcomes(result_json);
  if (!search.fact.empty()) {
    const auto it = o.facts.find(search.fact);
    if (it == o.facts.end() || std::isnan(it->second)) return std::nullopt;
    return it->second > search.above;
  }
  const auto it = o.holds.find(search.holds);
  if (it == o.holds.end()) return std::nullopt;
  return it->second;
}

std::pair<double, double> WilsonInterval(int64_t yes, int64_t n) {
  constexpr double z = 1.959963984540054;  // 95%
  const double p = static_cast<double>(yes) / static_cast<double>(n);
  const double z2n = z * z / static_cast<double>(n);
  const double center = (p + z2n / 2) / (1 + z2n);
  const double half =
      z * std::sqrt(p * (1 - p) / static_cast<double>(n) + z2n / (4 * n)) /
      (1 + z2n);
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

std::vector<CellSearch> PlanSearch(const SweepSpec& spec,
                                   const std::vector<SearchJob>& jobs) {
  const SearchSpec& s = *spec.search;
  std::vector<std::string> order;
  std::map<std::string, std::pair<KeyValues, std::vector<const SearchJob*>>>
      cells;
  for (const SearchJob& job : jobs) {
    KeyValues grid;
    for (const auto& kv : job.cell) {
      if (kv.first != s.key && kv.first != "seed") grid.push_back(kv);
    }
    std::string id;
    for (const auto& [k, v] : grid) id += k + "=" + v + "\n";
    auto [it, added] =
        cells.try_emplace(id, grid, std::vector<const SearchJob*>{});
    if (added) order.push_back(id);
    it->second.second.push_back(&job);
  }
  std::vector<CellSearch> out;
  for (const std::string& id : order) {
    auto& [grid, cell_jobs] = cells[id];
    CellSearch c;
    c.cell = grid;
    c.bracket_lo = c.bracket_hi = c.estimate = kNaN;
    c.runs = static_cast<int64_t>(cell_jobs.size());
    c.probes = Probes(spec, cell_jobs);
    for (ProbePoint& p : c.probes) {
      p.verdict = p.pending > 0 ? Verdict::kPending : Judge(s, p, c.add);
    }
    Advance(s, c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tailsweep
