// Benchmark: the coordinator with fake jobs over loopback gRPC (real
// service, real SQLite file): lease + complete cycles per second, lease
// latency percentiles, and metric points ingested per second from 8
// concurrent streaming workers; with --readers, lease and heartbeat latency
// again while that many clients pull the sweep's whole history over the
// HTTP gateway in a loop (the Python client's bulk route), one more
// rebuilds the report of a paper-sized sweep (320 jobs, cancelled: a
// report reads two curves per job, whatever their length) in a loop (the
// live dashboard) and one more reads one job's loss curve as a dashboard
// draws it (max_points=300) in a loop: their times beside their idle times.
//
//   build/bin/coordinator_bench [--jobs 2000] [--clients 4] [--streams 8]
//                               [--batches 50] [--points 1000] [--readers 0]
//                               [--read-lane-threads 2] [--sweeps 1]
//                               [--sweep-jobs 0]

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/loopback_coordinator.h"
#include "coordinator/http_gateway.h"
#include "coordinator/serving_process.h"
#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

// Jobs of the sweep whose report the dashboard rebuilds in the storm.
constexpr int kDashJobs = 320;

// A minimal valid train result (core/schema/job_result.h).
constexpr char kResult[] =
    R"({"steps_done": 1, "resumed_from_step": 0, "final_loss": 0.5,
        "diverged": false, "diverged_step": null, "collapsed": false,
        "collapse_step": null, "stopped": false, "config": {}})";

// `jobs` lease + heartbeat + complete cycles, one job at a time per client,
// from `clients` workers named PREFIX-N; each lease's and heartbeat's
// latency (ms), sorted.
bool Cycles(const std::shared_ptr<grpc::Channel>& channel, int jobs,
            int clients, const std::string& prefix,
            std::vector<double>* lease_ms, std::vector<double>* heartbeat_ms) {
  std::vector<std::vector<double>> latencies(clients), beats(clients);
  std::atomic<int> remaining{jobs};
  std::atomic<bool> failed{false};
  std::vector<std::thread> cyclers;
  for (int c = 0; c < clients; ++c) {
    cyclers.emplace_back([&, c] {
      pthread_setname_np(pthread_self(), "bench-worker");
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
        v1::HeartbeatRequest beat;
        beat.set_worker_id(lease.worker_id());
        beat.set_job_id(leased.leases(0).job_id());
        beat.set_epoch(leased.leases(0).epoch());
        beat.set_lease_ms(60000);
        v1::HeartbeatResponse renewed;
        const auto h0 = std::chrono::steady_clock::now();
        if (!own->Heartbeat(BenchContext().get(), beat, &renewed).ok()) {
          failed = true;
          return;
        }
        beats[c].push_back(SecondsSince(h0) * 1000);
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
    std::fprintf(stderr, "a lease, heartbeat or completion failed\n");
    return false;
  }
  for (int c = 0; c < clients; ++c) {
    lease_ms->insert(lease_ms->end(), latencies[c].begin(), latencies[c].end());
    heartbeat_ms->insert(heartbeat_ms->end(), beats[c].begin(), beats[c].end());
  }
  std::sort(lease_ms->begin(), lease_ms->end());
  std::sort(heartbeat_ms->begin(), heartbeat_ms->end());
  return true;
}

double Percentile(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1,
                         static_cast<size_t>(q * (sorted.size() - 1)))];
}

// "n=N, p50 A unit, p99 B unit, max C unit".
std::string Spread(std::vector<double> v, const char* unit) {
  if (v.empty()) return "none finished";
  std::sort(v.begin(), v.end());
  return absl::StrFormat("n=%d, p50 %.2f %s, p99 %.2f %s, max %.2f %s",
                         static_cast<int>(v.size()), Percentile(v, 0.5), unit,
                         Percentile(v, 0.99), unit, v.back(), unit);
}

// "p50 A ms, p99 B ms, max C ms, N over 20 ms".
std::string Latencies(const std::vector<double>& sorted) {
  const auto over =
      sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), 20.0);
  return absl::StrFormat("p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d over 20 ms",
                         Percentile(sorted, 0.5), Percentile(sorted, 0.99),
                         sorted.back(), static_cast<int>(over));
}

