// Benchmark: the coordinator with fake jobs over loopback gRPC (real
// service, real SQLite file): lease + complete cycles per second, lease
// latency percentiles, and metric points ingested per second from 8
// concurrent streaming workers; with --readers, lease latency again while
// that many clients pull the sweep's whole history in a loop.
//
//   build/bin/coordinator_bench [--jobs 2000] [--clients 4] [--streams 8]
//                               [--batches 50] [--points 1000] [--readers 0]

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/loopback_coordinator.h"

namespace tailsweep {
namespace {

// A minimal valid train result (core/schema/job_result.h).
constexpr char kResult[] =
    R"({"steps_done": 1, "resumed_from_step": 0, "final_loss": 0.5,
        "diverged": false, "diverged_step": null, "collapsed": false,
        "collapse_step": null, "stopped": false, "config": {}})";

// `jobs` lease + complete cycles, one job at a time per client, from
// `clients` workers named PREFIX-N; each lease's latency (ms), sorted.
bool Cycles(const std::shared_ptr<grpc::Channel>& channel, int jobs,
            int clients, const std::string& prefix,
            std::vector<double>* lease_ms) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int> remaining{jobs};
  std::atomic<bool> failed{false};
  std::vector<std::thread> cyclers;
  for (int c = 0; c < clients; ++c) {
    cyclers.emplace_back([&, c] {
      auto own = v1::Coordinator::NewStub(channel);
      while (remaining.fetch_sub(1) > 0) {
        v1::LeaseJobsRequest lease;
        lease.set_worker_id(absl::StrCat(prefix, "-", c));
        lease.set_max_jobs(1);
        lease.set_lease_ms(60000);
        v1::LeaseJobsResponse leased;
        const auto l0 = std::chrono::steady_clock::now();
        if (!own->LeaseJobs(BenchContext().get(), lease, &leased).ok() ||
            leased.leases_size() != 1) {
          failed = true;
          return;
        }
        latencies[c].push_back(SecondsSince(l0) * 1000);
        v1::CompleteJobRequest done;
        done.set_worker_id(absl::StrCat(prefix, "-", c));
        done.set_job_id(leased.leases(0).job_id());
        done.set_epoch(leased.leases(0).epoch());
        done.set_result_json(kResult);
        v1::CompleteJobResponse ok;
        if (!own->CompleteJob(BenchContext().get(), done, &ok).ok())
          failed = true;
      }
    });
  }
  for (auto& t : cyclers) t.join();
  if (failed) {
    std::fprintf(stderr, "a lease or completion failed\n");
    return false;
  }
  for (const auto& l : latencies)
    lease_ms->insert(lease_ms->end(), l.begin(), l.end());
  std::sort(lease_ms->begin(), lease_ms->end());
  return true;
}

double Percentile(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1,
                         static_cast<size_t>(q * (sorted.size() - 1)))];
}

