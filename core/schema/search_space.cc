// Search spaces (search_space.h): drawing samples (random, scrambled
// Sobol) and the spec's `method`, `parameters`, `run_cap`, `sample_seed`
// and `metric` keys.

#include "core/schema/search_space.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec_parts.h"

namespace tailsweep {
namespace {

// SplitMix64's finaliser: a well-mixed 64-bit function of its input.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The n-th 64-bit number of the stream `stream` of `seed`.
uint64_t Counter64(uint64_t seed, uint64_t stream, uint64_t n) {
  return Mix64(Mix64(seed ^ Mix64(stream + 0x9e3779b97f4a7c15ULL)) +
               n * 0x9e3779b97f4a7c15ULL);
}

// A uniform number in [0, 1) with 53 random bits.
double Unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Joe and Kuo's direction numbers (new-joe-kuo-6.21201) for dimensions
// 2..21: the degree s of the primitive polynomial, its coefficients a, and
// the initial m_1..m_s. Dimension 1 is van der Corput's (every m_k = 1).
struct Direction {
  int s;
  uint32_t a;
  std::array<uint32_t, 7> m;
};
constexpr std::array<Direction, kMaxSobolDimensions - 1> kDirections = {{
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
    {6, 19, {1, 1, 1, 15, 7, 5}},
    {6, 22, {1, 3, 1, 15, 13, 25}},
    {6, 25, {1, 1, 5, 5, 19, 61}},
    {7, 1, {1, 3, 7, 11, 23, 15, 103}},
    {7, 4, {1, 3, 7, 13, 13, 15, 69}},
}};

constexpr int kBits = 32;
using DirectionNumbers = std::array<uint32_t, kBits>;  // v[k]: bit k+1

// The 32 direction numbers of dimension `dim` (0-based).
DirectionNumbers DirectionsOf(int dim) {
  DirectionNumbers v{};
  if (dim == 0) {
    for (int k = 0; k < kBits; ++k) v[k] = uint32_t{1} << (kBits - 1 - k);
    return v;
  }
  const Direction& d = kDirections[dim - 1];
  for (int k = 0; k < d.s; ++k) v[k] = d.m[k] << (kBits - 1 - k);
  for (int k = d.s; k < kBits; ++k) {
    v[k] = v[k - d.s] ^ (v[k - d.s] >> d.s);
    for (int l = 1; l < d.s; ++l) {
      if ((d.a >> (d.s - 1 - l)) & 1) v[k] ^= v[k - l];
    }
  }
  return v;
}

// The point of index i from the direction numbers, in Gray-code order (as
// Antonov and Saleev, and Joe and Kuo's generator, draw them).
uint32_t SobolCoordinate(const DirectionNumbers& v, uint64_t i) {
  const uint64_t gray = i ^ (i >> 1);
  uint32_t x = 0;
  for (int k = 0; k < kBits && (gray >> k) != 0; ++k) {
    if ((gray >> k) & 1) x ^= v[k];
  }
  return x;
}

// A random lower-triangular binary matrix (ones on its diagonal) applied to
// each direction number: output bit r (from the top) is the parity of the
// input's bits r and above picked by row r. Then a random digital shift.
struct Scramble {
  std::array<uint32_t, kBits> rows;  // row r: bits of the input it reads
  uint32_t shift;
};

Scramble ScrambleOf(uint64_t seed, int dim) {
  Scramble s{};
  for (int r = 0; r < kBits; ++r) {
    const uint32_t top = uint32_t{1} << (kBits - 1 - r);  // bit r itself
    // Random bits above bit r (the more significant ones).
    const uint32_t above = r == 0 ? 0 : ~((top << 1) - 1);
    s.rows[r] =
        top | (static_cast<uint32_t>(Counter64(seed, 1000 + dim, r)) & above);
  }
  s.shift = static_cast<uint32_t>(Counter64(seed, 2000 + dim, 0));
  return s;
}

uint32_t Apply(const Scramble& s, uint32_t x) {
  uint32_t out = 0;
  for (int r = 0; r < kBits; ++r) {
    if (__builtin_parity(x & s.rows[r])) out |= uint32_t{1} << (kBits - 1 - r);
  }
  return out;
}

std::string NumberText(double v) { return absl::StrFormat("%.6g", v); }

}  // namespace

std::string SearchMethodNames() {
  return "grid, random, sobol, tpe, cmaes, qmc, nsgaii";
}

uint64_t DefaultSampleSeed(absl::string_view sweep_name) {
  // 48 bits: exact in a YAML number and a double.
  return std::stoull(Sha256Hex(sweep_name).substr(0, 12), nullptr, 16);
}

std::vector<std::vector<uint32_t>> SobolPoints(int dims, int64_t count) {
  std::vector<std::vector<uint32_t>> points(count, std::vector<uint32_t>(dims));
  for (int d = 0; d < dims; ++d) {
    const DirectionNumbers v = DirectionsOf(d);
    for (int64_t i = 0; i < count; ++i) points[i][d] = SobolCoordinate(v, i);
  }
  return points;
}

std::string SampleText(const Distribution& d, double u) {
  u = std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
  if (!d.values.empty()) {
    const size_t i =
        std::min(d.values.size() - 1, static_cast<size_t>(u * d.values.size()));
    return d.values[i];
  }
  if (d.integer && d.q <= 0) {
    const double lo = std::ceil(d.min), hi = std::floor(d.max);
    double v;
    if (d.log) {
      // Uniform in log space over the cells [k - 0.5, k + 0.5).
      const double a = std::log(lo - 0.5), b = std::log(hi + 0.5);
      v = std::round(std::exp(a + u * (b - a)));
    } else {
      v = lo + std::floor(u * (hi - lo + 1));
    }
    return absl::StrCat(static_cast<int64_t>(std::clamp(v, lo, hi)));
  }
  double x =
      d.log
          ? std::exp(std::log(d.min) + u * (std::log(d.max) - std::log(d.min)))
          : d.min + u * (d.max - d.min);
  if (d.q > 0) {
    double k = std::round((x - d.min) / d.q);
    if (d.min + k * d.q > d.max * (1 + 1e-12) + 1e-300) k -= 1;
    x = d.min + k * d.q;
    if (d.integer) return absl::StrCat(std::llround(x));
  }
  return NumberText(std::clamp(x, d.min, d.max));
}

std::vector<std::vector<std::pair<std::string, std::string>>> DrawSamples(
    const SearchSpace& space, int64_t count) {
  const int dims = static_cast<int>(space.parameters.size());
  std::vector<std::vector<std::pair<std::string, std::string>>> samples(count);
  std::vector<DirectionNumbers> directions;
  std::vector<Scramble> scrambles;
  if (space.method == SearchMethod::kSobol) {
    for (int d = 0; d < dims; ++d) {
      DirectionNumbers v = DirectionsOf(d);
      const Scramble s = ScrambleOf(space.sample_seed, d);
      for (uint32_t& x : v) x = Apply(s, x);
      directions.push_back(v);
      scrambles.push_back(s);
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    for (int d = 0; d < dims; ++d) {
      double u;
      if (space.method == SearchMethod::kSobol) {
        const uint32_t x =
            SobolCoordinate(directions[d], i) ^ scrambles[d].shift;
        u = (static_cast<double>(x) + 0.5) * 0x1.0p-32;
      } else {
        u = Unit(Counter64(space.sample_seed, d, i));
      }
      samples[i].emplace_back(space.parameters[d].key,
                              SampleText(space.parameters[d].distribution, u));
    }
  }
  return samples;
}

// ---------------------------------------------------------------------------
// The spec's keys.

namespace {

// A `{values: [...]}` distribution.
absl::StatusOr<Distribution> ParseValues(absl::string_view source,
                                         const YAML::Node& node,
                                         const std::string& key,
                                         const SweepSpec& spec) {
  const std::string what = absl::StrCat("parameter '", key, "'");
  Distribution d;
  const YAML::Node values = node["values"];
  if (node["min"] || node["max"] || node["log"] || node["int"] || node["q"]) {
    return ErrorAt(
        source, node,
        absl::StrCat(what, ": give either values or min/max, not both"));
  }
  if (!values.IsSequence() || values.size() == 0) {
    return ErrorAt(source, values,
                   absl::StrCat(what, ": values must be a non-empty list"));
  }
  std::set<std::string> seen;
  for (const YAML::Node& v : values) {
    absl::StatusOr<std::string> text =
        Scalar(source, v, absl::StrCat("each value of ", what));
    if (!text.ok()) return text.status();
    if (absl::Status s = CheckJobValue(spec, key, *text); !s.ok()) {
      return ErrorAt(source, v, s.message());
    }
    if (!seen.insert(*text).second) {
      return ErrorAt(source, v,
                     absl::StrCat(what, " lists '", *text, "' twice"));
    }
    d.values.push_back(*text);
  }
  return d;
}

// A range's `log`, `int` and `q` into `d` (min and max set).
absl::Status ParseFlags(absl::string_view source, const YAML::Node& node,
                        const std::string& what, Distribution& d) {
  for (const char* flag : {"log", "int"}) {
    if (const YAML::Node f = node[flag]) {
      absl::StatusOr<std::string> text =
          Scalar(source, f, absl::StrCat(what, "'s ", flag));
      if (!text.ok()) return text.status();
      if (*text != "true" && *text != "false") {
        return ErrorAt(source, f,
                       absl::StrCat(what, ": ", flag,
                                    " is true or false (got '", *text, "')"));
      }
      (std::string(flag) == "log" ? d.log : d.integer) = *text == "true";
    }
  }
  if (const YAML::Node q = node["q"]) {
    absl::StatusOr<double> step =
        NumberOf(source, q, absl::StrCat(what, "'s q"));
    if (!step.ok()) return step.status();
    if (!(*step > 0) || *step > d.max - d.min) {
      return ErrorAt(source, q,
                     absl::StrCat(what, ": q (", FormatDouble(*step),
                                  ") must be above 0 and at most max - min (",
                                  FormatDouble(d.max - d.min), ")"));
    }
    const double steps = (d.max - d.min) / *step;
    if (std::abs(steps - std::round(steps)) > 1e-9 * std::max(1.0, steps)) {
      return ErrorAt(
          source, q,
          absl::StrCat(what, ": max - min (", FormatDouble(d.max - d.min),
                       ") must be a whole number of steps q (",
                       FormatDouble(*step), ")"));
    }
    if (d.log) {
      return ErrorAt(source, q,
                     absl::StrCat(what,
                                  ": q steps are linear; drop log or "
                                  "q"));
    }
    if (d.integer && *step != std::floor(*step)) {
      return ErrorAt(source, q,
                     absl::StrCat(what,
                                  ": with int: true, q must be a whole "
                                  "number (got ",
                                  FormatDouble(*step), ")"));
    }
    d.q = *step;
  }
  return absl::OkStatus();
}

absl::StatusOr<Distribution> ParseDistribution(absl::string_view source,
                                               const YAML::Node& node,
                                               const std::string& key,
                                               const SweepSpec& spec) {
  const std::string what = absl::StrCat("parameter '", key, "'");
  if (!node.IsMap()) {
    return ErrorAt(
        source, node,
        absl::StrCat(what,
                     " must be a distribution: {values: [...]}, {min: A, "
                     "max: B} with optional log: true, int: true or q: STEP"));
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, what));
  static const std::set<std::string> kKeys = {"values", "min", "max",
                                              "log",    "int", "q"};
  for (const auto& item : node) {
    absl::StatusOr<std::string> k = Key(source, item.first);
    if (!k.ok()) return k.status();
    if (kKeys.count(*k) == 0) {
      return ErrorAt(source, item.first,
                     absl::StrCat(what, ": unknown key '", *k,
                                  "'; allowed: values, min, max, log, int, q"));
    }
  }
  if (node["values"]) return ParseValues(source, node, key, spec);
  Distribution d;
  if (!node["min"] || !node["max"]) {
    return ErrorAt(source, node,
                   absl::StrCat(what, " needs min and max (or values)"));
  }
  absl::StatusOr<double> min =
      NumberOf(source, node["min"], absl::StrCat(what, "'s min"));
  if (!min.ok()) return min.status();
  absl::StatusOr<double> max =
      NumberOf(source, node["max"], absl::StrCat(what, "'s max"));
  if (!max.ok()) return max.status();
  d.min = *min;
  d.max = *max;
  if (!(d.min < d.max)) {
    return ErrorAt(
        source, node["min"],
        absl::StrCat(what, ": min (", FormatDouble(d.min),
                     ") must be below max (", FormatDouble(d.max), ")"));
  }
  TS_RETURN_IF_ERROR(ParseFlags(source, node, what, d));
  if (d.log && d.min <= 0) {
    return ErrorAt(
        source, node["min"],
        absl::StrCat(what, ": a log range must stay above 0 (min is ",
                     FormatDouble(d.min), ")"));
  }
  if (d.integer && std::ceil(d.min) > std::floor(d.max)) {
    return ErrorAt(
        source, node,
        absl::StrCat(what, ": no whole number lies in [", FormatDouble(d.min),
                     ", ", FormatDouble(d.max), "]"));
  }
  // The kind must take the range's ends (a number key, in its range).
  for (double u : {0.0, 1.0}) {
    const std::string text = SampleText(d, u);
    if (absl::Status s = CheckJobValue(spec, key, text); !s.ok()) {
      return ErrorAt(source, node,
                     absl::StrCat(what, " draws ", text, ": ", s.message()));
    }
  }
  return d;
}

absl::Status ParseMetric(absl::string_view source, const YAML::Node& node,
                         SearchSpace& space) {
  if (!node.IsMap()) {
    return ErrorAt(source, node,
                   "'metric' must be {name: METRIC, goal: minimize|maximize}");
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, "'metric'"));
  for (const auto& item : node) {
    absl::StatusOr<std::string> k = Key(source, item.first);
    if (!k.ok()) return k.status();
    if (*k != "name" && *k != "goal") {
      return ErrorAt(source, item.first,
                     absl::StrCat("'metric': unknown key '", *k,
                                  "'; allowed: name, goal"));
    }
  }
  if (!node["name"]) return ErrorAt(source, node, "'metric' needs a name");
  MetricGoal m;
  absl::StatusOr<std::string> name =
      Scalar(source, node["name"], "the metric's name");
  if (!name.ok()) return name.status();
  if (name->empty()) return ErrorAt(source, node["name"], "empty metric name");
  m.name = *name;
  if (const YAML::Node goal = node["goal"]) {
    absl::StatusOr<bool> maximize = ParseGoal(source, goal);
    if (!maximize.ok()) return maximize.status();
    m.maximize = *maximize;
  }
  space.metric = m;
  return absl::OkStatus();
}

// The cells of the grid and zip the spec keeps (after `exclude`).
int64_t KeptCells(const SweepSpec& spec) {
  if (spec.grid.empty() && spec.zip.empty()) return 1;
  int64_t kept = 0;
  ForEachCell(spec, [&](const KeyValues&) { ++kept; });
  return kept;
}

}  // namespace

