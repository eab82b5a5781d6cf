// The evaluation's judge (core/evaluation.h EvalJudge, ForEachEvalChunk),
// which `lab bench judge` runs on another program's predictions.

#include "core/evaluation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/model.h"
#include "core/point_csv.h"
#include "core/schema/status_macros.h"
#include "core/trainer.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_job.h"

namespace tailsweep {
namespace {

using testing::TinyJob;

class EvalJudgeFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("tailsweep_judge_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(EvalJudgeFiles, PredictionsJudgedFromCsvFilesGetTheModelsOwnEvaluation) {
  // What `lab bench judge` does with another program's predictions gives
  // exactly what `lab train` gives its own model: the same instances, the
  // same reference, the same numbers, through the CSV files in between.
  JobConfig c = TinyJob();
  c.eval_instances = 6;  // two chunks of batch 4
  torch::manual_seed(7);
  PointTransformer model(ModelOptionsFor(c));
  TS_ASSERT_OK_AND_ASSIGN(Evaluator evaluator,
                          Evaluator::Create(c, torch::kCPU));
  TS_ASSERT_OK_AND_ASSIGN(EvalResult own, evaluator.Run(model));

  torch::NoGradGuard no_grad;
  model->eval();
  EvalJudge judge(c, evaluator.delta());
  TS_ASSERT_OK(ForEachEvalChunk(
      c, torch::TensorOptions().dtype(ModelScalarType(c.precision)),
      [&](const EvalChunk& chunk) -> absl::Status {
        const torch::Tensor out =
            model->forward(chunk.input).to(torch::kDouble).contiguous();
        for (int64_t b = 0; b < out.size(0); ++b) {
          const std::string path =
              dir_ + "/prediction-" + std::to_string(chunk.first + b) + ".csv";
          PointSet p;
          p.rows = out.size(1);
          p.dims = out.size(2);
          p.values.assign(out[b].data_ptr<double>(),
                          out[b].data_ptr<double>() + out[b].numel());
          TS_RETURN_IF_ERROR(WritePointsCsv(path, p));
          absl::StatusOr<PointSet> back = ReadPointsCsv(path);
          if (!back.ok()) return back.status();
          const torch::Tensor read =
              torch::from_blob(back->values.data(), {back->rows, back->dims},
                               torch::kDouble)
                  .clone();
          TS_RETURN_IF_ERROR(judge.Add(chunk.first + b, read, chunk.target[b],
                                       chunk.second[b]));
        }
        return absl::OkStatus();
      }));
  TS_ASSERT_OK_AND_ASSIGN(EvalResult judged, judge.Finish());
  ASSERT_EQ(judged.ratios.size(), 6u);
  EXPECT_EQ(judged.ratios, own.ratios);
  EXPECT_EQ(judged.ratio_median, own.ratio_median);
  EXPECT_EQ(judged.ratio_ci_low, own.ratio_ci_low);
  EXPECT_EQ(judged.spread_ratio, own.spread_ratio);
  EXPECT_EQ(judged.hill_stat, own.hill_stat);
}

}  // namespace
}  // namespace tailsweep
