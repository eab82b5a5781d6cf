#include "worker/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/schema/checkpoint_name.h"
#include "proto/checkpoint_transfer.h"
#include "proto/client_channel.h"

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

std::string Short(const std::string& job_id) { return job_id.substr(0, 12); }

// The bytes of `path` from *offset on ("" when it does not exist). When the
// file was replaced (a resumed job rewrites its metrics.jsonl through a
// rename) or shrank, *offset goes back to 0: the whole file is read again
// (its points are keyed, resending is harmless), never from a position in
// the middle of another file's line.
std::string ReadFrom(const std::string& path, int64_t* offset, ino_t* inode) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "";
  struct stat st;
  std::string text;
  if (::fstat(fd, &st) == 0) {
    if (st.st_ino != *inode || st.st_size < *offset) {
      *offset = 0;
      *inode = st.st_ino;
    }
    if (st.st_size > *offset) {
      text.resize(static_cast<size_t>(st.st_size - *offset));
      const ssize_t n = ::pread(fd, text.data(), text.size(), *offset);
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
  }
  ::close(fd);
  return text;
}

// The newest checkpoint in DIR/checkpoints: its step (0: none) and path.
std::pair<int64_t, std::string> NewestCheckpoint(const std::string& dir) {
  std::pair<int64_t, std::string> newest{0, ""};
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/checkpoints", ec)) {
    absl::StatusOr<int64_t> step =
        CheckpointStepOf(entry.path().filename().string());
    if (step.ok() && *step > newest.first) {
      newest = {*step, entry.path().string()};
    }
  }
  return newest;
}

// The child's command line for a lease.
std::vector<std::string> Command(const WorkerOptions& o, const v1::JobLease& l,
                                 const std::string& device,
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
  // CUDA_VISIBLE_DEVICES leaves the slot's GPU as the only one, cuda:0.
  argv.insert(argv.end(), {"--out-dir", dir, "--device",
                           absl::StartsWith(device, "cuda") ? "cuda" : "cpu"});
  if (NewestCheckpoint(dir).first > 0) argv.push_back("--resume");
  return argv;
}

// The answers worth retrying: the coordinator is unreachable, restarting
// or was killed mid-call (gRPC then says UNAVAILABLE, but also INTERNAL or
// UNKNOWN for a stream reset), or its storage is failing. The call may or
// may not have been applied; every call is safe to repeat.
bool Unreachable(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::ABORTED:
      return true;
    default:
      return false;
  }
}

// The answers that mean: this lease is gone, stop the job.
bool LeaseGone(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::CANCELLED ||
         s.error_code() == grpc::StatusCode::NOT_FOUND;
}

}  // namespace

Worker::Worker(v1::Coordinator::StubInterface* stub, WorkerOptions options)
    : stub_(stub),
      options_(std::move(options)),
      // Capped at a quarter lease: a short outage must not cost the leases.
      backoff_(options_.backoff_base_ms,
               std::min(options_.backoff_cap_ms,
                        std::max<int64_t>(options_.lease_ms / 4, 1)),
               std::hash<std::string>{}(options_.worker_id)) {}

std::unique_ptr<grpc::ClientContext> Worker::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(options_.rpc_timeout_ms));
  AddToken(ctx.get(), options_.token);
  return ctx;
}

template <typename Fn>
grpc::Status Worker::Call(const char* what, Fn fn) {
  if (!backoff_.Ready(NowMs())) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "backing off");
  }
  const grpc::Status status = fn(Context().get());
  if (Unreachable(status)) {
    const int64_t wait = backoff_.Failed(NowMs());
    std::fprintf(stderr,
                 "worker: %s: coordinator unreachable (%s); retry %lld in "
                 "%lld ms\n",
                 what, status.error_message().c_str(),
                 static_cast<long long>(backoff_.failures()),
                 static_cast<long long>(wait));
  } else {
    if (backoff_.failures() > 0) {
      std::fprintf(stderr, "worker: coordinator reachable again\n");
    }
    backoff_.Succeeded();
  }
  return status;
}

