#include "core/job_config.h"

#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/number_text.h"
#include "core/schema/device_placement.h"

namespace tailsweep {
namespace {

// One key: how to set it from text and how to print it.
struct KeySpec {
  JobKey key;
  std::function<absl::Status(JobConfig&, absl::string_view)> set;
  std::function<std::string(const JobConfig&)> get;
  // False for keys added after job ids were first issued: listed only when
  // not at their default (see JobConfigToKeyValues).
  bool listed_at_default = true;
};

// Marks a key added after job ids were first issued.
KeySpec Added(KeySpec spec) {
  spec.listed_at_default = false;
  return spec;
}

KeySpec IntKey(const char* name, const char* help, int64_t JobConfig::*field,
               int64_t min) {
  const std::string allowed = absl::StrCat("a whole number >= ", min);
  return {{name, absl::StrCat(help, " (", allowed, ")")},
          [=](JobConfig& c, absl::string_view v) {
            int64_t parsed;
            if (!absl::SimpleAtoi(v, &parsed) || parsed < min) {
              return BadKeyValue(name, v, allowed);
            }
            c.*field = parsed;
            return absl::OkStatus();
          },
          [=](const JobConfig& c) { return absl::StrCat(c.*field); }};
}

KeySpec SeedKey(const char* name, const char* help,
                uint64_t JobConfig::*field) {
  return {{name, absl::StrCat(help, " (a whole number >= 0)")},
          [=](JobConfig& c, absl::string_view v) {
            uint64_t parsed;
            if (!absl::SimpleAtoi(v, &parsed)) {
              return BadKeyValue(name, v, "a whole number >= 0");
            }
            c.*field = parsed;
            return absl::OkStatus();
          },
          [=](const JobConfig& c) { return absl::StrCat(c.*field); }};
}

// A finite number in (min, max]; `open_min` excludes min itself.
KeySpec RealKey(const char* name, const char* help, double JobConfig::*field,
                double min, bool open_min, double max) {
  const std::string allowed =
      absl::StrCat("a number ", open_min ? "> " : ">= ", FormatDouble(min),
                   max < std::numeric_limits<double>::max()
                       ? absl::StrCat(" and <= ", FormatDouble(max))
                       : "");
  return {{name, absl::StrCat(help, " (", allowed, ")")},
          [=](JobConfig& c, absl::string_view v) {
            double parsed;
            if (!absl::SimpleAtod(v, &parsed) || !std::isfinite(parsed) ||
                parsed < min || (open_min && parsed == min) || parsed > max) {
              return BadKeyValue(name, v, allowed);
            }
            c.*field = parsed;
            return absl::OkStatus();
          },
          [=](const JobConfig& c) { return FormatDouble(c.*field); }};
}

// A range of the instance prior (core/instance.h), set by two keys NAME_min
// and NAME_max: which family draws from it and what its ends may be.
struct PriorRange {
  const char* name;
  const char* what;  // for the help
  UniformRange InstancePrior::*range;
  MarginalFamily family;
  double lowest;  // ends are > lowest (or >= when !open_lowest) ...
  bool open_lowest;
  double highest;  // ... and <= highest
};

// Science.md section 2's priors, in key order.
const std::vector<PriorRange>& PriorRanges() {
  static const auto* ranges = new std::vector<PriorRange>{
      {"tail_index",
       "mirrored Pareto tail index a, both axes (> 1: a finite mean, which "
       "the energy distance needs)",
       &InstancePrior::tail_index, MarginalFamily::kMirroredPareto, 1, true,
       100},
      {"scale1", "mirrored Pareto scale lam1 of axis 1", &InstancePrior::scale1,
       MarginalFamily::kMirroredPareto, 0, true, 1e6},
      {"scale2", "mirrored Pareto scale lam2 of axis 2", &InstancePrior::scale2,
       MarginalFamily::kMirroredPareto, 0, true, 1e6},
      {"mean", "Gaussian mean m, both axes", &InstancePrior::mean,
       MarginalFamily::kGaussian, -1e6, false, 1e6},
      {"sd1", "Gaussian standard deviation s1 of axis 1", &InstancePrior::sd1,
       MarginalFamily::kGaussian, 0, true, 1e6},
      {"sd2", "Gaussian standard deviation s2 of axis 2", &InstancePrior::sd2,
       MarginalFamily::kGaussian, 0, true, 1e6},
  };
  return *ranges;
}

std::string KeyOf(const PriorRange& r, bool max) {
  return absl::StrCat(r.name, max ? "_max" : "_min");
}

// One end of a prior range (added after job ids were first issued).
KeySpec PriorKey(const PriorRange& r, bool max) {
  const std::string name = KeyOf(r, max);
  const std::string allowed = absl::StrCat(
      "a number ", r.open_lowest ? "> " : ">= ", FormatDouble(r.lowest),
      " and <= ", FormatDouble(r.highest));
  UniformRange InstancePrior::*range = r.range;
  double UniformRange::*end = max ? &UniformRange::max : &UniformRange::min;
  return Added(
      {{name, absl::StrCat(max ? "upper" : "lower",
                           " end of the uniform prior of the ", r.what, "; ",
                           max ? "min" : "max", " is ", r.name,
                           max ? "_min" : "_max", " (", allowed, ")")},
       [=](JobConfig& c, absl::string_view v) {
         double parsed;
         if (!absl::SimpleAtod(v, &parsed) || !std::isfinite(parsed) ||
             parsed < r.lowest || (r.open_lowest && parsed == r.lowest) ||
             parsed > r.highest) {
           return BadKeyValue(name, v, allowed);
         }
         c.prior.*range.*end = parsed;
         return absl::OkStatus();
       },
       [=](const JobConfig& c) { return FormatDouble(c.prior.*range.*end); }});
}

// An enum key given its parser and namer.
template <typename E>
KeySpec EnumKey(const char* name, const char* help, E JobConfig::*field,
                absl::StatusOr<E> (*parse)(absl::string_view),
                absl::string_view (*print)(E)) {
  return {{name, help},
          [=](JobConfig& c, absl::string_view v) -> absl::Status {
            absl::StatusOr<E> parsed = parse(v);
            if (!parsed.ok()) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "key '", name, "': ", parsed.status().message()));
            }
            c.*field = *parsed;
            return absl::OkStatus();
          },
          [=](const JobConfig& c) { return std::string(print(c.*field)); }};
}

