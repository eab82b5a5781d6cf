// The `tailsweep` commands that take what a run made off the coordinator:
// checkpoint (a job's stored checkpoints: list them, or download one),
// logs (each attempt's whole stdout and stderr; the live tail with
// --follow) and artifacts (the files its spec's globs matched).

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/messages.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/checkpoint_bundle.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/disk_space.h"
#include "core/schema/json_number.h"
#include "core/schema/run_outputs.h"
#include "core/schema/status_macros.h"
#include "core/schema/utf8.h"
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

// What one ReadJobFile stream said: the header, and its data written out.
struct ReadResult {
  v1::JobFileHeader header;
  int64_t bytes = 0;
};

// Reads a job file, passing each data chunk to `data`.
absl::StatusOr<ReadResult> ReadJobFile(
    const CoordinatorApi& api, const v1::ReadJobFileRequest& req,
    const std::function<void(const std::string&)>& data) {
  std::unique_ptr<JobFileStream> stream = api.ReadJobFile(req);
  v1::JobFileChunk chunk;
  ReadResult out;
  if (!stream->Next(&chunk) || !chunk.has_header()) {
    absl::Status s = stream->Finish();
    return s.ok() ? absl::DataLossError("the answer had no header") : s;
  }
  out.header = chunk.header();
  while (stream->Next(&chunk)) {
    out.bytes += static_cast<int64_t>(chunk.data().size());
    data(chunk.data());
  }
  TS_RETURN_IF_ERROR(stream->Finish());
  return out;
}

// Prints log text as it streams in: with --raw the bytes as they are
// (byte-exact); else invalid UTF-8 replaced and control characters escaped
// (line feeds and tabs kept), as every message others sent is shown. A
// character cut by a chunk's end waits for the next chunk.
class LogPrinter {
 public:
  explicit LogPrinter(bool raw) : raw_(raw) {}
  ~LogPrinter() { Flush(); }
  void Add(const std::string& data) {
    if (raw_) {
      std::cout << data;
      return;
    }
    pending_ += data;
    // Keep an unfinished UTF-8 sequence (at most 3 bytes) for later.
    size_t keep = 0;
    for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
      const unsigned char c =
          static_cast<unsigned char>(pending_[pending_.size() - back]);
      if ((c & 0xC0) == 0x80) continue;  // a continuation byte
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (need > back) keep = back;
      break;
    }
    const std::string ready = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    Write(EscapeControl(ValidUtf8(ready), Lines::kKeep));
  }
  // Writes what waits, and (unless --raw) ends the last line.
  void Flush() {
    if (!pending_.empty()) {
      Write(EscapeControl(ValidUtf8(pending_), Lines::kKeep));
      pending_.clear();
    }
    if (!raw_ && last_ != '\n' && last_ != '\0') Write("\n");
    std::cout.flush();
  }

 private:
  void Write(const std::string& text) {
    if (text.empty()) return;
    std::cout << text;
    last_ = text.back();
  }
  bool raw_;
  std::string pending_;
  char last_ = '\0';
};

// The stderr tails of jobs that have no stored logs (run before 0.3.0, or
// by an older worker).
absl::Status PrintTails(Connection& c, const std::string& job, bool all) {
  v1::GetJobLogRequest req;
  req.set_job(job);
  v1::GetJobLogResponse log;
  TS_RETURN_IF_ERROR(c.Call(&CoordinatorApi::GetJobLog, req, &log));
  std::cerr << "job " << log.job_id() << ": " << log.state()
            << (log.last_error().empty() ? "" : ", last error: ")
            << EscapeControl(ErrorHeadline(log.last_error(), 300)) << "\n";
  if (log.logs_size() == 0) {
    std::cerr << "no output kept for this job yet (it is sent when an "
                 "attempt ends; --follow shows a running one's)\n";
  }
  for (const v1::JobLog& entry : log.logs()) {
    std::cerr << "--- epoch " << entry.epoch() << " ("
              << EscapeControl(entry.outcome()) << "), stderr tail ---\n";
    std::cout << EscapeControl(entry.stderr_tail(), Lines::kKeep);
    if (!entry.stderr_tail().empty() && entry.stderr_tail().back() != '\n') {
      std::cout << "\n";
    }
    if (!all) break;
  }
  return absl::OkStatus();
}

