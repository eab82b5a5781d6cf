// The `tailsweep` commands that take what a run made off the coordinator:
// checkpoint (a job's stored checkpoints: list them, or download one).

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/checkpoint_bundle.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/disk_space.h"
#include "core/schema/json_number.h"
#include "core/schema/status_macros.h"
#include "proto/checkpoint_transfer.h"
#include "proto/coordinator_api.h"

namespace tailsweep::cli {
namespace {

namespace fs = std::filesystem;

absl::Status ListCheckpoints(Connection& c, const std::string& job,
                             Format format) {
  v1::GetJobRequest req;
  req.set_job(job);
  v1::GetJobResponse resp;
  TS_RETURN_IF_ERROR(c.Call(&CoordinatorApi::GetJob, req, &resp));
  if (format == Format::kJson) {
    nlohmann::json doc = nlohmann::json::array();
    for (const v1::StoredCheckpoint& s : resp.checkpoints()) {
      doc.push_back({{"step", s.step()},
                     {"name", s.name()},
                     {"bytes", s.bytes()},
                     {"sha256", s.sha256()},
                     {"uploaded_ms", s.uploaded_ms()},
                     {"best", s.best()}});
      if (s.best()) doc.back()["metric"] = JsonNumber(s.metric());
    }
    PrintJson({{"job_id", resp.job().job_id()}, {"checkpoints", doc}});
    return absl::OkStatus();
  }
  Table t;
  t.header = {"step", "file", "size", "best", "metric", "sha256"};
  for (const v1::StoredCheckpoint& s : resp.checkpoints()) {
    t.rows.push_back({absl::StrCat(s.step()), s.name(), Megabytes(s.bytes()),
                      s.best() ? "yes" : "",
                      s.best() ? FormatDouble(s.metric()) : "",
                      s.sha256().substr(0, 12)});
  }
  if (t.rows.empty()) {
    std::cerr << "job " << resp.job().job_id() << " has no stored checkpoint\n";
    return absl::OkStatus();
  }
  std::cout << RenderText(t);
  return absl::OkStatus();
}

// Receives the stream into DIR/NAME (progress on stderr).
absl::StatusOr<v1::CheckpointHeader> Receive(ChunkStream& stream,
                                             const std::string& dir) {
  v1::CheckpointChunk first;
  if (!stream.Next(&first)) {
    absl::Status s = stream.Finish();
    return s.ok() ? absl::DataLossError("the coordinator sent nothing") : s;
  }
  if (!first.has_header() || !CheckpointStepOf(first.header().name()).ok()) {
    return absl::DataLossError("the coordinator's answer has no valid header");
  }
  const v1::CheckpointHeader header = first.header();
  const std::string path = (fs::path(dir) / header.name()).string();
  Progress progress(absl::StrCat("step ", header.step(), " bytes"),
                    header.bytes());
  int64_t received = 0;
  absl::Status written = transfer::ReceiveFile(
      header,
      [&](v1::CheckpointChunk* chunk) {
        if (!stream.Next(chunk)) return false;
        received += static_cast<int64_t>(chunk->data().size());
        progress.Update(received);
        return true;
      },
      path);
  absl::Status finished = stream.Finish();
  if (!finished.ok()) return finished;
  if (!written.ok()) return written;
  return header;
}

absl::Status FetchCheckpoint(Connection& c, const std::string& job,
                             int64_t step, const std::string& out, bool tar) {
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--out ", out, ": cannot make a directory there (",
                     ec ? ec.message() : "a file of that name exists", ")"));
  }
  v1::FetchCheckpointRequest req;
  req.set_job(job);
  req.set_step(step);
  std::unique_ptr<ChunkStream> stream = (*api)->FetchCheckpoint(req);
  absl::StatusOr<v1::CheckpointHeader> header = Receive(*stream, out);
  if (!header.ok()) return header.status();
  std::string path = (fs::path(out) / header->name()).string();
  if (!tar && IsCheckpointBundle(path)) {
    absl::StatusOr<std::string> top = UnpackCheckpointBundle(path, out);
    if (!top.ok()) return top.status();
    fs::remove(path, ec);
    path = (fs::path(out) / *top).string();
  }
  std::cerr << "job " << header->job_id() << ": checkpoint of step "
            << header->step() << " (" << Megabytes(header->bytes())
            << ", SHA-256 " << header->sha256() << ")\n";
  std::cout << path << "\n";
  return absl::OkStatus();
}

RunFn DefineCheckpoint(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string job, out;
    int64_t step = 0;
    bool list = false, tar = false;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("JOB", f->job, "A job id or its first 6+ characters")
      ->required();
  app.add_option("--step", f->step,
                 "The checkpoint of this step (default: the newest); "
                 "--list shows the steps kept")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", f->out,
                 "Directory to write it to (made if missing): a train job's "
                 "step-N.pt, a command job's step-N/ directory");
  app.add_flag("--tar", f->tar,
               "Keep a command job's checkpoint as the tar it travels as");
  app.add_flag("--list", f->list,
               "List the job's stored checkpoints instead (best ones marked)");
  AddFormatOption(app, &f->format);
  app.footer(
      "Any job's checkpoint, the newest or one kept for its metric "
      "(a spec's checkpoints: {keep: best}); it is checked against its "
      "SHA-256 before it is written.");
  return [f]() -> absl::Status {
    if (f->list) return ListCheckpoints(f->c, f->job, f->format);
    if (f->out.empty()) {
      return absl::InvalidArgumentError(
          "--out DIR is required (or --list to see the steps kept)");
    }
    return FetchCheckpoint(f->c, f->job, f->step, f->out, f->tar);
  };
}

}  // namespace

std::vector<Command> OutputCommands() {
  return {
      {"checkpoint",
       "Download a job's checkpoint (the newest, or --step N), or --list "
       "them",
       DefineCheckpoint},
  };
}

}  // namespace tailsweep::cli