absl::StatusOr<bool> ParseGoal(absl::string_view source,
                               const YAML::Node& node) {
  absl::StatusOr<std::string> goal = Scalar(source, node, "'goal'");
  if (!goal.ok()) return goal.status();
  if (*goal != "minimize" && *goal != "maximize") {
    return ErrorAt(
        source, node,
        absl::StrCat("goal '", *goal, "'; allowed: minimize, maximize"));
  }
  return *goal == "maximize";
}

// `method:` into space.method and method_name.
static absl::Status ParseMethod(absl::string_view source,
                                const YAML::Node& root, SearchSpace& space) {
  if (const YAML::Node method = root["method"]) {
    absl::StatusOr<std::string> name = Scalar(source, method, "'method'");
    if (!name.ok()) return name.status();
    if (*name == "grid") {
      space.method = SearchMethod::kGrid;
    } else if (*name == "random") {
      space.method = SearchMethod::kRandom;
    } else if (*name == "sobol") {
      space.method = SearchMethod::kSobol;
    } else if (*name == "tpe" || *name == "cmaes" || *name == "qmc" ||
               *name == "nsgaii") {
      space.method = SearchMethod::kDriven;
    } else {
      return ErrorAt(
          source, method,
          absl::StrCat("method '", *name, "'; allowed: ", SearchMethodNames()));
    }
    space.method_name = *name;
  }
  return absl::OkStatus();
}

