#include "core/schema/command_job.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/schema/device_placement.h"
#include "core/schema/file_util.h"
#include "core/schema/lease_file.h"

namespace tailsweep {
namespace {

using json = nlohmann::json;
using Params = std::vector<std::pair<std::string, std::string>>;

constexpr absl::string_view kMacros[] = {
    "args", "args_no_hyphens", "args_json_file", "job_dir", "checkpoint_dir"};

bool Reserved(absl::string_view key) {
  return key == kCommandParam || key == kWorkdirParam;
}

const char* AtName(OutcomeRule::At at) {
  switch (at) {
    case OutcomeRule::At::kLast:
      return "last";
    case OutcomeRule::At::kMin:
      return "min";
    case OutcomeRule::At::kMax:
      return "max";
    case OutcomeRule::At::kAny:
      return "any";
  }
  return "last";
}

// The text of a JSON scalar as a parameter's words carry it.
std::string ScalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

// Single-quotes `word` for /bin/sh.
std::string ShellQuote(absl::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Replaces every ${NAME} in `word` with `value(NAME)`.
absl::StatusOr<std::string> Substitute(
    absl::string_view word,
    const std::function<absl::StatusOr<std::string>(absl::string_view)>&
        value) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = word.find("${", pos);
    if (open == absl::string_view::npos) break;
    const size_t close = word.find('}', open);
    if (close == absl::string_view::npos) break;
    absl::StrAppend(&out, word.substr(pos, open - pos));
    absl::StatusOr<std::string> v =
        value(word.substr(open + 2, close - open - 2));
    if (!v.ok()) return v.status();
    out += *v;
    pos = close + 1;
  }
  absl::StrAppend(&out, word.substr(pos));
  return out;
}

}  // namespace

absl::Status CheckParamName(absl::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            (absl::ascii_isalpha(name[0]) || name[0] == '_');
  for (char c : name) {
    ok = ok && (absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter name '", name,
        "': allowed: 1-64 letters, digits, '_', '-', '.', starting with a "
        "letter or '_'"));
  }
  return absl::OkStatus();
}

json ParamJson(absl::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  int64_t i = 0;
  if (absl::SimpleAtoi(text, &i)) return i;
  double d = 0;
  if (!text.empty() && !absl::ascii_isalpha(text[0]) &&
      absl::SimpleAtod(text, &d) && std::isfinite(d)) {
    return d;
  }
  if (absl::StartsWith(text, "[") && absl::EndsWith(text, "]")) {
    json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (list.is_array()) return list;
  }
  return std::string(text);
}

std::string FlowListText(const std::vector<std::string>& items) {
  json list = json::array();
  for (const std::string& item : items) list.push_back(ParamJson(item));
  return list.dump();
}

std::string CommandDefinitionJson(const CommandSpec& s) {
  json env = json::array();
  for (const auto& [k, v] : s.env) env.push_back({k, v});
  json outcomes = json::array();
  for (const OutcomeRule& o : s.outcomes) {
    json rule = {{"name", o.name}, {"metric", o.metric}};
    if (o.not_finite) {
      rule["not_finite"] = true;
    } else {
      rule[o.above ? "above" : "below"] = o.threshold;
      rule["at"] = AtName(o.at);
    }
    outcomes.push_back(std::move(rule));
  }
  // Keys in a fixed order (nlohmann sorts object keys): the same spec gives
  // the same text, hence the same job ids.
  json doc = {{"command", s.command}, {"shell", s.shell},
              {"env", env},           {"code_hash", s.code_hash},
              {"setup", s.setup},     {"stop_grace_s", s.stop_grace_s},
              {"outcomes", outcomes}, {"stop_on", s.stop_on}};
  // Only when set: definitions from before the key keep their text, hence
  // their jobs' ids.
  if (s.stop_after_steps != 0) doc["stop_after_steps"] = s.stop_after_steps;
  return doc.dump();
}