// A job's stdout as a worker sends it: `bytes` of text lines, gzip.
std::string JobStdout(int job, int64_t bytes) {
  std::string text;
  for (int64_t step = 0; static_cast<int64_t>(text.size()) < bytes; ++step) {
    absl::StrAppend(&text, "job ", job, " step ", step,
                    ": loss=", 1.0 / (step + 1), " lr=0.001\n");
  }
  text.resize(static_cast<size_t>(bytes));
  return text;
}
std::string Gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The uploads of a --log-jobs round, from the process LogUploads starts:
// each job of `list` ("JOB_ID EPOCH" lines) uploads `bytes` of stdout,
// gzip-compressed, from 4 threads. Exit 0 when every one was stored.
int UploadChild(const std::string& list, int port, int64_t bytes) {
  setpriority(PRIO_PROCESS, 0, 19);  // before any thread: they inherit it
  std::vector<std::pair<std::string, int64_t>> held;
  std::ifstream in(list);
  for (std::string id; in >> id;) {
    int64_t epoch = 0;
    in >> epoch;
    held.emplace_back(id, epoch);
  }
  const int n = static_cast<int>(held.size());
  std::vector<std::string> payloads(n);
  for (int i = 0; i < n; ++i) payloads[i] = Gzip(JobStdout(i, bytes));
  std::printf("ready\n");
  std::fflush(stdout);
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                     grpc::InsecureChannelCredentials());
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> uploaders;
  for (int u = 0; u < 4; ++u) {
    uploaders.emplace_back([&] {
      auto own = v1::Coordinator::NewStub(channel);
      for (int i; (i = next.fetch_add(1)) < n;) {
        const std::string& gz = payloads[i];
        v1::JobFileChunk chunk;
        v1::JobFileHeader* h = chunk.mutable_header();
        h->set_job_id(held[i].first);
        h->set_epoch(held[i].second);
        h->set_worker_id("uploader");
        h->set_kind("log");
        h->set_name("stdout");
        h->set_bytes(static_cast<int64_t>(gz.size()));
        h->set_sha256(Sha256Hex(gz));
        h->set_original_bytes(bytes);
        h->set_gzip(true);
        v1::UploadJobFileResponse resp;
        auto ctx = BenchContext();
        auto writer = own->UploadJobFile(ctx.get(), &resp);
        bool ok = writer->Write(chunk);
        for (size_t at = 0; ok && at < gz.size(); at += 256 * 1024) {
          v1::JobFileChunk data;
          data.set_data(gz.substr(at, 256 * 1024));
          ok = writer->Write(data);
        }
        writer->WritesDone();
        if (!writer->Finish().ok() || !ok) failed = true;
      }
    });
  }
  for (auto& t : uploaders) t.join();
  return failed ? 1 : 0;
}