void Worker::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    LeaseFreeSlots();
    Round();
    if (options_.exit_when_idle && idle_ && running_.empty() &&
        finished_.empty()) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
  }
  // Preemption: jobs checkpoint on SIGTERM and exit; their checkpoints are
  // uploaded and their leases given back uncounted, so another worker
  // resumes them from there.
  const int64_t deadline = NowMs() + options_.shutdown_grace_ms;
  for (auto& [slot, job] : running_) job->child->Signal(SIGTERM);
  while (!running_.empty() || !finished_.empty()) {
    if (NowMs() > deadline) {
      std::fprintf(stderr,
                   "worker: grace period over; %zu job(s) unreported (their "
                   "leases will expire)\n",
                   running_.size() + finished_.size());
      for (auto& [slot, job] : running_) StopNow(*job);
      return;
    }
    Round();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Worker::Round() {
  for (auto it = running_.begin(); it != running_.end();) {
    if (TendRunning(*it->second)) {
      ++it;
      continue;
    }
    if (!it->second->fenced) finished_.push_back(std::move(it->second));
    it = running_.erase(it);
  }
  for (auto it = finished_.begin(); it != finished_.end();) {
    it = TendFinished(**it) ? std::next(it) : finished_.erase(it);
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
  // A retry of this very call (its answer lost) gets the same leases back.
  req.set_request_id(absl::StrCat(options_.worker_id, "/", ++lease_calls_));
  v1::LeaseJobsResponse resp;
  const grpc::Status status = Call("lease", [&](grpc::ClientContext* ctx) {
    return stub_->LeaseJobs(ctx, req, &resp);
  });
  if (!status.ok()) {
    if (!Unreachable(status)) {
      std::fprintf(stderr, "worker: lease: %s\n",
                   status.error_message().c_str());
    }
    return;
  }
  idle_ = resp.leases_size() == 0;
  for (int i = 0; i < resp.leases_size(); ++i) {
    DropLocal(resp.leases(i).job_id());
    const std::string& slot = free[i];
    std::unique_ptr<Job> job =
        Start(resp.leases(i), slot.substr(0, slot.find('/')));
    if (job) running_[slot] = std::move(job);
  }
}

void Worker::DropLocal(const std::string& job_id) {
  // A job re-leased to us while an old attempt of it is still here (our
  // lease expired under load or during a partition): that attempt is
  // fenced; stop it before the new one uses the same directory.
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->second->lease.job_id() == job_id) {
      StopNow(*it->second);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = finished_.begin(); it != finished_.end();) {
    it = (*it)->lease.job_id() == job_id ? finished_.erase(it) : std::next(it);
  }
}

std::unique_ptr<Worker::Job> Worker::Start(const v1::JobLease& lease,
                                           const std::string& device) {
  auto job = std::make_unique<Job>();
  job->lease = lease;
  job->device = device;
  job->dir =
      (std::filesystem::path(options_.work_dir) / lease.job_id()).string();
  std::error_code ec;
  std::filesystem::create_directories(job->dir + "/checkpoints", ec);
  if (lease.kind() == "train") DownloadCheckpoint(*job);
  std::vector<std::string> env;
  if (absl::StartsWith(device, "cuda:")) {
    env.push_back("CUDA_VISIBLE_DEVICES=" + device.substr(5));
  }
  env.push_back("OMP_NUM_THREADS=" + std::to_string(options_.threads_per_slot));
  const std::vector<std::string> argv =
      Command(options_, lease, device, job->dir);
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(
      argv, env, job->dir + "/stdout.txt", job->dir + "/stderr.txt");
  if (!child.ok()) {
    std::fprintf(stderr, "worker: cannot start job %s: %s\n",
                 Short(lease.job_id()).c_str(),
                 std::string(child.status().message()).c_str());
    job->exit_code = 127;
    finished_.push_back(std::move(job));  // reported as failed
    return nullptr;
  }
  job->child = std::make_unique<ChildProcess>(std::move(*child));
  job->next_heartbeat_ms = NowMs() + options_.lease_ms / 3;
  // Metrics already relayed by an earlier attempt are resent: harmless,
  // points are keyed by (job, name, step).
  std::fprintf(stderr, "worker: job %s (sweep %s, attempt %lld) on %s\n",
               Short(lease.job_id()).c_str(), lease.sweep().c_str(),
               static_cast<long long>(lease.attempt()), device.c_str());
  return job;
}

void Worker::DownloadCheckpoint(Job& job) {
  const int64_t local = NewestCheckpoint(job.dir).first;
  v1::DownloadCheckpointRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(job.lease.job_id());
  req.set_epoch(job.lease.epoch());
  absl::Status received = absl::OkStatus();
  int64_t step = 0;
  const grpc::Status status =
      Call("download checkpoint", [&](grpc::ClientContext* ctx) {
        auto reader = stub_->DownloadCheckpoint(ctx, req);
        v1::CheckpointChunk first;
        if (reader->Read(&first) && first.has_header()) {
          step = first.header().step();
          absl::StatusOr<int64_t> named =
              CheckpointStepOf(first.header().name());
          if (!named.ok()) {
            received = named.status();
          } else if (step > local) {
            received = transfer::ReceiveFile(
                first.header(),
                [&](v1::CheckpointChunk* c) { return reader->Read(c); },
                job.dir + "/checkpoints/" + first.header().name());
          }
          if (step <= local || !received.ok()) ctx->TryCancel();
        }
        return reader->Finish();
      });
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return;
  if (!received.ok() || (!status.ok() && step > local)) {
    std::fprintf(stderr,
                 "worker: job %s: no checkpoint downloaded (%s%s); it starts "
                 "from step %lld\n",
                 Short(job.lease.job_id()).c_str(),
                 std::string(received.message()).c_str(),
                 status.error_message().c_str(), static_cast<long long>(local));
    return;
  }
  job.uploaded_step = step;
  if (step > local) {
    std::fprintf(stderr, "worker: job %s resumes from step %lld\n",
                 Short(job.lease.job_id()).c_str(),
                 static_cast<long long>(step));
  }
}

void Worker::StopNow(Job& job) {
  if (!job.child || job.exit_code) return;
  job.child->Signal(SIGKILL);
  while (!job.child->Poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  job.exit_code = *job.child->Poll();
}

bool Worker::TendRunning(Job& job) {
  // The checkpoint is looked at before the metrics are read: every point
  // logged before it is then in this read.
  const auto [step, path] = NewestCheckpoint(job.dir);
  RelayMetrics(job);
  if (!job.fenced && job.unacked.empty() && job.metrics_at_end &&
      step > job.uploaded_step) {
    UploadCheckpoint(job, step, path);
  }
  if (!job.fenced) Heartbeat(job);
  if (job.fenced) {
    // The lease is gone and the job belongs to someone else now: kill it at
    // once, without the graceful checkpoint a SIGTERM would write.
    std::fprintf(stderr, "worker: stopped job %s (lease gone)\n",
                 Short(job.lease.job_id()).c_str());
    StopNow(job);
    return false;
  }
  if (std::optional<int> code = job.child->Poll()) {
    job.exit_code = *code;
    return false;
  }
  return true;
}

bool Worker::TendFinished(Job& job) {
  if (job.fenced) return false;
  RelayMetrics(job);
  if (job.fenced) return false;
  if (!job.unacked.empty() || !job.metrics_at_end) {
    Heartbeat(job);  // keep the lease while the metrics are delivered
    return !job.fenced;
  }
  if (Report(job)) return false;
  Heartbeat(job);
  return !job.fenced;
}

void Worker::Heartbeat(Job& job) {
  if (NowMs() < job.next_heartbeat_ms) return;
  v1::HeartbeatRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(job.lease.job_id());
  req.set_epoch(job.lease.epoch());
  req.set_lease_ms(options_.lease_ms);
  v1::HeartbeatResponse resp;
  const grpc::Status status = Call("heartbeat", [&](grpc::ClientContext* ctx) {
    return stub_->Heartbeat(ctx, req, &resp);
  });
  if (LeaseGone(status)) {
    std::fprintf(stderr, "worker: job %s: %s\n",
                 Short(job.lease.job_id()).c_str(),
                 status.error_message().c_str());
    job.fenced = true;
    return;
  }
  job.next_heartbeat_ms =
      NowMs() + (status.ok() ? options_.lease_ms / 3 : options_.poll_ms);
}

void Worker::RelayMetrics(Job& job) {
  // New complete lines of metrics.jsonl become numbered batches, as many as
  // the in-memory bound allows; the rest waits in the file.
  v1::ReportMetricsRequest batch;
  auto seal = [&] {
    if (batch.points_size() == 0) return;
    batch.set_worker_id(options_.worker_id);
    batch.set_job_id(job.lease.job_id());
    batch.set_epoch(job.lease.epoch());
    batch.set_seq(job.next_seq++);
    job.unacked.push_back(std::move(batch));
    batch = v1::ReportMetricsRequest();
  };
  const std::string text = ReadFrom(job.dir + "/metrics.jsonl",
                                    &job.metrics_offset, &job.metrics_inode);
  job.metrics_at_end = true;
  size_t pos = 0;
  while (static_cast<int>(job.unacked.size()) < options_.max_unacked_batches) {
    const size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // the end, or a partial last line
    const nlohmann::json doc =
        nlohmann::json::parse(text.substr(pos, end - pos), nullptr, false);
    if (doc.is_object() && doc.contains("step")) {
      if (batch.points_size() + 5 > options_.max_batch_points) {
        seal();
        if (static_cast<int>(job.unacked.size()) >=
            options_.max_unacked_batches) {
          job.metrics_at_end = false;
          break;  // this line goes in a later batch
        }
      }
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
    pos = end + 1;
  }
  if (text.find('\n', pos) != std::string::npos) {
    job.metrics_at_end = false;  // stopped at the in-memory bound
  }
  job.metrics_offset += static_cast<int64_t>(pos);
  seal();
  // Send in order; keep what is not acknowledged for the next round.
  while (!job.unacked.empty() && !job.fenced) {
    v1::ReportMetricsResponse resp;
    const grpc::Status status = Call("metrics", [&](grpc::ClientContext* ctx) {
      return stub_->ReportMetrics(ctx, job.unacked.front(), &resp);
    });
    if (status.ok()) {
      job.unacked.erase(job.unacked.begin());
    } else if (LeaseGone(status)) {
      std::fprintf(stderr, "worker: job %s: %s\n",
                   Short(job.lease.job_id()).c_str(),
                   status.error_message().c_str());
      job.fenced = true;
    } else if (Unreachable(status)) {
      break;  // resend later
    } else {
      // Refused as malformed: resending cannot help; say so and go on.
      std::fprintf(stderr, "worker: job %s: metric batch %lld dropped: %s\n",
                   Short(job.lease.job_id()).c_str(),
                   static_cast<long long>(job.unacked.front().seq()),
                   status.error_message().c_str());
      job.unacked.erase(job.unacked.begin());
    }
  }
}

void Worker::UploadCheckpoint(Job& job, int64_t step, const std::string& path) {
  v1::CheckpointHeader header;
  header.set_worker_id(options_.worker_id);
  header.set_job_id(job.lease.job_id());
  header.set_epoch(job.lease.epoch());
  header.set_step(step);
  header.set_name(std::filesystem::path(path).filename().string());
  v1::UploadCheckpointResponse resp;
  absl::Status sent = absl::OkStatus();
  const grpc::Status status =
      Call("upload checkpoint", [&](grpc::ClientContext* ctx) {
        auto writer = stub_->UploadCheckpoint(ctx, &resp);
        sent = transfer::SendFile(path, header,
                                  [&](const v1::CheckpointChunk& chunk) {
                                    return writer->Write(chunk);
                                  });
        writer->WritesDone();
        return writer->Finish();
      });
  if (status.ok() && sent.ok()) {
    job.uploaded_step = resp.stored_step();
  } else if (LeaseGone(status)) {
    job.fenced = true;
  } else if (!Unreachable(status)) {
    std::fprintf(stderr, "worker: job %s: checkpoint %lld not stored: %s %s\n",
                 Short(job.lease.job_id()).c_str(),
                 static_cast<long long>(step), status.error_message().c_str(),
                 std::string(sent.message()).c_str());
    job.uploaded_step = step;  // do not retry this one; the next may go
  }
}

bool Worker::Report(Job& job) {
  const int code = *job.exit_code;
  std::string result;
  if (code == 0) {
    result = job.lease.kind() == "tails" ? ReadAll(job.dir + "/stdout.txt")
                                         : ReadAll(job.dir + "/result.json");
  }
  const nlohmann::json doc = nlohmann::json::parse(result, nullptr, false);
  grpc::Status status;
  if (code == 0 && job.lease.kind() == "train" && doc.is_object() &&
      doc.value("stopped", false)) {
    // Preempted: checkpointed; upload it, then give the lease back so the
    // job resumes from there at once.
    const auto [step, path] = NewestCheckpoint(job.dir);
    if (step > job.uploaded_step) {
      UploadCheckpoint(job, step, path);
      if (job.uploaded_step < step && !job.fenced) return false;  // retry
    }
    if (job.fenced) return true;
    v1::ReleaseJobRequest req;
    req.set_worker_id(options_.worker_id);
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_reason("preempted (SIGTERM)");
    v1::ReleaseJobResponse resp;
    status = Call("release", [&](grpc::ClientContext* ctx) {
      return stub_->ReleaseJob(ctx, req, &resp);
    });
  } else if (code != 0 || doc.is_discarded()) {
    v1::FailJobRequest req;
    req.set_worker_id(options_.worker_id);
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_error(absl::StrCat("exit code ", code, ": ",
                               Tail(ReadAll(job.dir + "/stderr.txt"), 2000)));
    v1::FailJobResponse resp;
    status = Call("fail", [&](grpc::ClientContext* ctx) {
      return stub_->FailJob(ctx, req, &resp);
    });
    if (status.ok()) ++failed_;
  } else {
    v1::CompleteJobRequest req;
    req.set_worker_id(options_.worker_id);
    req.set_job_id(job.lease.job_id());
    req.set_epoch(job.lease.epoch());
    req.set_result_json(doc.dump());
    v1::CompleteJobResponse resp;
    status = Call("complete", [&](grpc::ClientContext* ctx) {
      return stub_->CompleteJob(ctx, req, &resp);
    });
    if (status.ok()) ++completed_;
  }
  if (Unreachable(status)) return false;  // try again next round
  if (!status.ok()) {
    std::fprintf(stderr, "worker: reporting job %s: %s\n",
                 Short(job.lease.job_id()).c_str(),
                 status.error_message().c_str());
  }
  return true;
}

}  // namespace tailsweep