absl::StatusOr<CommandSpec> ParseCommandDefinition(absl::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("command job definition: ", why));
  };
  if (!doc.is_object()) return bad("not a JSON object");
  CommandSpec s;
  try {
    s.command = doc.at("command").get<std::vector<std::string>>();
    s.shell = doc.at("shell").get<bool>();
    for (const json& kv : doc.at("env")) {
      s.env.emplace_back(kv.at(0).get<std::string>(),
                         kv.at(1).get<std::string>());
    }
    s.code_hash = doc.at("code_hash").get<std::string>();
    s.setup = doc.at("setup").get<std::vector<std::string>>();
    s.stop_grace_s = doc.at("stop_grace_s").get<int64_t>();
    for (const json& r : doc.at("outcomes")) {
      OutcomeRule o;
      o.name = r.at("name").get<std::string>();
      o.metric = r.at("metric").get<std::string>();
      o.not_finite = r.value("not_finite", false);
      if (!o.not_finite) {
        o.above = r.contains("above");
        o.threshold = r.at(o.above ? "above" : "below").get<double>();
        const std::string at = r.at("at").get<std::string>();
        for (OutcomeRule::At a :
             {OutcomeRule::At::kLast, OutcomeRule::At::kMin,
              OutcomeRule::At::kMax, OutcomeRule::At::kAny}) {
          if (at == AtName(a)) o.at = a;
        }
      }
      s.outcomes.push_back(std::move(o));
    }
    s.stop_on = doc.at("stop_on").get<std::vector<std::string>>();
    s.stop_after_steps = doc.value("stop_after_steps", int64_t{0});
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  if (s.command.empty()) return bad("an empty command");
  return s;
}

Params UserParams(const Params& params) {
  Params out;
  for (const auto& kv : params) {
    if (!Reserved(kv.first)) out.push_back(kv);
  }
  return out;
}

std::string ParamsFileJson(const Params& params) {
  json doc = json::object();
  for (const auto& [k, v] : UserParams(params)) doc[k] = ParamJson(v);
  return doc.dump(2) + "\n";
}

