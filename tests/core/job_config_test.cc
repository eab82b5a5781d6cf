#include "core/job_config.h"

#include <gtest/gtest.h>

namespace tailsweep {
namespace {

TEST(JobConfig, DefaultsAreThePapersChoices) {
  const JobConfig c;
  EXPECT_EQ(c.layers, 6);
  EXPECT_EQ(c.d_model, 256);
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.n_points, 16384);
  EXPECT_EQ(c.steps, 10000);
  EXPECT_EQ(c.batch, 4);
  EXPECT_DOUBLE_EQ(c.lr, 1e-4);
  EXPECT_EQ(c.warmup, 500);
  EXPECT_DOUBLE_EQ(c.clip, 1.0);
  EXPECT_DOUBLE_EQ(c.collapse_threshold, 0.05);
  EXPECT_EQ(c.norm, NormPlacement::kPost);
  EXPECT_TRUE(ValidateJobConfig(c).ok());
}

TEST(JobConfig, SetsEveryKeyAndRoundTripsThroughText) {
  JobConfig c;
  ASSERT_TRUE(SetJobKey(c, "operator", "matrix_inverse").ok());
  ASSERT_TRUE(SetJobKey(c, "kernel", "log").ok());
  ASSERT_TRUE(SetJobKey(c, "norm", "pre").ok());
  ASSERT_TRUE(SetJobKey(c, "symlog", "true").ok());
  ASSERT_TRUE(SetJobKey(c, "lr", "3e-4").ok());
  ASSERT_TRUE(SetJobKey(c, "n_points", "128").ok());
  ASSERT_TRUE(SetJobKey(c, "seed", "18446744073709551615").ok());
  EXPECT_EQ(c.kernel, AttentionKernel::kLog);
  EXPECT_TRUE(c.symlog);
  EXPECT_DOUBLE_EQ(c.lr, 3e-4);
  JobConfig rebuilt;
  for (const auto& [key, value] : JobConfigToKeyValues(c)) {
    ASSERT_TRUE(SetJobKey(rebuilt, key, value).ok()) << key << "=" << value;
  }
  EXPECT_EQ(JobConfigToKeyValues(rebuilt), JobConfigToKeyValues(c));
  // Every key but those added later (eval_every, precision, the prior's 12
  // ends, gpus, stop_after_collapse, collapse_rule), listed only off their
  // defaults.
  EXPECT_EQ(JobConfigToKeyValues(c).size(), JobKeys().size() - 17);
}

// Keys added after job ids were first issued leave the key/values of a job
// that does not use them (and so its id) as they were.
TEST(JobConfig, AKeyAddedLaterIsListedOnlyOffItsDefault) {
  struct Case {
    const char* key;
    const char* other;     // a value off the default
    const char* default_;  // the default's text
  };
  for (const Case& t :
       std::vector<Case>{{"eval_every", "500", "0"},
                         {"precision", "float64", "float32"},
                         {"tail_index_min", "1.5", "1.1"},
                         {"tail_index_max", "3", "2"},
                         {"scale1_min", "0.25", "0.5"},
                         {"scale2_max", "4", "2"},
                         {"mean_min", "-2", "-1"},
                         {"sd1_max", "1.5", "1"},
                         {"sd2_min", "0.75", "1"},
                         {"gpus", "2", "1"},
                         {"stop_after_collapse", "10", "never"}}) {
    JobConfig c;
    auto listed = [&](const JobConfig& config) {
      for (const auto& [key, value] : JobConfigToKeyValues(config)) {
        if (key == t.key) return value;
      }
      return std::string("(absent)");
    };
    EXPECT_EQ(listed(c), "(absent)") << t.key;
    // A result records every key, its default included.
    bool recorded = false;
    for (const auto& [key, value] :
         JobConfigToKeyValues(c, KeyListing::kEvery)) {
      if (key == t.key) recorded = value == t.default_;
    }
    EXPECT_TRUE(recorded) << t.key;
    ASSERT_TRUE(SetJobKey(c, t.key, t.other).ok()) << t.key;
    EXPECT_EQ(listed(c), t.other);
    ASSERT_TRUE(SetJobKey(c, t.key, t.default_).ok()) << t.key;
    EXPECT_EQ(listed(c), "(absent)") << t.key;
  }
}

TEST(JobConfig, StopAfterCollapseTakesAStepCountOrNever) {
  JobConfig c;
  EXPECT_EQ(c.stop_after_collapse, -1);
  ASSERT_TRUE(SetJobKey(c, "stop_after_collapse", "0").ok());
  EXPECT_EQ(c.stop_after_collapse, 0);
  ASSERT_TRUE(SetJobKey(c, "stop_after_collapse", "never").ok());
  EXPECT_EQ(c.stop_after_collapse, -1);
  for (const char* bad : {"-1", "soon", "1.5", ""}) {
    const absl::Status s = SetJobKey(c, "stop_after_collapse", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("a whole number >= 0, or never"),
              std::string::npos)
        << s;
  }
}

TEST(JobConfig, PrecisionAndPriorKeysSetTheirFields) {
  JobConfig c;
  EXPECT_EQ(c.precision, Precision::kFloat32);
  EXPECT_EQ(c.prior, InstancePrior{});
  ASSERT_TRUE(SetJobKey(c, "precision", "bfloat16").ok());
  ASSERT_TRUE(SetJobKey(c, "tail_index_min", "2.5").ok());
  ASSERT_TRUE(SetJobKey(c, "tail_index_max", "4").ok());
  ASSERT_TRUE(SetJobKey(c, "scale1_min", "0.1").ok());
  ASSERT_TRUE(SetJobKey(c, "scale1_max", "0.2").ok());
  ASSERT_TRUE(SetJobKey(c, "scale2_min", "3").ok());
  ASSERT_TRUE(SetJobKey(c, "scale2_max", "5").ok());
  EXPECT_EQ(c.precision, Precision::kBFloat16);
  EXPECT_EQ(c.prior.tail_index, (UniformRange{2.5, 4.0}));
  EXPECT_EQ(c.prior.scale1, (UniformRange{0.1, 0.2}));
  EXPECT_EQ(c.prior.scale2, (UniformRange{3, 5}));
  EXPECT_TRUE(ValidateJobConfig(c).ok());
  const Task task = TaskOf(c);
  EXPECT_EQ(task.prior, c.prior);
  EXPECT_EQ(task.op, c.op);
  EXPECT_EQ(task.family, c.marginal);
  // The Gaussian family's ranges.
  JobConfig g;
  ASSERT_TRUE(SetJobKey(g, "marginal", "gaussian").ok());
  ASSERT_TRUE(SetJobKey(g, "mean_min", "-3").ok());
  ASSERT_TRUE(SetJobKey(g, "mean_max", "0").ok());
  ASSERT_TRUE(SetJobKey(g, "sd1_min", "0.2").ok());
  ASSERT_TRUE(SetJobKey(g, "sd1_max", "0.3").ok());
  ASSERT_TRUE(SetJobKey(g, "sd2_min", "2").ok());
  ASSERT_TRUE(SetJobKey(g, "sd2_max", "2").ok());
  EXPECT_EQ(g.prior.mean, (UniformRange{-3, 0}));
  EXPECT_EQ(g.prior.sd1, (UniformRange{0.2, 0.3}));
  EXPECT_EQ(g.prior.sd2, (UniformRange{2, 2}));
  EXPECT_TRUE(ValidateJobConfig(g).ok());
  // Listed in canonical order, and rebuilt from the listing.
  JobConfig rebuilt;
  for (const auto& [key, value] : JobConfigToKeyValues(g)) {
    ASSERT_TRUE(SetJobKey(rebuilt, key, value).ok()) << key;
  }
  EXPECT_EQ(rebuilt.prior, g.prior);
}

TEST(JobConfig, RejectsUnknownKeysAndBadValuesNamingThemAndChangesNothing) {
  JobConfig c;
  const auto before = JobConfigToKeyValues(c);
  struct Case {
    const char* key;
    const char* value;
    const char* mentions;
  };
  for (const Case& t : std::vector<Case>{
           {"learning_rate", "1", "allowed: operator, marginal"},
           {"kernel", "relu", "allowed: softmax, quadratic, linear, log"},
           {"norm", "sandwich", "allowed: post, pre"},
           {"symlog", "maybe", "true or false"},
           {"n_points", "1", ">= 2"},
           {"steps", "ten", "whole number"},
           {"lr", "-1", "> 0"},
           {"lr", "nan", "> 0"},
           {"collapse_threshold", "2", "<= 1"},
           {"seed", "-3", ">= 0"},
           {"eval_every", "-1", ">= 0"},
           {"precision", "float16", "allowed: float32, float64, bfloat16"},
           {"tail_index_min", "1", "> 1 and <= 100"},
           {"tail_index_max", "inf", "> 1 and <= 100"},
           {"scale1_min", "0", "> 0 and <= 1e+06"},
           {"scale2_max", "-1", "> 0 and <= 1e+06"},
           {"mean_max", "nan", ">= -1e+06 and <= 1e+06"},
           {"sd1_min", "0", "> 0"},
           {"sd2_max", "1e7", "<= 1e+06"}}) {
    const absl::Status s = SetJobKey(c, t.key, t.value);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << t.key;
    EXPECT_NE(s.message().find(t.key), std::string::npos) << s;
    EXPECT_NE(s.message().find(t.mentions), std::string::npos) << s;
  }
  EXPECT_EQ(JobConfigToKeyValues(c), before);
}

TEST(JobConfig, CrossKeyRules) {
  JobConfig c;
  c.heads = 7;
  EXPECT_NE(ValidateJobConfig(c).message().find("heads"), std::string::npos);
  c.heads = 8;
  c.warmup = c.steps + 1;
  EXPECT_NE(ValidateJobConfig(c).message().find("warmup"), std::string::npos);
  c.warmup = 0;
  c.log_every = 20;
  c.eval_every = 50;
  const absl::Status every = ValidateJobConfig(c);
  EXPECT_NE(every.message().find("multiple of key 'log_every' (20)"),
            std::string::npos)
      << every;
  c.eval_every = 100;
  EXPECT_TRUE(ValidateJobConfig(c).ok());
  c.prior.tail_index = {2.0, 1.5};
  const absl::Status order = ValidateJobConfig(c);
  EXPECT_NE(order.message().find("'tail_index_min' (2) must be <= key "
                                 "'tail_index_max' (1.5)"),
            std::string::npos)
      << order;
  c.prior.tail_index = {1.5, 1.5};  // a single index is a prior too
  EXPECT_TRUE(ValidateJobConfig(c).ok());
  c.marginal = MarginalFamily::kGaussian;
  const absl::Status gaussian = ValidateJobConfig(c);
  EXPECT_NE(gaussian.message().find("'mirrored_pareto' only"),
            std::string::npos)
      << gaussian;
  c.prior.tail_index = InstancePrior().tail_index;
  EXPECT_TRUE(ValidateJobConfig(c).ok());
  // And the other way round: the Gaussian's ranges for Gaussian cells.
  c.prior.sd2 = {3, 2};
  const absl::Status sd = ValidateJobConfig(c);
  EXPECT_NE(sd.message().find("'sd2_min' (3) must be <= key 'sd2_max' (2)"),
            std::string::npos)
      << sd;
  c.prior.sd2 = {3, 3};
  EXPECT_TRUE(ValidateJobConfig(c).ok());
  c.marginal = MarginalFamily::kMirroredPareto;
  const absl::Status pareto = ValidateJobConfig(c);
  EXPECT_NE(pareto.message().find("keys 'sd2_min' and 'sd2_max' apply to "
                                  "marginal 'gaussian' only; leave them at "
                                  "their defaults (1, 2) for "
                                  "'mirrored_pareto'"),
            std::string::npos)
      << pareto;
  c.prior = {};
  c.marginal = MarginalFamily::kGaussian;
  c.op = OperatorKind::kMatrixInverse;
  EXPECT_EQ(ValidateJobConfig(c).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tailsweep
