// Benchmark: a checkpoint's trip through a real coordinator on loopback,
// each step with its hashing, side by side with SHA-256 through OpenSSL
// (this build) and through the portable code (before the switch):
//   upload    UploadCheckpoint (the worker hashes it, the coordinator
//             checks it as it writes)
//   download  DownloadCheckpoint to the lease holder (the coordinator
//             checks the stored file, the worker checks what arrives)
//   fetch     FetchCheckpoint, what `tailsweep checkpoint` takes
//   pack      a command job's checkpoint directory packed as a tar (the
//             worker, before an upload)
//   restore   the tar unpacked again (a resumed attempt, `tailsweep
//             checkpoint`)
// MB/s are of the checkpoint's size (10^6 bytes a MB).
//
//   build/bin/checkpoint_transfer_bench [--mib 1024]

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "bench/loopback_coordinator.h"
#include "coordinator/serving_process.h"
#include "core/schema/checkpoint_bundle.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/file_util.h"
#include "core/schema/sweep_spec.h"
#include "proto/checkpoint_transfer.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

// A file of `mib` MiB of random bytes (incompressible, as weights are).
void WriteRandom(const std::string& path, int64_t mib) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string block(1 << 20, '\0');
  std::mt19937_64 rng(50);
  for (int64_t m = 0; m < mib; ++m) {
    for (size_t i = 0; i + 8 <= block.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(block.data() + i, &v, 8);
    }
    out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
}

struct Times {
  double upload = 0, download = 0, fetch = 0, pack = 0, restore = 0;
};

// One pass of every step; `step` must grow from pass to pass.
Times Pass(LoopbackCoordinator& c, const Lease& lease, const std::string& file,
           int64_t step, const std::string& work) {
  Times t;
  auto stub = v1::Coordinator::NewStub(c.channel());
  v1::CheckpointHeader h;
  h.set_job_id(lease.job_id);
  h.set_epoch(lease.epoch);
  h.set_worker_id("bench");
  h.set_step(step);
  h.set_name(CheckpointFileName(step));
  auto t0 = std::chrono::steady_clock::now();
  {
    v1::UploadCheckpointResponse resp;
    auto ctx = BenchContext(std::chrono::seconds(3600));
    auto writer = stub->UploadCheckpoint(ctx.get(), &resp);
    absl::Status s = transfer::SendFile(
        file, h,
        [&](const v1::CheckpointChunk& ch) { return writer->Write(ch); });
    writer->WritesDone();
    const grpc::Status g = writer->Finish();
    if (!s.ok() || !g.ok() || resp.stored_step() != step) {
      std::fprintf(stderr, "upload failed: %s %s\n", s.ToString().c_str(),
                   g.error_message().c_str());
    }
  }
  t.upload = SecondsSince(t0);
  const auto receive = [&](auto reader, const std::string& to) {
    v1::CheckpointChunk first;
    reader->Read(&first);
    absl::Status s = transfer::ReceiveFile(
        first.header(),
        [&](v1::CheckpointChunk* ch) { return reader->Read(ch); }, to);
    const grpc::Status g = reader->Finish();
    if (!s.ok() || !g.ok()) {
      std::fprintf(stderr, "download failed: %s %s\n", s.ToString().c_str(),
                   g.error_message().c_str());
    }
  };
  t0 = std::chrono::steady_clock::now();
  {
    v1::DownloadCheckpointRequest req;
    req.set_job_id(lease.job_id);
    req.set_epoch(lease.epoch);
    req.set_worker_id("bench");
    auto ctx = BenchContext(std::chrono::seconds(3600));
    receive(stub->DownloadCheckpoint(ctx.get(), req), work + "/downloaded.pt");
  }
  t.download = SecondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  {
    v1::FetchCheckpointRequest req;
    req.set_job(lease.job_id);
    auto ctx = BenchContext(std::chrono::seconds(3600));
    receive(stub->FetchCheckpoint(ctx.get(), req), work + "/fetched.pt");
  }
  t.fetch = SecondsSince(t0);
  // The tar of a directory holding the file, packed and unpacked.
  const std::string dir = work + "/src/step-" + std::to_string(step);
  fs::create_directories(dir);
  fs::rename(work + "/fetched.pt", dir + "/model.bin");
  t0 = std::chrono::steady_clock::now();
  absl::Status packed = PackCheckpointDir(dir, work + "/bundle.tar");
  t.pack = SecondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> top =
      UnpackCheckpointBundle(work + "/bundle.tar", work + "/restored");
  t.restore = SecondsSince(t0);
  if (!packed.ok() || !top.ok()) std::fprintf(stderr, "restore failed\n");
  fs::remove_all(work + "/src");
  fs::remove_all(work + "/restored");
  fs::remove(work + "/bundle.tar");
  fs::remove(work + "/downloaded.pt");
  return t;
}

int Main(int argc, char** argv) {
  CLI::App app{"A checkpoint through a loopback coordinator: MB/s per step"};
  int64_t mib = 1024;
  app.add_option("--mib", mib, "Checkpoint size in MiB")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  PrepareServingProcess();
  ServiceOptions options;
  options.max_checkpoint_bytes = (mib + 1) << 20;
  auto c = LoopbackCoordinator::Start("checkpoint_transfer_bench", options);
  if (!c) return 1;
  const std::string work = c->dir() + "/work";
  fs::create_directories(work);
  const std::string file = work + "/checkpoint.pt";
  WriteRandom(file, mib);
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(
      "name: b\nkind: command\ncommand: [true]\ngrid:\n  x: [1]\n", "b.yaml");
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  if (!spec.ok() || !jobs.ok() || !c->store().SubmitSweep(*spec, *jobs).ok()) {
    return 1;
  }
  absl::StatusOr<std::vector<Lease>> leases =
      c->store().LeaseJobs("bench", 1, 3600 * 1000);
  if (!leases.ok() || leases->empty()) return 1;
  const double mb = static_cast<double>(mib << 20) / 1e6;
  std::printf("checkpoint %lld MiB through a loopback coordinator (MB/s)\n",
              static_cast<long long>(mib));
  std::printf("%-10s %9s %9s %9s %9s %9s\n", "sha256", "upload", "download",
              "fetch", "pack", "restore");
  int64_t step = 1;
  for (const bool portable : {true, false}) {
    Sha256::UsePortable(portable);
    Pass(*c, leases->front(), file, step++, work);  // warm the page cache
    const Times t = Pass(*c, leases->front(), file, step++, work);
    std::printf("%-10s %9.0f %9.0f %9.0f %9.0f %9.0f\n",
                portable ? "portable" : Sha256::Implementation(), mb / t.upload,
                mb / t.download, mb / t.fetch, mb / t.pack, mb / t.restore);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
