// Benchmark: looking at a big sweep. A report of `--jobs` jobs with
// `--steps` logged steps of every metric (loss, lr, grad_norm, spread ratio,
// step time, attention entropy and largest weight per layer) and point
// clouds in every result: time to build it and its size (issue targets:
// 500 x 1000 in under 5 s and 20 MB). Then the HTTP gateway's API latency
// (p50, p99, max per route) while `--workers` threads report metrics into
// a live sweep of their own, whose jobs start with `--steps` logged steps
// too, each sending a batch of 10 logged steps every `--interval-ms`
// (target: p99 under 50 ms with 8). Real store, service and gateway on
// loopback; the report is read over gRPC exactly as `tailsweep report`
// reads it.
//
//   build/bin/report_bench [--jobs 500] [--steps 1000] [--layers 2]
//                          [--workers 8] [--interval-ms 1000] [--seconds 10]

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/loopback_coordinator.h"
#include "coordinator/http_gateway.h"
#include "coordinator/serving_process.h"
#include "proto/paged_reads.h"
#include "report/page.h"
#include "report/report_data.h"

namespace tailsweep {
namespace {

constexpr std::chrono::seconds kDeadline(120);

// A train result with an evaluation and point clouds, as lab train writes.
std::string Result(int64_t steps) {
  std::string cloud;
  for (int i = 0; i < 128; ++i) {
    absl::StrAppend(&cloud, i ? "," : "", "[", 0.01 * i, ",", -0.02 * i, "]");
  }
  std::string samples;
  for (int k = 0; k < 2; ++k) {
    absl::StrAppend(&samples, k ? "," : "", "{\"instance\":", k,
                    ",\"target\":[", cloud, "],\"prediction\":[", cloud, "]}");
  }
  return absl::StrCat(
      R"({"steps_done":)", steps,
      R"(,"resumed_from_step":0,"final_loss":0.5,"diverged":false,)"
      R"("diverged_step":null,"collapsed":false,"collapse_step":null,)"
      R"("stopped":false,"config":{},"ratio_mean":0.9,"ratio_median":0.8,)"
      R"("ratio_ci_low":0.7,"ratio_ci_high":1.1,"spread_ratio":0.5,)"
      R"("delta":0.01,"eval_instances":64,"samples":[)",
      samples, "]}");
}

std::vector<std::string> MetricNames(int layers) {
  std::vector<std::string> names = {"loss", "lr", "grad_norm", "spread_ratio",
                                    "step_seconds"};
  for (int l = 0; l < layers; ++l) {
    names.push_back(absl::StrCat("attention_entropy/", l));
    names.push_back(absl::StrCat("attention_max_weight/", l));
  }
  return names;
}

void Percentiles(const char* what, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  std::printf("  %-34s n=%-5zu p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n",
              what, ms.size(), at(0.5), at(0.99), ms.back());
}

int Main(int argc, char** argv) {
  CLI::App app{"Report build time and size; dashboard API latency under load"};
  int jobs = 500, steps = 1000, layers = 2, workers = 8, interval_ms = 1000;
  double seconds = 10;
  app.add_option("--jobs", jobs, "Jobs in the big sweep")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  app.add_option("--steps", steps, "Logged steps per metric per job")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  app.add_option("--layers", layers, "Layers (attention curves per job: 2x)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--workers", workers, "Threads reporting metrics meanwhile")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--interval-ms", interval_ms,
                 "Between one worker's batches (10 logged steps each)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  app.add_option("--seconds", seconds, "How long the API is measured")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);  // no line per lease

  PrepareServingProcess();
  std::unique_ptr<LoopbackCoordinator> c =
      LoopbackCoordinator::Start("tailsweep_report_bench");
  if (!c) return 1;
  auto stub = v1::Coordinator::NewStub(c->channel());
  const std::vector<std::string> names = MetricNames(layers);

  // The big sweep: kernels x seeds, every job done with full curves.
  std::string seeds;
  for (int i = 0; i < (jobs + 1) / 2; ++i) {
    absl::StrAppend(&seeds, i ? ", " : "", i);
  }
  v1::SubmitSweepRequest submit;
  submit.set_spec_yaml(
      absl::StrCat("name: big\ngrid:\n  kernel: [softmax, log]\n  seed: [",
                   seeds, "]\nfixed:\n  steps: ", steps,
                   "\n  warmup: 1\n  layers: ", layers, "\n"));
  v1::SubmitSweepResponse submitted;
  auto t0 = std::chrono::steady_clock::now();
  if (!stub->SubmitSweep(BenchContext(kDeadline).get(), submit, &submitted)
           .ok())
    return 1;
  int64_t points = 0;
  const std::string result = Result(steps);
  // Every metric at steps 1..steps, through the store as the service would.
  auto fill = [&](const v1::JobLease& l, const std::string& worker) {
    std::vector<MetricPoint> batch;
    for (int s = 1; s <= steps; ++s) {
      for (size_t n = 0; n < names.size(); ++n) {
        batch.push_back({names[n], s, (1.0 + n) / s + 1e-3 * (s % 7)});
      }
    }
    points += static_cast<int64_t>(batch.size());
    return c->store().AddMetrics(worker, l.job_id(), l.epoch(), batch);
  };
  while (true) {
    v1::LeaseJobsRequest lease;
    lease.set_worker_id("filler");
    lease.set_max_jobs(64);
    lease.set_lease_ms(3600000);
    v1::LeaseJobsResponse leased;
    if (!stub->LeaseJobs(BenchContext(kDeadline).get(), lease, &leased).ok())
      return 1;
    if (leased.leases_size() == 0) break;
    for (const v1::JobLease& l : leased.leases()) {
      if (absl::Status s = fill(l, "filler"); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      v1::CompleteJobRequest done;
      done.set_worker_id("filler");
      done.set_job_id(l.job_id());
      done.set_epoch(l.epoch());
      done.set_result_json(result);
      v1::CompleteJobResponse ok;
      if (!stub->CompleteJob(BenchContext(kDeadline).get(), done, &ok).ok())
        return 1;
    }
  }
  std::printf(
      "filled: %lld jobs, %lld points (%zu metrics x %d steps each) "
      "in %.1f s\n",
      static_cast<long long>(submitted.jobs_added()),
      static_cast<long long>(points), names.size(), steps, SecondsSince(t0));

  const CoordinatorApi calls(stub.get(),
                             [] { return BenchContext(kDeadline); });
  for (int run = 0; run < 3; ++run) {
    t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> doc = ReportJson(calls, "big", {});
    if (!doc.ok()) {
      std::fprintf(stderr, "%s\n", doc.status().ToString().c_str());
      return 1;
    }
    PageInput page;
    page.title = "big";
    page.report_json = *doc;
    const std::string html = ReportPage(page);
    std::printf("report run %d: %.2f s, %.2f MB (document %.2f MB)\n", run + 1,
                SecondsSince(t0), html.size() / 1e6, doc->size() / 1e6);
  }

  // The dashboard while workers report into a live sweep of their own.
  HttpGatewayOptions http;
  http.listen = "127.0.0.1:0";
  http.unbounded_burst = 1000000;  // one peer here: no rate limit
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway = HttpGateway::Start(
      http, c->server().InProcessChannel(grpc::ChannelArguments()),
      [] { return std::string(); });
  if (!gateway.ok()) {
    std::fprintf(stderr, "%s\n", gateway.status().ToString().c_str());
    return 1;
  }
  std::string live_seeds;
  for (int i = 0; i < std::max(1, workers); ++i) {
    absl::StrAppend(&live_seeds, i ? ", " : "", i);
  }
  submit.set_spec_yaml(absl::StrCat("name: live\ngrid:\n  seed: [", live_seeds,
                                    "]\nfixed:\n  steps: 1000000\n  warmup: "
                                    "1\n  layers: ",
                                    layers, "\n"));
  if (!stub->SubmitSweep(BenchContext(kDeadline).get(), submit, &submitted)
           .ok())
    return 1;
  v1::LeaseJobsRequest lease;
  lease.set_worker_id("live");
  lease.set_max_jobs(std::max(1, workers));
  lease.set_lease_ms(3600000);
  v1::LeaseJobsResponse live;
  if (!stub->LeaseJobs(BenchContext(kDeadline).get(), lease, &live).ok())
    return 1;
  for (const v1::JobLease& l : live.leases()) {
    if (!fill(l, "live").ok()) return 1;
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reported{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers && w < live.leases_size(); ++w) {
    threads.emplace_back([&, w] {
      auto own = v1::Coordinator::NewStub(c->channel());
      const v1::JobLease& l = live.leases(w);
      for (int64_t seq = 1, step = steps + 1; !stop; ++seq) {
        // A batch as a worker sends it: 10 logged steps of every metric.
        v1::ReportMetricsRequest req;
        req.set_worker_id("live");
        req.set_job_id(l.job_id());
        req.set_epoch(l.epoch());
        req.set_seq(seq);
        for (int k = 0; k < 10; ++k, ++step) {
          for (const std::string& n : names) {
            v1::MetricPoint* p = req.add_points();
            p->set_name(n);
            p->set_step(step);
            p->set_value(1.0 / step);
          }
        }
        v1::ReportMetricsResponse ack;
        if (!own->ReportMetrics(BenchContext(kDeadline).get(), req, &ack).ok())
          return;
        reported += req.points_size();
        std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
      }
    });
  }
  httplib::Client client("127.0.0.1", (*gateway)->port());
  const std::string job = live.leases(0).job_id();
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"GET /api/sweeps", "/api/sweeps"},
      {"GET /api/sweeps/live/report", "/api/sweeps/live/report"},
      {"GET /api/sweeps/big/results", "/api/sweeps/big/results"},
      {"GET /api/jobs/ID/metrics (300/name)",
       "/api/jobs/" + job + "/metrics?max_points=300"}};
  std::vector<std::vector<double>> ms(routes.size());
  t0 = std::chrono::steady_clock::now();
  int failures = 0;
  while (SecondsSince(t0) < seconds) {
    for (size_t r = 0; r < routes.size(); ++r) {
      const auto q0 = std::chrono::steady_clock::now();
      const httplib::Result res = client.Get(routes[r].second.c_str());
      ms[r].push_back(SecondsSince(q0) * 1000);
      if (!res || res->status != 200) ++failures;
    }
  }
  const double measured = SecondsSince(t0);
  stop = true;
  for (auto& t : threads) t.join();
  std::printf(
      "dashboard API over %.1f s while %d workers reported %.0f "
      "points/s (a batch of 10 steps x %zu metrics every %d ms each; "
      "%d failed requests):\n",
      measured, workers, reported / measured, names.size(), interval_ms,
      failures);
  for (size_t r = 0; r < routes.size(); ++r) {
    Percentiles(routes[r].first.c_str(), ms[r]);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
