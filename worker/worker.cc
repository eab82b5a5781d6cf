#include "worker/worker.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

// The child's command line for a lease.
std::vector<std::string> Command(const WorkerOptions& o, const v1::JobLease& l,
                                 const std::string& dir) {
  std::vector<std::string> argv = {o.tailsweep_bin, "--threads",
                                   std::to_string(o.threads_per_slot), "lab"};
  if (l.kind() == "tails") {
    std::map<std::string, std::string> p;
    for (const auto& kv : l.params()) p[kv.key()] = kv.value();
    argv.insert(
        argv.end(),
        {"tails", "--seams", p["seam"], "--budgets", p["n"], "--index-grid",
         p["indices"], "--trials", p["trials"], "--seed", p["seed"],
         "--reference-index", p["reference_index"], "--format", "json"});
    return argv;
  }
  argv.push_back("train");
  for (const auto& kv : l.params()) {
    argv.push_back("--set");
    argv.push_back(kv.key() + "=" + kv.value());
  }
  argv.insert(argv.end(), {"--out-dir", dir});
  if (std::filesystem::exists(dir + "/checkpoints") &&
      !std::filesystem::is_empty(dir + "/checkpoints")) {
    argv.push_back("--resume");
  }
  return argv;
}

}  // namespace

Worker::Worker(v1::Coordinator::StubInterface* stub, WorkerOptions options)
    : stub_(stub), options_(std::move(options)) {}

std::unique_ptr<grpc::ClientContext> Worker::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(options_.rpc_timeout_ms));
  return ctx;
}

void Worker::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    LeaseFreeSlots();
    for (auto it = running_.begin(); it != running_.end();) {
      it = Tend(*it->second) ? std::next(it) : running_.erase(it);
    }
    if (options_.exit_when_idle && idle_ && running_.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
  }
  // Preemption: jobs checkpoint on SIGTERM and exit; their leases are given
  // back uncounted, so another worker resumes them from the checkpoint.
  for (auto& [slot, job] : running_) job->child->Signal(SIGTERM);
  for (auto& [slot, job] : running_) {
    while (!job->child->Poll()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    RelayMetrics(*job);
    Finish(*job, *job->child->Poll());
  }
}

void Worker::LeaseFreeSlots() {
  std::vector<std::string> free;
  for (const std::string& device : options_.devices) {
    for (int s = 0; s < options_.slots_per_device; ++s) {
      const std::string slot = absl::StrCat(device, "/", s);
      if (running_.count(slot) == 0) free.push_back(slot);
    }
  }
  if (free.empty()) return;
  v1::LeaseJobsRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_max_jobs(static_cast<int>(free.size()));
  req.set_lease_ms(options_.lease_ms);
  v1::LeaseJobsResponse resp;
  const grpc::Status status = stub_->LeaseJobs(Context().get(), req, &resp);
  if (!status.ok()) {
    std::fprintf(stderr, "worker: lease: %s\n", status.error_message().c_str());
    return;  // coordinator unreachable: try again on the next round
  }
  idle_ = resp.leases_size() == 0;
  for (int i = 0; i < resp.leases_size(); ++i) {
    // A job re-leased to us while an old attempt of it still runs here
    // (our lease expired under load): that attempt is fenced; stop it before
    // the new one uses the same directory.
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->second->lease.job_id() == resp.leases(i).job_id()) {
        StopNow(*it->second);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    const std::string& slot = free[i];
    std::unique_ptr<Running> job =
        Start(resp.leases(i), slot.substr(0, slot.find('/')));
    if (job) running_[slot] = std::move(job);
  }
}

std::unique_ptr<Worker::Running> Worker::Start(const v1::JobLease& lease,
                                               const std::string& device) {
  auto job = std::make_unique<Running>();
  job->lease = lease;
  job->device = device;
  job->dir =
      (std::filesystem::path(options_.work_dir) / lease.job_id()).string();
  std::error_code ec;
  std::filesystem::create_directories(job->dir, ec);
  std::vector<std::string> env;
  if (absl::StartsWith(device, "cuda:")) {
    env.push_back("CUDA_VISIBLE_DEVICES=" + device.substr(5));
  }
  env.push_back("OMP_NUM_THREADS=" + std::to_string(options_.threads_per_slot));
  const std::vector<std::string> argv = Command(options_, lease, job->dir);
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(
      argv, env, job->dir + "/stdout.txt", job->dir + "/stderr.txt");
  if (!child.ok()) {
    ReportFailure(lease, std::string(child.status().message()));
    return nullptr;
  }
  job->child = std::make_unique<ChildProcess>(std::move(*child));
  job->next_heartbeat_ms = NowMs() + options_.lease_ms / 3;
  // Metrics already relayed by an earlier attempt are resent: harmless,
  // points are keyed by (job, name, step).
  std::fprintf(stderr, "worker: job %s (sweep %s, attempt %lld) on %s\n",
               lease.job_id().substr(0, 12).c_str(), lease.sweep().c_str(),
               static_cast<long long>(lease.attempt()), device.c_str());
  return job;
}