absl::Status CheckTemplate(const CommandSpec& spec, const Params& params) {
  std::set<std::string> keys;
  for (const auto& [k, v] : UserParams(params)) keys.insert(k);
  std::vector<std::string> allowed;
  for (absl::string_view m : kMacros) allowed.push_back(std::string(m));
  for (const std::string& k : keys) allowed.push_back(k);
  for (size_t i = 0; i < spec.command.size(); ++i) {
    const std::string& word = spec.command[i];
    absl::StatusOr<std::string> checked = Substitute(
        word, [&](absl::string_view name) -> absl::StatusOr<std::string> {
          const bool list_macro = name == "args" || name == "args_no_hyphens";
          if (list_macro && word != absl::StrCat("${", name, "}")) {
            return absl::InvalidArgumentError(absl::StrCat(
                "command word ", i + 1, " '", word, "': ${", name,
                "} must be a word of its own (it becomes several)"));
          }
          if (std::find(std::begin(kMacros), std::end(kMacros), name) !=
                  std::end(kMacros) ||
              keys.count(std::string(name)) > 0) {
            return std::string();
          }
          return absl::InvalidArgumentError(absl::StrCat(
              "command word ", i + 1, " '", word, "' names ${", name,
              "}, which is neither a macro nor a parameter; allowed: ",
              absl::StrJoin(allowed, ", ")));
        });
    if (!checked.ok()) return checked.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CodeHash(const std::string& base,
                                     const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::string manifest;
  auto add_file = [&](const fs::path& file,
                      const std::string& rel) -> absl::Status {
    absl::StatusOr<std::string> bytes = ReadFile(file.string());
    if (!bytes.ok()) return bytes.status();
    absl::StrAppend(&manifest, rel, "\n", bytes->size(), "\n",
                    Sha256Hex(*bytes), "\n");
    return absl::OkStatus();
  };
  auto skipped = [](const fs::path& p) {
    const std::string name = p.filename().string();
    return absl::StartsWith(name, ".") || name == "__pycache__";
  };
  for (const std::string& path : paths) {
    const fs::path full = fs::path(base) / path;
    std::error_code ec;
    if (fs::is_regular_file(full, ec)) {
      if (absl::Status s = add_file(full, path); !s.ok()) return s;
      continue;
    }
    if (!fs::is_directory(full, ec)) {
      return absl::NotFoundError(absl::StrCat("code path '", path, "' (",
                                              full.string(),
                                              "): no such file or folder"));
    }
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(full, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (skipped(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string rel =
          (fs::path(path) / fs::relative(f, full)).generic_string();
      if (absl::Status s = add_file(f, rel); !s.ok()) return s;
    }
  }
  return Sha256Hex(manifest);
}

namespace {

// The child's environment (docs/child-contract.md): where its files are,
// its threads and the GPUs it may see (the spec's own variables are added
// after, by the caller).
std::vector<std::string> ChildEnvironment(const ChildJob& job,
                                          const CommandSpec& spec,
                                          const std::string& params_file,
                                          const std::string& checkpoint_dir) {
  const std::string threads = absl::StrCat(job.threads);
  std::vector<std::string> env = {
      absl::StrCat("TAILSWEEP_JOB_ID=", job.job_id),
      absl::StrCat("TAILSWEEP_ATTEMPT=", job.attempt),
      absl::StrCat("TAILSWEEP_JOB_DIR=", job.dir),
      absl::StrCat("TAILSWEEP_PARAMS_FILE=", params_file),
      absl::StrCat("TAILSWEEP_METRICS_FILE=",
                   JobPath(job.dir, kMetricsFileName)),
      absl::StrCat("TAILSWEEP_CHECKPOINT_DIR=", checkpoint_dir),
      absl::StrCat("TAILSWEEP_RESULT_FILE=", JobPath(job.dir, kResultFileName)),
      absl::StrCat("TAILSWEEP_RESUME_STEP=", job.resume_step),
      absl::StrCat("TAILSWEEP_STOP_GRACE_S=", spec.stop_grace_s),
      absl::StrCat("TAILSWEEP_LEASE_FILE=", JobPath(job.dir, kLeaseFileName)),
      absl::StrCat("TAILSWEEP_LAB_BIN=", job.lab_bin),
      absl::StrCat("OMP_NUM_THREADS=", threads),
      absl::StrCat("MKL_NUM_THREADS=", threads),
      absl::StrCat("OPENBLAS_NUM_THREADS=", threads)};
  if (absl::StartsWith(job.device, "cuda:")) {
    env.push_back(
        absl::StrCat("CUDA_VISIBLE_DEVICES=", job.visible_devices.empty()
                                                  ? job.device.substr(5)
                                                  : job.visible_devices));
  } else {
    env.push_back("CUDA_VISIBLE_DEVICES=");
  }
  return env;
}

}  // namespace

absl::StatusOr<ChildCommand> CommandChildFor(const ChildJob& given) {
  // The child runs elsewhere (workdir): every path it is told is absolute.
  ChildJob job = given;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(job.dir, ec);
  if (!ec) job.dir = dir.lexically_normal().string();
  std::string definition, workdir;
  for (const auto& [k, v] : job.params) {
    if (k == kCommandParam) definition = v;
    if (k == kWorkdirParam) workdir = v;
  }
  absl::StatusOr<CommandSpec> spec = ParseCommandDefinition(definition);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckTemplate(*spec, job.params); !s.ok()) return s;
  const Params user = UserParams(job.params);
  const std::string checkpoint_dir = JobPath(job.dir, kCheckpointDirName);
  const std::string params_file = JobPath(job.dir, kParamsFileName);

  // The expanded argv: list macros become several words. For a shell
  // command the template's own text stays shell text and every expanded
  // value is quoted.
  const bool shell = spec->shell;
  auto quote = [&](std::string text) {
    return shell ? ShellQuote(text) : text;
  };
  std::vector<std::string> argv;
  for (const std::string& word : spec->command) {
    if (word == "${args}" || word == "${args_no_hyphens}") {
      const bool hyphens = word == "${args}";
      for (const auto& [k, v] : user) {
        if (k == kGpusKey) continue;  // placement, not the program's
        const json value = ParamJson(v);
        if (!hyphens) {
          argv.push_back(quote(absl::StrCat(
              k, "=", value.is_array() ? value.dump() : ScalarText(value))));
        } else if (value.is_boolean()) {
          if (value.get<bool>()) argv.push_back(quote(absl::StrCat("--", k)));
        } else if (value.is_array()) {
          argv.push_back(quote(absl::StrCat("--", k)));
          for (const json& item : value)
            argv.push_back(quote(ScalarText(item)));
        } else {
          argv.push_back(quote(absl::StrCat("--", k, "=", ScalarText(value))));
        }
      }
      continue;
    }
    absl::StatusOr<std::string> expanded = Substitute(
        word, [&](absl::string_view name) -> absl::StatusOr<std::string> {
          if (name == "args_json_file") return quote(params_file);
          if (name == "job_dir") return quote(job.dir);
          if (name == "checkpoint_dir") return quote(checkpoint_dir);
          for (const auto& [k, v] : user) {
            if (k == name) return quote(v);
          }
          return absl::InvalidArgumentError(
              absl::StrCat("${", name, "}: no such parameter"));
        });
    if (!expanded.ok()) return expanded.status();
    argv.push_back(*std::move(expanded));
  }

  ChildCommand out;
  // Setup lines and shell commands run in /bin/sh; otherwise the program
  // itself (PATH lookup), with no shell in between.
  if (shell) {
    std::string script = absl::StrJoin(spec->setup, "\n");
    if (!script.empty()) script += "\n";
    script += absl::StrJoin(argv, " ");
    out.argv = {"/bin/sh", "-c", script};
  } else if (!spec->setup.empty()) {
    const std::string script =
        absl::StrCat(absl::StrJoin(spec->setup, "\n"), "\nexec \"$@\"");
    out.argv = {"/bin/sh", "-c", script, "tailsweep-setup"};
    out.argv.insert(out.argv.end(), argv.begin(), argv.end());
  } else {
    out.argv = std::move(argv);
  }
  out.workdir = workdir.empty() ? job.dir : workdir;
  out.process_group = true;
  out.env = ChildEnvironment(job, *spec, params_file, checkpoint_dir);
  // The spec's own variables last: they win over ours.
  for (const auto& [k, v] : spec->env)
    out.env.push_back(absl::StrCat(k, "=", v));
  out.files = {{params_file, ParamsFileJson(job.params)}};
  return out;
}

std::string CommandResultJson(const std::string& child_result,
                              int64_t resumed_from_step, int64_t skipped_lines,
                              const std::string& early_stop) {
  json child = json::parse(child_result, nullptr, /*allow_exceptions=*/false);
  if (child.is_discarded()) child = nullptr;
  json doc = {{"kind", "command"},
              {"resumed_from_step", resumed_from_step},
              {"skipped_metric_lines", skipped_lines},
              {"child", child}};
  if (!early_stop.empty()) doc["early_stop"] = early_stop;
  return doc.dump();
}

absl::StatusOr<CommandResult> ParseCommandResult(absl::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.value("kind", "") != "command" ||
      !doc.contains("resumed_from_step") ||
      !doc["resumed_from_step"].is_number_integer()) {
    return absl::InvalidArgumentError(
        "a command job's result must be {\"kind\": \"command\", "
        "\"resumed_from_step\": N, ...}");
  }
  return CommandResult{doc["resumed_from_step"].get<int64_t>()};
}

std::vector<std::pair<std::string, bool>> JudgeOutcomes(
    const std::vector<OutcomeRule>& rules,
    const std::vector<MetricSummary>& metrics) {
  std::vector<std::pair<std::string, bool>> out;
  for (const OutcomeRule& rule : rules) {
    auto m = std::find_if(
        metrics.begin(), metrics.end(),
        [&](const MetricSummary& s) { return s.name == rule.metric; });
    bool holds = false;
    if (m != metrics.end()) {
      if (rule.not_finite) {
        holds = m->not_finite > 0;
      } else {
        double v = m->last;
        switch (rule.at) {
          case OutcomeRule::At::kLast:
            v = m->last;
            break;
          case OutcomeRule::At::kMin:
            v = m->min;
            break;
          case OutcomeRule::At::kMax:
            v = m->max;
            break;
          case OutcomeRule::At::kAny:
            v = rule.above ? m->max : m->min;
            break;
        }
        holds = std::isfinite(v) &&
                (rule.above ? v > rule.threshold : v < rule.threshold);
      }
    }
    out.emplace_back(rule.name, holds);
  }
  return out;
}

std::string CommandResultWithSummary(
    const std::string& result, const std::vector<MetricSummary>& metrics,
    const std::vector<std::pair<std::string, bool>>& outcomes) {
  json doc = json::parse(result, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) doc = json::object();
  json summary = json::object();
  auto number = [](double v) -> json {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  };
  for (const MetricSummary& m : metrics) {
    summary[m.name] = {{"points", m.points},     {"last_step", m.last_step},
                       {"last", number(m.last)}, {"min", number(m.min)},
                       {"max", number(m.max)},   {"not_finite", m.not_finite}};
  }
  doc["summary"] = std::move(summary);
  json judged = json::object();
  for (const auto& [name, holds] : outcomes) judged[name] = holds;
  doc["outcomes"] = std::move(judged);
  return doc.dump();
}

bool StaysTrue(const OutcomeRule& rule) {
  return rule.not_finite || rule.at == OutcomeRule::At::kAny ||
         (rule.at == OutcomeRule::At::kMax && rule.above) ||
         (rule.at == OutcomeRule::At::kMin && !rule.above);
}

bool HoldsAt(const OutcomeRule& rule, double value) {
  if (rule.not_finite) return !std::isfinite(value);
  if (!std::isfinite(value)) return false;
  return rule.above ? value > rule.threshold : value < rule.threshold;
}

}  // namespace tailsweep