struct LogFlags {
  Connection c;
  std::string job;
  int64_t attempt = 0;
  bool out = false, err = false, follow = false, all = false, raw = false;
};

// Follows the newest attempt's `name` until the job is no longer running.
absl::Status FollowLog(LogFlags& f, const std::string& name) {
  absl::StatusOr<const CoordinatorApi*> api = f.c.Api();
  if (!api.ok()) return api.status();
  int64_t epoch = -1, offset = 0;
  while (true) {
    v1::ReadJobFileRequest req;
    req.set_job(f.job);
    req.set_kind("log");
    req.set_name(name);
    req.set_offset(offset);
    LogPrinter printer(f.raw);
    absl::StatusOr<ReadResult> got =
        ReadJobFile(**api, req, [&](const std::string& d) { printer.Add(d); });
    printer.Flush();
    if (got.ok() && got->header.epoch() != epoch) {
      if (epoch != -1 || got->header.offset() > 0) {
        // A new attempt (or the first seen midway): from its start.
        epoch = got->header.epoch();
        offset = 0;
        std::cerr << "--- epoch " << epoch << " ---\n";
        continue;
      }
      epoch = got->header.epoch();
    }
    if (got.ok()) {
      if (got->header.offset() > offset) {
        std::cerr << "[" << got->header.offset() - offset
                  << " bytes not kept while it ran]\n";
      }
      offset = got->header.offset() + got->bytes;
    } else if (!absl::IsNotFound(got.status())) {
      return got.status();
    }
    v1::GetJobRequest jr;
    jr.set_job(f.job);
    v1::GetJobResponse job;
    TS_RETURN_IF_ERROR(f.c.Call(&CoordinatorApi::GetJob, jr, &job));
    const std::string& state = job.job().state();
    const bool live = got.ok() && got->header.live();
    if (state != "queued" && state != "leased" && !live)
      return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

absl::Status PrintLogs(LogFlags& f) {
  absl::StatusOr<const CoordinatorApi*> api = f.c.Api();
  if (!api.ok()) return api.status();
  const std::vector<std::string> names =
      f.out   ? std::vector<std::string>{"stdout"}
      : f.err ? std::vector<std::string>{"stderr"}
              : std::vector<std::string>{"stdout", "stderr"};
  if (f.follow) return FollowLog(f, names.front());
  v1::GetJobRequest jr;
  jr.set_job(f.job);
  v1::GetJobResponse job;
  TS_RETURN_IF_ERROR(f.c.Call(&CoordinatorApi::GetJob, jr, &job));
  std::set<int64_t> epochs;
  for (const v1::StoredJobFile& file : job.files()) {
    if (file.kind() == "log") epochs.insert(file.epoch());
  }
  if (epochs.empty()) return PrintTails(f.c, f.job, f.all);
  std::vector<int64_t> chosen;
  if (f.attempt > 0) {
    chosen.push_back(f.attempt);
  } else if (f.all) {
    chosen.assign(epochs.begin(), epochs.end());
  } else {
    chosen.push_back(*epochs.rbegin());
  }
  for (int64_t epoch : chosen) {
    for (const std::string& name : names) {
      v1::ReadJobFileRequest req;
      req.set_job(job.job().job_id());
      req.set_kind("log");
      req.set_name(name);
      req.set_epoch(epoch);
      LogPrinter printer(f.raw);
      absl::StatusOr<ReadResult> got = ReadJobFile(
          **api, req, [&](const std::string& d) { printer.Add(d); });
      printer.Flush();
      if (absl::IsNotFound(got.status()) && names.size() > 1) continue;
      if (!got.ok()) return got.status();
      const v1::JobFileHeader& h = got->header;
      std::cerr << "--- epoch " << epoch << " " << name << ": "
                << Megabytes(h.original_bytes())
                << (h.cut() ? ", its middle cut (logs_max_mib)" : "")
                << " ---\n";
    }
  }
  return absl::OkStatus();
}

RunFn DefineLogs(CLI::App& app) {
  auto f = std::make_shared<LogFlags>();
  app.add_option("JOB", f->job, "A job id or its first 6+ characters")
      ->required();
  app.add_option("--attempt", f->attempt,
                 "The attempt whose lease epoch is N (default: the newest)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--stdout", f->out, "Only its stdout");
  app.add_flag("--stderr", f->err, "Only its stderr")->excludes("--stdout");
  app.add_flag("--all", f->all, "Every attempt, oldest first");
  app.add_flag("--raw", f->raw,
               "Write the bytes as they are (default: invalid UTF-8 replaced, "
               "control characters escaped)");
  app.add_flag("--follow,-f", f->follow,
               "Follow the running attempt's stdout (or --stderr) until the "
               "job ends")
      ->excludes("--all")
      ->excludes("--attempt");
  app.footer(
      "Each attempt's whole stdout and stderr, as its worker sent them when "
      "it ended (a log longer than the spec's logs_max_mib keeps its head "
      "and tail). Control characters are escaped and invalid UTF-8 "
      "replaced unless --raw.");
  return [f]() -> absl::Status { return PrintLogs(*f); };
}

absl::Status Artifacts(Connection& c, const std::string& job_prefix,
                       const std::string& out, Format format) {
  v1::GetJobRequest jr;
  jr.set_job(job_prefix);
  v1::GetJobResponse job;
  TS_RETURN_IF_ERROR(c.Call(&CoordinatorApi::GetJob, jr, &job));
  std::vector<v1::StoredJobFile> files;
  for (const v1::StoredJobFile& f : job.files()) {
    if (f.kind() == "artifact") files.push_back(f);
  }
  if (out.empty()) {
    if (format == Format::kJson) {
      nlohmann::json doc = nlohmann::json::array();
      for (const v1::StoredJobFile& f : files) {
        doc.push_back({{"name", f.name()},
                       {"bytes", f.bytes()},
                       {"sha256", f.sha256()},
                       {"epoch", f.epoch()}});
      }
      PrintJson({{"job_id", job.job().job_id()}, {"artifacts", doc}});
      return absl::OkStatus();
    }
    Table t;
    t.header = {"name", "size", "epoch"};
    for (const v1::StoredJobFile& f : files) {
      t.rows.push_back(
          {f.name(), Megabytes(f.bytes()), absl::StrCat(f.epoch())});
    }
    if (files.empty())
      std::cerr << "job " << job.job().job_id() << " has no artifacts\n";
    else
      std::cout << RenderText(t);
    return absl::OkStatus();
  }
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  for (const v1::StoredJobFile& f : files) {
    TS_RETURN_IF_ERROR(CheckArtifactGlob(f.name()));  // stays inside --out
    v1::ReadJobFileRequest req;
    req.set_job(job.job().job_id());
    req.set_kind("artifact");
    req.set_name(f.name());
    const std::string path = (fs::path(out) / f.name()).string();
    // Written whole, checked against its recorded size and SHA-256, or not
    // at all (transfer::ReceiveData).
    std::unique_ptr<JobFileStream> stream = (*api)->ReadJobFile(req);
    v1::JobFileChunk chunk;
    if (!stream->Next(&chunk) || !chunk.has_header()) {
      absl::Status s = stream->Finish();
      return s.ok() ? absl::DataLossError("the answer had no header") : s;
    }
    const absl::Status written = transfer::ReceiveData(
        f.bytes(), f.sha256(),
        transfer::JobFileData(
            [&](v1::JobFileChunk* c) { return stream->Next(c); }, &chunk),
        path);
    TS_RETURN_IF_ERROR(stream->Finish());
    if (!written.ok()) {
      return absl::Status(
          written.code(),
          absl::StrCat("artifact ", f.name(), ": ", written.message()));
    }
    std::cout << path << "\n";
  }
  return absl::OkStatus();
}

RunFn DefineArtifacts(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string job, out;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("JOB", f->job, "A job id or its first 6+ characters")
      ->required();
  app.add_option("--out", f->out,
                 "Download them into this directory (their paths kept)");
  AddFormatOption(app, &f->format);
  app.footer(
      "The files a job's `artifacts:` globs matched when its attempt ended "
      "(the newest attempt's of each name).");
  return [f]() -> absl::Status {
    return Artifacts(f->c, f->job, f->out, f->format);
  };
}

}  // namespace

std::vector<Command> OutputCommands() {
  return {
      {"checkpoint",
       "Download a job's checkpoint (the newest, or --step N), or --list "
       "them",
       DefineCheckpoint},
      {"logs",
       "A job's whole stdout and stderr, per attempt; --follow a running one",
       DefineLogs},
      {"artifacts", "List a job's artifacts, or download them (--out DIR)",
       DefineArtifacts},
  };
}

}  // namespace tailsweep::cli