void Worker::StopNow(Running& job) {
  job.child->Signal(SIGKILL);
  while (!job.child->Poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool Worker::Tend(Running& job) {
  RelayMetrics(job);
  if (job.fenced) {
    // The lease is gone and the job belongs to someone else now: kill it at
    // once, without the graceful checkpoint a SIGTERM would write.
    StopNow(job);
    return false;
  }
  if (std::optional<int> code = job.child->Poll()) {
    RelayMetrics(job);
    Finish(job, *code);
    return false;
  }
  if (NowMs() >= job.next_heartbeat_ms) {
    v1::HeartbeatRequest req;
    req.set_worker_id(options_.worker_id);
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_lease_ms(options_.lease_ms);
    v1::HeartbeatResponse resp;
    const grpc::Status status = stub_->Heartbeat(Context().get(), req, &resp);
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        status.error_code() == grpc::StatusCode::CANCELLED ||
        status.error_code() == grpc::StatusCode::NOT_FOUND) {
      std::fprintf(stderr, "worker: stopping job %s: %s\n",
                   job.lease.job_id().substr(0, 12).c_str(),
                   status.error_message().c_str());
      job.fenced = true;
      return true;
    }
    job.next_heartbeat_ms =
        NowMs() + (status.ok() ? options_.lease_ms / 3 : 1000);
  }
  return true;
}

void Worker::RelayMetrics(Running& job) {
  // New complete lines of metrics.jsonl become one numbered batch.
  std::ifstream in(job.dir + "/metrics.jsonl", std::ios::binary);
  if (in) {
    in.seekg(job.metrics_offset);
    std::string line;
    v1::ReportMetricsRequest batch;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a partial last line: wait for the rest
      job.metrics_offset += static_cast<int64_t>(line.size()) + 1;
      const nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
      if (!doc.is_object() || !doc.contains("step")) continue;
      const int64_t step = doc["step"].get<int64_t>();
      for (const char* name :
           {"loss", "lr", "grad_norm", "spread_ratio", "step_seconds"}) {
        if (!doc.contains(name) || !doc[name].is_number()) continue;
        v1::MetricPoint* p = batch.add_points();
        p->set_name(name);
        p->set_step(step);
        p->set_value(doc[name].get<double>());
      }
    }
    if (batch.points_size() > 0) {
      batch.set_job_id(job.lease.job_id());
      batch.set_epoch(job.lease.epoch());
      batch.set_seq(job.next_seq++);
      job.unacked.push_back(std::move(batch));
    }
  }
  // Send in order; keep what is not acknowledged for the next round.
  while (!job.unacked.empty() && !job.fenced) {
    v1::ReportMetricsResponse resp;
    const grpc::Status status =
        stub_->ReportMetrics(Context().get(), job.unacked.front(), &resp);
    if (status.ok()) {
      job.unacked.pop_front();
    } else if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
               status.error_code() == grpc::StatusCode::CANCELLED) {
      job.fenced = true;
    } else {
      break;  // unreachable: resend later
    }
  }
}

void Worker::ReportFailure(const v1::JobLease& lease,
                           const std::string& error) {
  v1::FailJobRequest req;
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_error(error);
  v1::FailJobResponse resp;
  stub_->FailJob(Context().get(), req, &resp);
  ++failed_;
}

void Worker::Finish(Running& job, int exit_code) {
  std::string result;
  if (exit_code == 0) {
    result = job.lease.kind() == "tails" ? ReadAll(job.dir + "/stdout.txt")
                                         : ReadAll(job.dir + "/result.json");
  }
  const nlohmann::json doc = nlohmann::json::parse(result, nullptr, false);
  if (exit_code == 0 && job.lease.kind() == "train" && doc.is_object() &&
      doc.value("stopped", false)) {
    // Preempted: checkpointed; give the lease back so it resumes at once.
    v1::ReleaseJobRequest req;
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_reason("preempted (SIGTERM)");
    v1::ReleaseJobResponse resp;
    stub_->ReleaseJob(Context().get(), req, &resp);
    return;
  }
  if (exit_code != 0 || doc.is_discarded()) {
    ReportFailure(job.lease,
                  absl::StrCat("exit code ", exit_code, ": ",
                               Tail(ReadAll(job.dir + "/stderr.txt"), 2000)));
    return;
  }
  // Retry the completion while the coordinator is unreachable.
  for (int attempt = 0; attempt < 30; ++attempt) {
    v1::CompleteJobRequest req;
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_result_json(doc.dump());
    v1::CompleteJobResponse resp;
    const grpc::Status status = stub_->CompleteJob(Context().get(), req, &resp);
    if (status.ok()) {
      ++completed_;
      return;
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      std::fprintf(stderr, "worker: completing %s: %s\n",
                   job.lease.job_id().substr(0, 12).c_str(),
                   status.error_message().c_str());
      return;
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(500 << std::min(attempt, 4)));
  }
}

}  // namespace tailsweep