int Main(int argc, char** argv) {
  CLI::App app{"Coordinator throughput with fake jobs over loopback gRPC"};
  int jobs = 2000, streams = 8, batches = 50, points = 1000, clients = 4,
      readers = 0;
  app.add_option("--jobs", jobs, "Fake jobs to lease and complete")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--clients", clients, "Concurrent lease/complete clients")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--streams", streams, "Concurrent metric streams")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--batches", batches, "Batches per stream")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--readers", readers,
                 "Clients pulling the whole history in a loop during a "
                 "second round of lease + complete cycles (0: none)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--points", points, "Points per batch (<= 10000)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<LoopbackCoordinator> coordinator =
      LoopbackCoordinator::Start("tailsweep_coordinator_bench");
  if (!coordinator) return 1;
  std::shared_ptr<grpc::Channel> channel = coordinator->channel();
  auto stub = v1::Coordinator::NewStub(channel);

  // A sweep of `jobs + streams` fake jobs: one grid axis of seeds.
  std::string seeds;
  for (int i = 0; i < jobs + streams; ++i)
    absl::StrAppend(&seeds, i ? ", " : "", i);
  v1::SubmitSweepRequest submit;
  submit.set_spec_yaml(absl::StrCat("name: bench\ngrid:\n  seed: [", seeds,
                                    "]\nfixed:\n  steps: 10\n  warmup: 1\n"));
  v1::SubmitSweepResponse submitted;
  auto t0 = std::chrono::steady_clock::now();
  if (!stub->SubmitSweep(BenchContext().get(), submit, &submitted).ok())
    return 1;
  const double submit_s = SecondsSince(t0);

  // Lease + complete, one job at a time per client, from `clients` workers.
  t0 = std::chrono::steady_clock::now();
  std::vector<double> lease_ms;
  if (!Cycles(channel, jobs, clients, "bench", &lease_ms)) return 1;
  const double cycle_s = SecondsSince(t0);

  // Metric streams: each worker thread owns one leased job.
  v1::LeaseJobsRequest lease;
  lease.set_worker_id("streams");
  lease.set_max_jobs(streams);
  lease.set_lease_ms(600000);
  v1::LeaseJobsResponse leased;
  if (!stub->LeaseJobs(BenchContext().get(), lease, &leased).ok()) return 1;
  t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int s = 0; s < leased.leases_size(); ++s) {
    threads.emplace_back([&, s] {
      auto own = v1::Coordinator::NewStub(channel);
      for (int b = 0; b < batches; ++b) {
        v1::ReportMetricsRequest req;
        req.set_worker_id("streams");
        req.set_job_id(leased.leases(s).job_id());
        req.set_epoch(leased.leases(s).epoch());
        req.set_seq(b + 1);
        for (int p = 0; p < points; ++p) {
          v1::MetricPoint* point = req.add_points();
          point->set_name(p % 2 ? "loss" : "lr");
          point->set_step(static_cast<int64_t>(b) * points + p);
          point->set_value(p * 1e-3);
        }
        v1::ReportMetricsResponse ack;
        if (!own->ReportMetrics(BenchContext().get(), req, &ack).ok()) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double stream_s = SecondsSince(t0);
  const double total_points =
      static_cast<double>(leased.leases_size()) * batches * points;

  auto pct = [&](double q) { return Percentile(lease_ms, q); };

  // Leases under a read storm: `readers` clients pull the sweep's whole
  // history (ListSweepMetrics, every page) in a loop while `clients` lease
  // and complete the jobs of another sweep.
  std::vector<double> storm_ms;
  std::atomic<int64_t> pages{0}, pulls{0};
  double storm_s = 0;
  if (readers > 0) {
    v1::SubmitSweepRequest more;
    more.set_spec_yaml(absl::StrCat("name: storm\ngrid:\n  seed: [", seeds,
                                    "]\nfixed:\n  steps: 11\n  warmup: 1\n"));
    if (grpc::Status st =
            stub->SubmitSweep(BenchContext().get(), more, &submitted);
        !st.ok()) {
      std::fprintf(stderr, "submit of the storm sweep: %s\n",
                   st.error_message().c_str());
      return 1;
    }
    std::atomic<bool> stop{false};
    std::vector<std::thread> pullers;
    for (int r = 0; r < readers; ++r) {
      pullers.emplace_back([&] {
        auto own = v1::Coordinator::NewStub(channel);
        while (!stop) {
          v1::ListSweepMetricsRequest req;
          req.set_sweep("bench");
          do {
            v1::ListSweepMetricsResponse page;
            if (!own->ListSweepMetrics(BenchContext().get(), req, &page).ok()) {
              return;
            }
            ++pages;
            req.set_page_token(page.next_page_token());
          } while (!req.page_token().empty() && !stop);
          ++pulls;
        }
      });
    }
    t0 = std::chrono::steady_clock::now();
    const bool ok = Cycles(channel, jobs, clients, "storm", &storm_ms);
    storm_s = SecondsSince(t0);
    stop = true;
    for (auto& t : pullers) t.join();
    if (!ok) return 1;
  }
  std::printf("coordinator, loopback gRPC, SQLite WAL (%s)\n",
              coordinator->dir().c_str());
  std::printf("submit of %d jobs: %.3f s\n", jobs + streams, submit_s);
  std::printf(
      "lease + complete: %d cycles from %d clients in %.3f s = %.0f "
      "cycles/s\n",
      jobs, clients, cycle_s, jobs / cycle_s);
  std::printf("lease latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              pct(0.5), pct(0.99), lease_ms.back());
  std::printf(
      "metrics: %d streams x %d batches x %d points in %.3f s = %.0f "
      "points/s\n",
      leased.leases_size(), batches, points, stream_s, total_points / stream_s);
  if (readers > 0) {
    std::printf(
        "lease + complete while %d readers pull the %.0f-point history in a "
        "loop (%lld pages, %lld whole pulls): %d cycles in %.3f s; lease "
        "latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (idle above: p99 "
        "%.2f ms)\n",
        readers, total_points, static_cast<long long>(pages.load()),
        static_cast<long long>(pulls.load()), jobs, storm_s,
        Percentile(storm_ms, 0.5), Percentile(storm_ms, 0.99), storm_ms.back(),
        pct(0.99));
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