// The keys, in canonical order: the prior's ends come after "precision".
std::vector<KeySpec> MakeSpecs();

const std::vector<KeySpec>& Specs() {
  static const auto* specs = new std::vector<KeySpec>(MakeSpecs());
  return *specs;
}

KeySpec SymlogKey() {
  return {{"symlog", "symlog preprocessing (true or false)"},
          [](JobConfig& c, absl::string_view v) {
            const std::string lower = absl::AsciiStrToLower(v);
            if (lower == "true" || lower == "1" || lower == "on") {
              c.symlog = true;
            } else if (lower == "false" || lower == "0" || lower == "off") {
              c.symlog = false;
            } else {
              return BadKeyValue("symlog", v, "true or false");
            }
            return absl::OkStatus();
          },
          [](const JobConfig& c) {
            return std::string(c.symlog ? "true" : "false");
          }};
}

KeySpec GpusKey() {
  return {{kGpusKey,
           absl::StrCat("devices the job runs on: that many GPUs, or on a "
                        "CPU worker that many slots and their threads; "
                        "training uses the first GPU (a whole number "
                        "from 1 to ",
                        kMaxGpusPerJob, ")")},
          [](JobConfig& c, absl::string_view v) -> absl::Status {
            absl::StatusOr<int> gpus = ParseGpus(v);
            if (!gpus.ok()) return gpus.status();
            c.gpus = *gpus;
            return absl::OkStatus();
          },
          [](const JobConfig& c) { return absl::StrCat(c.gpus); }};
}

KeySpec StopAfterCollapseKey() {
  return {{"stop_after_collapse",
           "early stopping: end the run this many steps after its "
           "collapse onset, keeping its curve and a final evaluation "
           "(a whole number >= 0, or never)"},
          [](JobConfig& c, absl::string_view v) -> absl::Status {
            int64_t k = 0;
            if (v == "never") {
              c.stop_after_collapse = -1;
            } else if (absl::SimpleAtoi(v, &k) && k >= 0) {
              c.stop_after_collapse = k;
            } else {
              return BadKeyValue("stop_after_collapse", v,
                                 "a whole number >= 0, or never");
            }
            return absl::OkStatus();
          },
          [](const JobConfig& c) {
            return c.stop_after_collapse < 0
                       ? std::string("never")
                       : absl::StrCat(c.stop_after_collapse);
          }};
}

