// Benchmark: what idle workers cost the coordinator. `--idle` workers poll
// LeaseJobs every `--poll-ms` with nothing queued (as idle daemons do),
// while `--busy` workers each renew a lease every 100 ms; for `--seconds`
// it counts the store writer's transactions and times the heartbeats.
// Real service and SQLite file, loopback gRPC.
//
//   build/bin/idle_workers_bench [--idle 200] [--busy 8] [--poll-ms 200]
//                                [--seconds 10]

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/loopback_coordinator.h"
#include "coordinator/serving_process.h"

namespace tailsweep {
namespace {

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(30));
  return ctx;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

int Main(int argc, char** argv) {
  CLI::App app{"Coordinator cost of idle workers polling for jobs"};
  int idle = 200, busy = 8, poll_ms = 200, seconds = 10;
  app.add_option("--idle", idle, "Idle workers polling")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app.add_option("--busy", busy, "Workers holding a lease, renewing it")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--poll-ms", poll_ms, "Each idle worker's poll period")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_option("--seconds", seconds, "How long to measure")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  PrepareServingProcess();
  std::unique_ptr<LoopbackCoordinator> coordinator =
      LoopbackCoordinator::Start("tailsweep_idle_bench");
  if (!coordinator) return 1;
  std::shared_ptr<grpc::Channel> channel = coordinator->channel();
  auto stub = v1::Coordinator::NewStub(channel);

  // One job per busy worker, all leased: the queue is empty.
  std::string seeds;
  for (int i = 0; i < busy; ++i) absl::StrAppend(&seeds, i ? ", " : "", i);
  v1::SubmitSweepRequest submit;
  submit.set_spec_yaml(absl::StrCat("name: idle\ngrid:\n  seed: [", seeds,
                                    "]\nfixed:\n  steps: 10\n  warmup: 1\n"));
  v1::SubmitSweepResponse submitted;
  if (!stub->SubmitSweep(Context().get(), submit, &submitted).ok()) return 1;
  std::vector<v1::JobLease> leases;
  for (int b = 0; b < busy; ++b) {
    v1::LeaseJobsRequest req;
    req.set_worker_id(absl::StrCat("busy-", b));
    req.set_max_jobs(1);
    req.set_lease_ms(60000);
    req.set_request_id(absl::StrCat("busy-", b, "/1"));
    v1::LeaseJobsResponse resp;
    if (!stub->LeaseJobs(Context().get(), req, &resp).ok() ||
        resp.leases_size() != 1) {
      std::fprintf(stderr, "could not lease the busy workers' jobs\n");
      return 1;
    }
    leases.push_back(resp.leases(0));
  }

  std::atomic<bool> stop{false};
  std::atomic<int64_t> polls{0}, errors{0};
  std::mutex mu;
  std::vector<double> heartbeat_ms;
  const int64_t tx_before = coordinator->store().WriterTransactions();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  // Idle workers: 20 threads, each polling for its share of the workers.
  const int pollers = std::min(idle, 20);
  for (int t = 0; t < pollers; ++t) {
    threads.emplace_back([&, t] {
      auto own = v1::Coordinator::NewStub(channel);
      int64_t call = 0;
      while (!stop) {
        const auto round = std::chrono::steady_clock::now();
        ++call;
        for (int w = t; w < idle && !stop; w += pollers) {
          v1::LeaseJobsRequest req;
          req.set_worker_id(absl::StrCat("idle-", w));
          req.set_max_jobs(2);
          req.set_lease_ms(30000);
          req.set_request_id(absl::StrCat("idle-", w, "/", call));
          v1::LeaseJobsResponse resp;
          if (!own->LeaseJobs(Context().get(), req, &resp).ok()) ++errors;
          ++polls;
        }
        std::this_thread::sleep_until(round +
                                      std::chrono::milliseconds(poll_ms));
      }
    });
  }
  for (int b = 0; b < busy; ++b) {
    threads.emplace_back([&, b] {
      auto own = v1::Coordinator::NewStub(channel);
      while (!stop) {
        v1::HeartbeatRequest req;
        req.set_worker_id(absl::StrCat("busy-", b));
        req.set_job_id(leases[b].job_id());
        req.set_epoch(leases[b].epoch());
        req.set_lease_ms(60000);
        v1::HeartbeatResponse resp;
        const auto h0 = std::chrono::steady_clock::now();
        const bool ok = own->Heartbeat(Context().get(), req, &resp).ok();
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - h0)
                              .count();
        if (!ok) ++errors;
        {
          std::lock_guard<std::mutex> lock(mu);
          heartbeat_ms.push_back(ms);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const int64_t tx = coordinator->store().WriterTransactions() - tx_before;
  std::printf(
      "idle workers %d (poll %d ms), busy %d (heartbeat every 100 ms), %.1f "
      "s\n",
      idle, poll_ms, busy, elapsed);
  std::printf("  idle LeaseJobs calls/s    %10.1f\n", polls / elapsed);
  std::printf("  heartbeats/s              %10.1f\n",
              heartbeat_ms.size() / elapsed);
  std::printf("  writer transactions/s     %10.1f\n", tx / elapsed);
  std::printf("  heartbeat p50 / p99 ms    %10.2f / %.2f\n",
              Percentile(heartbeat_ms, 0.5), Percentile(heartbeat_ms, 0.99));
  std::printf("  failed calls              %10lld\n",
              static_cast<long long>(errors.load()));
  return errors > 0 ? 1 : 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
