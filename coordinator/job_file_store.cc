#include "coordinator/job_file_store.h"

#include <spdlog/spdlog.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/run_outputs.h"
#include "core/schema/status_macros.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kReadChunk = 256 * 1024;

bool IsLogName(const std::string& name) {
  return name == "stdout" || name == "stderr";
}

// What is stored of a job, for NotFound messages.
std::string StoredList(const std::vector<JobFileRow>& rows) {
  std::string out;
  for (const JobFileRow& r : rows) {
    absl::StrAppend(
        &out, out.empty() ? "" : ", ", r.kind, " ", r.name,
        r.kind == "log" ? absl::StrCat(" (epoch ", r.epoch, ")") : "");
  }
  return out.empty() ? "nothing" : out;
}

}  // namespace

JobFileStore::JobFileStore(Store* store, std::string data_dir,
                           JobFileLimits limits)
    : store_(store),
      data_dir_(std::move(data_dir)),
      limits_(std::move(limits)) {
  if (!limits_.free_bytes) limits_.free_bytes = FreeBytes;
}

absl::Status JobFileStore::Validate(const v1::JobFileHeader& h) {
  if (h.kind() == "log") {
    if (!IsLogName(h.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("log name '", h.name(), "'; allowed: stdout, stderr"));
    }
  } else if (h.kind() == "artifact") {
    if (absl::Status s = CheckArtifactGlob(h.name()); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact name: ", s.message()));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("file kind '", h.kind(), "'; allowed: log, artifact"));
  }
  if (h.bytes() < 0 || h.original_bytes() < 0 || h.sha256().size() != 64) {
    return absl::InvalidArgumentError(
        "a job file's header needs bytes >= 0 and a 64-digit SHA-256");
  }
  return absl::OkStatus();
}

absl::Status JobFileStore::Upload(const v1::JobFileHeader& h,
                                  const transfer::NextData& next) {
  const std::string what =
      absl::StrCat(h.kind(), " ", h.name(), " of job ", h.job_id());
  if (h.bytes() > limits_.max_file_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " (", Megabytes(h.bytes()), ") refused: over the ",
                     Megabytes(limits_.max_file_bytes),
                     " a file may hold (--max-job-file-bytes)"));
  }
  if (const absl::StatusOr<int64_t> free = limits_.free_bytes(data_dir_);
      free.ok() && *free - h.bytes() < limits_.min_free_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " (", Megabytes(h.bytes()),
                     ") refused: it would leave less "
                     "than ",
                     Megabytes(limits_.min_free_bytes), " free at ", data_dir_,
                     " (", Megabytes(*free), " free)"));
  }
  if (absl::Status s = store_->CheckLease(h.worker_id(), h.job_id(), h.epoch());
      !s.ok() && !absl::IsFailedPrecondition(s)) {
    return s;  // (an attempt that just ended is checked again below)
  }
  // The job id is one the store knows (a hex digest); the name validated.
  const std::string relative =
      absl::StrCat("outputs/", h.job_id(), "/", h.epoch(), "/", h.kind(), "/",
                   h.name(), h.kind() == "log" ? ".gz" : "");
  const std::string path = (fs::path(data_dir_) / relative).string();
  TS_RETURN_IF_ERROR(transfer::ReceiveData(h.bytes(), h.sha256(), next, path));
  JobFileRow row;
  row.kind = h.kind();
  row.name = h.name();
  row.file = relative;
  row.bytes = h.bytes();
  row.sha256 = h.sha256();
  row.original_bytes = h.original_bytes();
  row.cut = h.cut();
  row.gzip = h.gzip();
  absl::StatusOr<std::vector<std::string>> replaced =
      store_->RecordJobFile(h.worker_id(), h.job_id(), h.epoch(), row);
  std::error_code ec;
  if (!replaced.ok()) {
    fs::remove(path, ec);
    return replaced.status();
  }
  for (const std::string& file : *replaced) {
    fs::remove(fs::path(data_dir_) / file, ec);
  }
  return absl::OkStatus();
}

absl::Status JobFileStore::Read(
    const std::string& job_id, const v1::ReadJobFileRequest& r,
    const std::function<bool(const v1::JobFileChunk&)>& send) {
  absl::StatusOr<std::vector<JobFileRow>> rows = store_->JobFiles(job_id);
  if (!rows.ok()) return rows.status();
  const JobFileRow* found = nullptr;
  for (const JobFileRow& row : *rows) {
    if (row.kind != r.kind() || row.name != r.name()) continue;
    if (r.kind() == "log" && r.epoch() != 0 && row.epoch != r.epoch()) continue;
    if (found == nullptr || row.epoch > found->epoch) found = &row;
  }
  if (r.kind() == "log") {
    // A newer attempt running than the newest stored log: its live tail.
    absl::Status status;
    const bool newer_live = r.epoch() == 0 || found == nullptr;
    if (newer_live) {
      v1::ReadJobFileRequest live = r;
      if (found != nullptr) live.set_epoch(-found->epoch);  // newer than it
      if (SendLive(job_id, live, send, &status)) return status;
    }
  }
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "job ", job_id, " has no ", r.kind(), " '", r.name(), "'",
        r.epoch() != 0 ? absl::StrCat(" of epoch ", r.epoch()) : "",
        "; stored: ", StoredList(*rows)));
  }
  return SendStored(job_id, *found, r.offset(), send);
}