std::vector<KeySpec> MakeSpecs() {
  std::vector<KeySpec> specs{
      EnumKey("operator", "operator: sheared_swap or matrix_inverse",
              &JobConfig::op, &ParseOperator, &OperatorName),
      EnumKey("marginal", "marginal family: mirrored_pareto or gaussian",
              &JobConfig::marginal, &ParseMarginalFamily, &MarginalFamilyName),
      EnumKey("kernel", "attention kernel: softmax, quadratic, linear or log",
              &JobConfig::kernel, &ParseAttentionKernel, &AttentionKernelName),
      EnumKey("norm", "layer-norm placement: post or pre", &JobConfig::norm,
              &ParseNormPlacement, &NormPlacementName),
      SymlogKey(),
      SeedKey("seed", "seed of model init and training data", &JobConfig::seed),
      IntKey("n_points", "points per ensemble", &JobConfig::n_points, 2),
      IntKey("layers", "transformer blocks L", &JobConfig::layers, 1),
      IntKey("d_model", "embedding width d", &JobConfig::d_model, 1),
      IntKey("heads", "attention heads, dividing d_model", &JobConfig::heads,
             1),
      IntKey("ffn_multiple", "FFN width as a multiple of d_model",
             &JobConfig::ffn_multiple, 1),
      IntKey("steps", "training steps", &JobConfig::steps, 1),
      IntKey("batch", "trials (fresh instances) per step", &JobConfig::batch,
             1),
      RealKey("lr", "peak learning rate", &JobConfig::lr, 0, true,
              std::numeric_limits<double>::max()),
      IntKey("warmup", "linear warm-up steps, then cosine decay",
             &JobConfig::warmup, 0),
      RealKey("clip", "gradient-norm clip", &JobConfig::clip, 0, true,
              std::numeric_limits<double>::max()),
      RealKey("weight_decay", "AdamW weight decay", &JobConfig::weight_decay, 0,
              false, std::numeric_limits<double>::max()),
      IntKey("log_every", "steps between logged metrics", &JobConfig::log_every,
             1),
      IntKey("checkpoint_every", "steps between checkpoints",
             &JobConfig::checkpoint_every, 1),
      IntKey("eval_instances", "held-out evaluation instances",
             &JobConfig::eval_instances, 2),
      Added(IntKey("eval_every",
                   "steps between evaluations during training, a multiple of "
                   "log_every; 0: only the final one",
                   &JobConfig::eval_every, 0)),
      SeedKey("eval_seed",
              "seed of the evaluation instances (share it across "
              "a sweep)",
              &JobConfig::eval_seed),
      IntKey("reference_trials", "trials of the sampling reference",
             &JobConfig::reference_trials, 1),
      RealKey("collapse_threshold",
              "training spread ratio below which a step counts as "
              "collapsed, under the rule collapse_rule names (every step, "
              "logged steps, or 3 logged steps in a row; recovery or not)",
              &JobConfig::collapse_threshold, 0, true, 1),
      Added(EnumKey("precision",
                    "floating-point type of the model's parameters and "
                    "activations, attention included: float32, float64, "
                    "bfloat16 (loss and metrics then in float32) or tf32 "
                    "(float32 with TF32 matrix products on a CUDA device "
                    "that has them, else float32)",
                    &JobConfig::precision, &ParsePrecision, &PrecisionName)),
  };
  // After "precision", as tail_index_min and tail_index_max always were: a
  // job that sets them keeps its id.
  for (const PriorRange& r : PriorRanges()) {
    specs.push_back(PriorKey(r, /*max=*/false));
    specs.push_back(PriorKey(r, /*max=*/true));
  }
  std::vector<KeySpec> rest{
      RealKey("hill_fraction", "top fraction of order statistics for Hill",
              &JobConfig::hill_fraction, 0, true, 0.5),
      IntKey("query_tile", "attention queries per tile", &JobConfig::query_tile,
             1),
      IntKey("key_tile", "attention keys per tile", &JobConfig::key_tile, 1),
      Added(GpusKey()),
      Added(StopAfterCollapseKey()),
      Added(EnumKey("collapse_rule",
                    "which rule collapsed and collapse_step follow (the "
                    "result keeps all four): any_step (the first step below "
                    "collapse_threshold), logged_step (the first logged "
                    "one), logged_3 (the first of 3 consecutive logged "
                    "steps below) or final_eval (the final evaluation's "
                    "spread ratio below 0.25)",
                    &JobConfig::collapse_rule, &ParseCollapseRule,
                    &CollapseRuleName)),
  };
  for (KeySpec& spec : rest) specs.push_back(std::move(spec));
  return specs;
}

}  // namespace