// `n` jobs of a sweep of their own, leased to "uploader" and left running
// while `clients` lease + heartbeat + complete `jobs` jobs of another sweep
// (those leases' latencies into *held_ms), then each sending `bytes` of
// stdout (UploadJobFile, gzip, in 256 KiB chunks; compressed before the
// clock starts, as workers do it elsewhere) from a child process while the
// clients cycle `jobs` jobs of a third sweep (into *lease_ms). Then each log
// is read back (ReadJobFile) and compared: the byte-exact count.
bool LogUploads(const std::shared_ptr<grpc::Channel>& channel, int port, int n,
                int64_t bytes, int jobs, int clients,
                std::vector<double>* held_ms, std::vector<double>* lease_ms,
                int* exact, double* upload_s) {
  auto stub = v1::Coordinator::NewStub(channel);
  const auto submit = [&](const std::string& name, int count, int first) {
    std::string seeds;
    for (int i = 0; i < count; ++i)
      absl::StrAppend(&seeds, i ? ", " : "", first + i);
    v1::SubmitSweepRequest req;
    req.set_spec_yaml(absl::StrCat("name: ", name, "\ngrid:\n  seed: [", seeds,
                                   "]\nfixed:\n  steps: 10\n  warmup: 1\n"));
    v1::SubmitSweepResponse resp;
    const grpc::Status st = stub->SubmitSweep(BenchContext().get(), req, &resp);
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.error_message().c_str());
    return st.ok();
  };
  if (!submit("logs", n, 100000)) return false;
  std::vector<v1::JobLease> held;
  while (static_cast<int>(held.size()) < n) {
    v1::LeaseJobsRequest lease;
    lease.set_worker_id("uploader");
    lease.set_max_jobs(std::min(n - static_cast<int>(held.size()), 64));
    lease.set_lease_ms(3600000);
    v1::LeaseJobsResponse leased;
    if (!stub->LeaseJobs(BenchContext().get(), lease, &leased).ok() ||
        leased.leases_size() == 0) {
      return false;
    }
    held.insert(held.end(), leased.leases().begin(), leased.leases().end());
  }
  // The yardstick: the same store (n jobs leased and running), no uploads.
  std::vector<double> beats;
  if (!submit("quiet", jobs, 200000) ||
      !Cycles(channel, jobs, clients, "quiet", held_ms, &beats)) {
    return false;
  }
  if (!submit("cycles", jobs, 300000)) return false;
  // The uploaders stand for workers on other machines: they run in a
  // process of their own at nice 19 (every thread of it, gRPC's included),
  // so they take only the cores the coordinator leaves, and the round
  // measures what taking the files costs the coordinator.
  const std::string list =
      (std::filesystem::temp_directory_path() / "tailsweep_bench_uploads.txt")
          .string();
  {
    std::ofstream out(list);
    for (const v1::JobLease& l : held) {
      out << l.job_id() << " " << l.epoch() << "\n";
    }
  }
  const std::string command =
      absl::StrCat("/proc/", getpid(), "/exe --upload-child ", list,
                   " --upload-port ", port, " --log-kib ", bytes >> 10);
  FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) return false;
  char line[64] = {0};
  // "ready" once its payloads are made (before the clock starts: the
  // workers compress, not the coordinator).
  if (std::fgets(line, sizeof line, child) == nullptr ||
      std::string(line) != "ready\n") {
    pclose(child);
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  beats.clear();
  const bool cycled =
      Cycles(channel, jobs, clients, "uploads", lease_ms, &beats);
  const bool failed = pclose(child) != 0;
  *upload_s = SecondsSince(t0);
  std::filesystem::remove(list);
  if (failed || !cycled) {
    std::fprintf(stderr, "uploads %s, cycles %s\n", failed ? "failed" : "ok",
                 cycled ? "ok" : "failed");
    return false;
  }
  *exact = 0;
  for (int i = 0; i < n; ++i) {
    v1::ReadJobFileRequest req;
    req.set_job(held[i].job_id());
    req.set_kind("log");
    req.set_name("stdout");
    auto ctx = BenchContext();
    auto reader = stub->ReadJobFile(ctx.get(), req);
    std::string text;
    v1::JobFileChunk chunk;
    while (reader->Read(&chunk)) text += chunk.data();
    if (reader->Finish().ok() && text == JobStdout(i, bytes)) ++*exact;
  }
  return true;
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
  int log_jobs = 0;
  int64_t log_kib = 1024;
  app.add_option("--log-jobs", log_jobs,
                 "Jobs whose stdout is uploaded during a third round of "
                 "lease + complete cycles (0: none)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--log-kib", log_kib, "KiB of stdout per --log-jobs job")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  std::string upload_child;  // the uploads' own process (LogUploads)
  int upload_port = 0;
  app.add_option("--upload-child", upload_child)->group("");
  app.add_option("--upload-port", upload_port)->group("");
  app.add_option("--readers", readers,
                 "Clients pulling the whole history in a loop during a "
                 "second round of lease + complete cycles (0: none)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--points", points, "Points per batch (<= 10000)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  ServiceOptions service;
  app.add_option("--read-lane-threads", service.read_lane_threads,
                 "Threads of the bulk reads' lane (coordinator/read_lane.h; "
                 "0: the reads run on gRPC's threads, as before it)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--read-lane-nice", service.read_lane_nice,
                 "How much lower the lane's priority is (nice, 0..19)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  int64_t max_yield_ms = service.read_lane_max_yield.count();
  app.add_option("--read-lane-max-yield-ms", max_yield_ms,
                 "How long the lane holds a read back while workers' calls "
                 "are in flight (0: not at all)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  int sweeps = 1, sweep_jobs = 0;
  app.add_option("--sweeps", sweeps,
                 "Sweeps the jobs are spread over, leased side by side "
                 "(priority, then fair share); the first is named bench")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--sweep-jobs", sweep_jobs,
                 "Jobs of each sweep (0: (jobs + streams) / sweeps, rounded "
                 "up)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  bool malloc_defaults = false;
  app.add_flag("--malloc-defaults", malloc_defaults,
               "Leave glibc's malloc thresholds as they are "
               "(coordinator/serving_process.h)");
  CLI11_PARSE(app, argc, argv);
  if (!upload_child.empty()) {
    return UploadChild(upload_child, upload_port, log_kib << 10);
  }

  service.read_lane_max_yield = std::chrono::milliseconds(max_yield_ms);
  PrepareServingProcess(!malloc_defaults);
  std::unique_ptr<LoopbackCoordinator> coordinator =
      LoopbackCoordinator::Start("tailsweep_coordinator_bench", service);
  if (!coordinator) return 1;
  std::shared_ptr<grpc::Channel> channel = coordinator->channel();
  auto stub = v1::Coordinator::NewStub(channel);

  // `sweeps` sweeps of `sweep_jobs` fake jobs each: one grid axis of seeds
  // (each sweep its own seeds, so no job is shared).
  if (sweep_jobs == 0) sweep_jobs = (jobs + streams + sweeps - 1) / sweeps;
  if (static_cast<int64_t>(sweeps) * sweep_jobs < jobs + streams) {
    std::fprintf(stderr, "--sweeps x --sweep-jobs must be >= jobs + streams\n");
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < sweeps; ++w) {
    std::string seeds;
    for (int i = 0; i < sweep_jobs; ++i) {
      absl::StrAppend(&seeds, i ? ", " : "",
                      static_cast<int64_t>(w) * sweep_jobs + i);
    }
    v1::SubmitSweepRequest submit;
    submit.set_spec_yaml(absl::StrCat(
        "name: bench", w == 0 ? "" : absl::StrCat("-", w), "\ngrid:\n  seed: [",
        seeds, "]\nfixed:\n  steps: 10\n  warmup: 1\n"));
    v1::SubmitSweepResponse submitted;
    if (!stub->SubmitSweep(BenchContext().get(), submit, &submitted).ok()) {
      std::fprintf(stderr, "submit of sweep %d failed\n", w);
      return 1;
    }
  }
  const double submit_s = SecondsSince(t0);

  // Lease + complete, one job at a time per client, from `clients` workers.
  t0 = std::chrono::steady_clock::now();
  std::vector<double> lease_ms, heartbeat_ms;
  if (!Cycles(channel, jobs, clients, "bench", &lease_ms, &heartbeat_ms)) {
    return 1;
  }
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

  // Leases under a read storm: `readers` clients pull the sweep's whole
  // history over the HTTP gateway (/api/sweeps/bench/history, CSV streamed:
  // the Python client's bulk route) in a loop and one more rebuilds its
  // report (/api/sweeps/bench/report) in a loop, while `clients` lease,
  // heartbeat and complete the jobs of another sweep.
  std::vector<double> storm_ms, storm_beat_ms;
  std::atomic<int64_t> pulls{0}, reports{0}, bytes{0}, failures{0};
  double storm_s = 0;
  // The dashboard's reads: the report (s) and one curve (ms), idle first.
  std::mutex dash_mu;
  std::vector<double> report_s, curve_ms, idle_report_s, idle_curve_ms;
  const std::string curve_path =
      absl::StrCat("/api/jobs/", leased.leases(0).job_id(),
                   "/metrics?names=loss&max_points=300");
  if (readers > 0) {
    v1::SubmitSweepResponse submitted;
    v1::SubmitSweepRequest dash;
    std::string dash_seeds;
    for (int i = 0; i < kDashJobs; ++i) {
      absl::StrAppend(&dash_seeds, i ? ", " : "", i);
    }
    dash.set_spec_yaml(
        absl::StrCat("name: dash\ngrid:\n  seed: [", dash_seeds, "]\n"));
    v1::CancelSweepRequest cancel;
    cancel.set_sweep("dash");
    v1::CancelSweepResponse cancelled;
    if (!stub->SubmitSweep(BenchContext().get(), dash, &submitted).ok() ||
        !stub->CancelSweep(BenchContext().get(), cancel, &cancelled).ok()) {
      std::fprintf(stderr, "the dashboard's sweep could not be set up\n");
      return 1;
    }
    std::string seeds;
    for (int i = 0; i < jobs; ++i) absl::StrAppend(&seeds, i ? ", " : "", i);
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
    HttpGatewayOptions http;
    http.listen = "127.0.0.1:0";
    http.unbounded_burst = 1000000;  // one peer here: no rate limit
    // In process, as tailsweep-coordinator reaches its own service.
    auto gateway = HttpGateway::Start(
        http, coordinator->server().InProcessChannel(grpc::ChannelArguments()),
        [] { return std::string(); });
    if (!gateway.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(gateway.status().message()).c_str());
      return 1;
    }
    const int port = (*gateway)->port();
    {
      httplib::Client idle("127.0.0.1", port);
      idle.set_read_timeout(600);
      for (int i = 0; i < 2; ++i) {
        const auto t = std::chrono::steady_clock::now();
        auto answer = idle.Get("/api/sweeps/dash/report");
        if (answer && answer->status == 200) {
          idle_report_s.push_back(SecondsSince(t));
        }
      }
      for (int i = 0; i < 200; ++i) {
        const auto t = std::chrono::steady_clock::now();
        auto answer = idle.Get(curve_path);
        if (answer && answer->status == 200) {
          idle_curve_ms.push_back(SecondsSince(t) * 1e3);
        }
      }
    }
    std::atomic<bool> stop{false};
    std::vector<std::thread> pullers;
    for (int r = 0; r <= readers + 1; ++r) {
      const bool report = r == readers, curve = r == readers + 1;
      pullers.emplace_back([&, report, curve] {
        // The readers stand for clients on other machines: here, they
        // take only the cores the coordinator leaves.
        setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
        pthread_setname_np(pthread_self(), "bench-reader");
        httplib::Client http_client("127.0.0.1", port);
        http_client.set_read_timeout(600);
        while (!stop && curve) {
          const auto t = std::chrono::steady_clock::now();
          auto answer = http_client.Get(curve_path);
          if (stop) break;
          if (!answer || answer->status != 200) {
            ++failures;
            continue;
          }
          std::lock_guard<std::mutex> lock(dash_mu);
          curve_ms.push_back(SecondsSince(t) * 1e3);
        }
        while (!stop) {
          const auto t = std::chrono::steady_clock::now();
          auto answer = http_client.Get(
              report ? "/api/sweeps/dash/report" : "/api/sweeps/bench/history",
              [&](const char*, size_t n) {
                bytes += static_cast<int64_t>(n);
                return !stop.load();
              });
          if (stop) break;
          if (!answer || answer->status != 200) {
            ++failures;
            continue;
          }
          ++(report ? reports : pulls);
          if (report) {
            std::lock_guard<std::mutex> lock(dash_mu);
            report_s.push_back(SecondsSince(t));
          }
        }
      });
    }
    t0 = std::chrono::steady_clock::now();
    const bool ok =
        Cycles(channel, jobs, clients, "storm", &storm_ms, &storm_beat_ms);
    storm_s = SecondsSince(t0);
    stop = true;
    for (auto& t : pullers) t.join();
    if (!ok) return 1;
  }
  std::vector<double> held_ms, upload_ms;
  int exact = 0;
  double upload_s = 0;
  if (log_jobs > 0 &&
      !LogUploads(channel, coordinator->port(), log_jobs, log_kib << 10, jobs,
                  clients, &held_ms, &upload_ms, &exact, &upload_s)) {
    std::fprintf(stderr, "the log uploads' round failed\n");
    return 1;
  }
  std::printf("coordinator, loopback gRPC, SQLite WAL (%s)\n",
              coordinator->dir().c_str());
  std::printf("submit of %d sweep(s) of %d jobs: %.3f s\n", sweeps, sweep_jobs,
              submit_s);
  std::printf(
      "lease + complete: %d cycles from %d clients in %.3f s = %.0f "
      "cycles/s\n",
      jobs, clients, cycle_s, jobs / cycle_s);
  std::printf("lease latency: %s\n", Latencies(lease_ms).c_str());
  std::printf("heartbeat latency: %s\n", Latencies(heartbeat_ms).c_str());
  std::printf(
      "metrics: %d streams x %d batches x %d points in %.3f s = %.0f "
      "points/s\n",
      leased.leases_size(), batches, points, stream_s, total_points / stream_s);
  if (readers > 0) {
    std::printf(
        "while %d readers pull the %.0f-point history over HTTP in a loop "
        "and 1 rebuilds the report (%lld whole pulls, %lld reports, %.0f MB, "
        "%lld failed reads): %d cycles in %.3f s\n",
        readers, total_points, static_cast<long long>(pulls.load()),
        static_cast<long long>(reports.load()), bytes.load() / 1e6,
        static_cast<long long>(failures.load()), jobs, storm_s);
    std::printf("  lease latency: %s (idle above)\n",
                Latencies(storm_ms).c_str());
    std::printf("  heartbeat latency: %s\n", Latencies(storm_beat_ms).c_str());
    std::printf("  the report of %d jobs: %s (idle: %s)\n", kDashJobs,
                Spread(report_s, "s").c_str(),
                Spread(idle_report_s, "s").c_str());
    std::printf("  one loss curve (max_points=300): %s (idle: %s)\n",
                Spread(curve_ms, "ms").c_str(),
                Spread(idle_curve_ms, "ms").c_str());
  }
  if (log_jobs > 0) {
    std::printf("with %d more jobs leased and running: %d cycles\n", log_jobs,
                jobs);
    std::printf("  lease latency: %s\n", Latencies(held_ms).c_str());
    std::printf(
        "while those %d jobs upload %lld KiB of stdout each (gzip, 4 "
        "uploaders, %.1f s): %d cycles\n",
        log_jobs, static_cast<long long>(log_kib), upload_s, jobs);
    std::printf("  lease latency: %s (no uploads just above)\n",
                Latencies(upload_ms).c_str());
    std::printf("  logs read back byte-exact: %d of %d\n", exact, log_jobs);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