// `sample_seed` (default from the name) and `run_cap` of a sampled method.
static absl::Status ParseRunCap(absl::string_view source,
                                const YAML::Node& root, SweepSpec& spec) {
  SearchSpace& space = spec.space;
  space.sample_seed = DefaultSampleSeed(spec.name);
  if (const YAML::Node seed = root["sample_seed"]) {
    absl::StatusOr<int64_t> s =
        IntIn(source, seed, "'sample_seed'", 0, int64_t{1} << 53);
    if (!s.ok()) return s.status();
    space.sample_seed = static_cast<uint64_t>(*s);
    space.sample_seed_given = true;
  }
  const YAML::Node cap = root["run_cap"];
  if (!cap) {
    if (space.method == SearchMethod::kDriven) return absl::OkStatus();
    return ErrorAt(source, root["method"],
                   absl::StrCat("method ", space.method_name,
                                " needs 'run_cap': how many runs in all"));
  }
  absl::StatusOr<int64_t> runs =
      IntIn(source, cap, "'run_cap'", 1, kMaxSweepCells);
  if (!runs.ok()) return runs.status();
  space.run_cap = *runs;
  if (space.method != SearchMethod::kDriven) {
    const int64_t cells = KeptCells(spec);
    if (cells == 0 || space.run_cap % cells != 0) {
      return ErrorAt(
          source, cap,
          absl::StrCat("run_cap ", space.run_cap, " must be a multiple of the ",
                       cells, " grid cells each sample runs on (e.g. ",
                       std::max<int64_t>(cells, 1) *
                           std::max<int64_t>(
                               space.run_cap / std::max<int64_t>(cells, 1), 1),
                       ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseSearchSpace(absl::string_view source, const YAML::Node& root,
                              SweepSpec& spec) {
  SearchSpace& space = spec.space;
  TS_RETURN_IF_ERROR(ParseMethod(source, root, space));
  const bool sampled = space.method != SearchMethod::kGrid;
  for (const char* key : {"parameters", "run_cap", "sample_seed"}) {
    if (root[key] && !sampled) {
      return ErrorAt(source, root[key],
                     absl::StrCat("'", key,
                                  "' needs a search method (method: random, "
                                  "sobol or tpe); a grid lists its values "
                                  "in 'grid'"));
    }
  }
  if (root["metric"]) {
    TS_RETURN_IF_ERROR(ParseMetric(source, root["metric"], space));
  }
  if (!sampled) return absl::OkStatus();
  if (spec.search) {
    return ErrorAt(source, root["search"],
                   "a boundary 'search' runs on a grid; drop 'method' or "
                   "'search'");
  }
  const YAML::Node parameters = root["parameters"];
  if (!parameters) {
    return ErrorAt(source, root["method"],
                   absl::StrCat("method ", space.method_name,
                                " needs 'parameters': a distribution per "
                                "key, e.g. lr: {min: 1e-4, max: 1, log: "
                                "true}"));
  }
  if (!parameters.IsMap() || parameters.size() == 0) {
    return ErrorAt(source, parameters,
                   "'parameters' must map each key to a distribution");
  }
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, parameters, "'parameters'"));
  for (const auto& item : parameters) {
    absl::StatusOr<std::string> key =
        NewAxisKey(source, item.first, spec, "parameter");
    if (!key.ok()) return key.status();
    absl::StatusOr<Distribution> d =
        ParseDistribution(source, item.second, *key, spec);
    if (!d.ok()) return d.status();
    space.parameters.push_back({*key, *std::move(d)});
  }
  if (space.method == SearchMethod::kSobol &&
      space.parameters.size() > static_cast<size_t>(kMaxSobolDimensions)) {
    return ErrorAt(source, parameters,
                   absl::StrCat("sobol draws at most ", kMaxSobolDimensions,
                                " parameters (", space.parameters.size(),
                                " given); use method: random"));
  }
  if (space.method == SearchMethod::kDriven && !space.metric) {
    return ErrorAt(source, root["method"],
                   absl::StrCat("method ", space.method_name,
                                " needs 'metric: {name: METRIC, goal: "
                                "minimize|maximize}' to optimize"));
  }
  return ParseRunCap(source, root, spec);
}

void EmitSearchSpace(YAML::Emitter& out, const SearchSpace& space) {
  if (space.method != SearchMethod::kGrid) {
    out << YAML::Key << "method" << YAML::Value << space.method_name;
    out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
    for (const SearchParameter& p : space.parameters) {
      const Distribution& d = p.distribution;
      out << YAML::Key << p.key << YAML::Value << YAML::Flow << YAML::BeginMap;
      if (!d.values.empty()) {
        out << YAML::Key << "values" << YAML::Value << YAML::Flow << d.values;
      } else {
        out << YAML::Key << "min" << YAML::Value << FormatDouble(d.min);
        out << YAML::Key << "max" << YAML::Value << FormatDouble(d.max);
        if (d.log) out << YAML::Key << "log" << YAML::Value << true;
        if (d.integer) out << YAML::Key << "int" << YAML::Value << true;
        if (d.q > 0)
          out << YAML::Key << "q" << YAML::Value << FormatDouble(d.q);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
    if (space.run_cap > 0) {
      out << YAML::Key << "run_cap" << YAML::Value << space.run_cap;
    }
    out << YAML::Key << "sample_seed" << YAML::Value << space.sample_seed;
  }
  if (space.metric) {
    out << YAML::Key << "metric" << YAML::Value << YAML::Flow << YAML::BeginMap
        << YAML::Key << "name" << YAML::Value << space.metric->name << YAML::Key
        << "goal" << YAML::Value
        << (space.metric->maximize ? "maximize" : "minimize") << YAML::EndMap;
  }
}

}  // namespace tailsweep