const std::vector<JobKey>& JobKeys() {
  static const auto* keys = [] {
    auto* out = new std::vector<JobKey>;
    for (const KeySpec& s : Specs()) out->push_back(s.key);
    return out;
  }();
  return *keys;
}

absl::Status SetJobKey(JobConfig& config, absl::string_view key,
                       absl::string_view value) {
  for (const KeySpec& s : Specs()) {
    if (s.key.name == key) return s.set(config, value);
  }
  std::string names;
  for (const KeySpec& s : Specs()) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", s.key.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown key '", key, "'; allowed: ", names));
}

absl::Status ValidateJobConfig(const JobConfig& c) {
  if (c.d_model % c.heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("key 'heads' (", c.heads, ") must divide key 'd_model' (",
                     c.d_model, ")"));
  }
  if (c.warmup > c.steps) {
    return absl::InvalidArgumentError(absl::StrCat("key 'warmup' (", c.warmup,
                                                   ") must be <= key 'steps' (",
                                                   c.steps, ")"));
  }
  if (c.eval_every % c.log_every != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key 'eval_every' (", c.eval_every,
        ") must be 0 or a multiple of key 'log_every' (", c.log_every, ")"));
  }
  const InstancePrior defaults;
  for (const PriorRange& r : PriorRanges()) {
    const UniformRange& range = c.prior.*r.range;
    if (range.min > range.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("key '", KeyOf(r, false), "' (", FormatDouble(range.min),
                       ") must be <= key '", KeyOf(r, true), "' (",
                       FormatDouble(range.max), ")"));
    }
    if (r.family != c.marginal && !(range == defaults.*r.range)) {
      const UniformRange& d = defaults.*r.range;
      return absl::InvalidArgumentError(absl::StrCat(
          "keys '", KeyOf(r, false), "' and '", KeyOf(r, true),
          "' apply to marginal '", MarginalFamilyName(r.family),
          "' only; leave them at their defaults (", FormatDouble(d.min), ", ",
          FormatDouble(d.max), ") for '", MarginalFamilyName(c.marginal), "'"));
    }
  }
  if (!IsIdentifiable({c.op, c.marginal})) {
    return absl::InvalidArgumentError(
        "operator 'matrix_inverse' with marginal 'gaussian' is unidentifiable "
        "(a rotation of Gaussian latents gives the same input); allowed: "
        "sheared_swap with gaussian, or mirrored_pareto with either operator");
  }
  return absl::OkStatus();
}

Task TaskOf(const JobConfig& config) {
  return {config.op, config.marginal, config.prior};
}

std::vector<std::pair<std::string, std::string>> JobConfigToKeyValues(
    const JobConfig& config, KeyListing listing) {
  static const JobConfig* defaults = new JobConfig;
  std::vector<std::pair<std::string, std::string>> out;
  for (const KeySpec& s : Specs()) {
    std::string value = s.get(config);
    if (listing == KeyListing::kIdentity && !s.listed_at_default &&
        value == s.get(*defaults)) {
      continue;
    }
    out.emplace_back(s.key.name, std::move(value));
  }
  return out;
}

absl::Status BadKeyValue(absl::string_view key, absl::string_view value,
                         absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat(
      "key '", key, "': bad value '", value, "'; allowed: ", allowed));
}

namespace {
constexpr std::pair<CollapseRule, absl::string_view> kCollapseRules[] = {
    {CollapseRule::kAnyStep, "any_step"},
    {CollapseRule::kLoggedStep, "logged_step"},
    {CollapseRule::kLoggedRun, "logged_3"},
    {CollapseRule::kFinalEval, "final_eval"}};
}  // namespace

absl::StatusOr<CollapseRule> ParseCollapseRule(absl::string_view name) {
  for (const auto& [rule, n] : kCollapseRules) {
    if (n == name) return rule;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", name, "'; allowed: any_step, logged_step, logged_3, final_eval"));
}

absl::string_view CollapseRuleName(CollapseRule rule) {
  for (const auto& [r, n] : kCollapseRules) {
    if (r == rule) return n;
  }
  return "?";
}

}  // namespace tailsweep