bool JobFileStore::SendLive(
    const std::string& job_id, const v1::ReadJobFileRequest& r,
    const std::function<bool(const v1::JobFileChunk&)>& send,
    absl::Status* status) {
  v1::JobFileChunk chunk;
  std::string data;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    auto it = live_.find(job_id);
    if (it == live_.end()) return false;
    const Live& live = it->second;
    // epoch > 0: that one; < 0: any newer than -epoch; 0: any.
    if ((r.epoch() > 0 && live.epoch != r.epoch()) ||
        (r.epoch() < 0 && live.epoch <= -r.epoch())) {
      return false;
    }
    v1::JobFileHeader* h = chunk.mutable_header();
    h->set_job_id(job_id);
    h->set_epoch(live.epoch);
    h->set_kind("log");
    h->set_name(r.name());
    h->set_live(true);
    auto s = live.streams.find(r.name());
    const LiveStream empty;
    const LiveStream& stream = s == live.streams.end() ? empty : s->second;
    const int64_t end =
        stream.start + static_cast<int64_t>(stream.buffer.size());
    const int64_t from = std::clamp<int64_t>(r.offset(), stream.start, end);
    h->set_offset(from);
    h->set_original_bytes(end);
    data = stream.buffer.substr(static_cast<size_t>(from - stream.start));
  }
  if (!send(chunk)) {
    *status = absl::UnavailableError("stream closed");
    return true;
  }
  for (size_t at = 0; at < data.size(); at += kReadChunk) {
    chunk.set_data(data.substr(at, kReadChunk));
    if (!send(chunk)) {
      *status = absl::UnavailableError("stream closed");
      return true;
    }
  }
  *status = absl::OkStatus();
  return true;
}

absl::Status JobFileStore::SendStored(
    const std::string& job_id, const JobFileRow& row, int64_t offset,
    const std::function<bool(const v1::JobFileChunk&)>& send) {
  const std::string path = (fs::path(data_dir_) / row.file).string();
  v1::JobFileChunk chunk;
  v1::JobFileHeader* h = chunk.mutable_header();
  h->set_job_id(job_id);
  h->set_epoch(row.epoch);
  h->set_kind(row.kind);
  h->set_name(row.name);
  h->set_bytes(row.bytes);
  h->set_sha256(row.sha256);
  h->set_original_bytes(row.original_bytes);
  h->set_cut(row.cut);
  h->set_offset(row.gzip ? std::max<int64_t>(offset, 0) : 0);
  if (!row.gzip) {
    absl::StatusOr<FileDigest> digest = DigestFile(path);
    if (!digest.ok() || digest->sha256 != row.sha256) {
      return absl::DataLossError(
          absl::StrCat(row.kind, " ", row.name, " of job ", job_id,
                       " is damaged on the coordinator"));
    }
    if (!send(chunk)) return absl::UnavailableError("stream closed");
    return transfer::SendFileData(path, row.bytes, [&](absl::string_view d) {
      chunk.set_data(d.data(), d.size());
      return send(chunk);
    });
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return absl::DataLossError(absl::StrCat("cannot open ", row.file));
  }
  absl::Status status;
  if (h->offset() > 0 && gzseek(gz, h->offset(), SEEK_SET) < 0) {
    h->set_offset(0);  // past the end: nothing to send but the header
  }
  if (!send(chunk)) status = absl::UnavailableError("stream closed");
  std::string buffer(kReadChunk, '\0');
  while (status.ok()) {
    const int n =
        gzread(gz, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      status = absl::DataLossError(
          absl::StrCat(row.file, " is damaged: ", gzerror(gz, &code)));
      break;
    }
    if (n == 0) break;
    chunk.set_data(buffer.data(), static_cast<size_t>(n));
    if (!send(chunk)) status = absl::UnavailableError("stream closed");
  }
  gzclose(gz);
  return status;
}

void JobFileStore::AddLive(const std::string& job_id, int64_t epoch,
                           const v1::LiveOutput& output) {
  if (!IsLogName(output.stream()) || output.offset() < 0) return;
  std::lock_guard<std::mutex> lock(live_mu_);
  Live& live = live_[job_id];
  if (epoch < live.epoch) return;
  if (epoch > live.epoch) live = Live{epoch, {}};
  LiveStream& s = live.streams[output.stream()];
  const int64_t end = s.start + static_cast<int64_t>(s.buffer.size());
  const std::string& data = output.data();
  const int64_t data_end = output.offset() + static_cast<int64_t>(data.size());
  if (data_end <= end) return;  // sent before
  if (output.offset() > end || s.buffer.empty()) {
    s.start = output.offset();  // a gap: what was missed is not kept
    s.buffer = data;
  } else {
    s.buffer.append(data, static_cast<size_t>(end - output.offset()),
                    std::string::npos);
  }
  if (static_cast<int64_t>(s.buffer.size()) > kLiveBytes) {
    const size_t drop = s.buffer.size() - kLiveBytes;
    s.buffer.erase(0, drop);
    s.start += static_cast<int64_t>(drop);
  }
}

void JobFileStore::ForgetLive(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(live_mu_);
  live_.erase(job_id);
}

}  // namespace tailsweep
