// The flat export tables (cli/exports.h) against golden text: typed
// columns, a column per parameter and result field, CSV and JSON Lines.

#include "cli/exports.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tailsweep::cli {
namespace {

v1::JobInfo Job(const std::string& id, const std::string& kernel,
                const std::string& result = "") {
  v1::JobInfo j;
  j.set_job_id(id);
  j.set_state(result.empty() ? "queued" : "done");
  j.set_attempt(1);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"kernel", kernel}, {"lr", "1e-04"}}) {
    v1::KeyValue* kv = j.add_cell();
    kv->set_key(k);
    kv->set_value(v);
  }
  j.set_result_json(result);
  return j;
}

TEST(Exports, JobsHaveAColumnPerGridKeyTyped) {
  v1::JobInfo b = Job("b", "log");
  b.set_last_error("line 1, \"quoted\"\nline 2");
  const FlatTable t = JobsExport({Job("a", "softmax"), b});
  EXPECT_EQ(t.Csv(),
            "job_id,state,job_state,attempt,epoch,holder,last_error,params_"
            "kernel,params_lr\r\n"
            "a,queued,,1,0,,,softmax,1e-04\r\n"
            "b,queued,,1,0,,\"line 1, \"\"quoted\"\"\nline 2\",log,1e-04\r\n");
  const std::string lines = t.JsonLines();
  EXPECT_EQ(lines.substr(0, lines.find('\n') + 1),
            "{\"job_id\":\"a\",\"state\":\"queued\",\"job_state\":\"\","
            "\"attempt\":1,\"epoch\":0,\"holder\":\"\",\"last_error\":\"\","
            "\"params_kernel\":\"softmax\",\"params_lr\":0.0001}\n");
}

// Only done jobs; the whole config as params_*; a field one result lacks
// (no evaluation) is empty there.
TEST(Exports, ResultsFlattenTheResultAndItsConfig) {
  const FlatTable t =
      *ResultsExport({Job("a", "softmax",
                          R"({"config": {"kernel": "softmax", "steps": 20},
                              "final_loss": 0.5, "stopped": false,
                              "ratio_median": "nan"})"),
                      Job("q", "log"),
                      Job("b", "log",
                          R"({"config": {"kernel": "log", "steps": 20},
                              "final_loss": 0.25, "stopped": false})")});
  EXPECT_EQ(t.Csv(),
            "job_id,params_kernel,params_steps,final_loss,ratio_median,"
            "stopped\r\n"
            "a,softmax,20,0.5,nan,false\r\n"
            "b,log,20,0.25,,false\r\n");
}

TEST(Exports, TailsResultsAreARowPerTestbedRow) {
  const FlatTable t =
      *ResultsExport({Job("t", "-", R"([{"seam": 0.9, "n": 1024, "index": 1.4},
                         {"seam": 0.9, "n": 1024, "index": 1.5}])")});
  EXPECT_EQ(t.Csv(),
            "job_id,params_kernel,params_lr,index,n,seam\r\n"
            "t,-,1e-04,1.4,1024,0.9\r\n"
            "t,-,1e-04,1.5,1024,0.9\r\n");
  EXPECT_FALSE(ResultsExport({Job("x", "-", "\"text\"")}).ok());
}

TEST(Exports, MetricsAreARowPerPointAndNonFiniteValuesStayReadable) {
  FlatTable t;
  v1::MetricPoint p;
  p.set_name("loss");
  p.set_step(5);
  p.set_value(NAN);
  AddMetricsExport(Job("a", "softmax"), {p}, &t);
  EXPECT_EQ(t.Csv(false), "a,softmax,1e-04,loss,5,nan\r\n");
  EXPECT_EQ(t.JsonLines(),
            "{\"job_id\":\"a\",\"params_kernel\":\"softmax\",\"params_lr\":"
            "0.0001,\"name\":\"loss\",\"step\":5,\"value\":\"nan\"}\n");
}

}  // namespace
}  // namespace tailsweep::cli
