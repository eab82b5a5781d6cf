#include "proto/checkpoint_transfer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"

namespace tailsweep::transfer {
namespace {

// A full disk (or quota) is RESOURCE_EXHAUSTED: retrying the same transfer
// cannot help until someone makes room. Other failures are INTERNAL.
absl::Status IoError(absl::string_view what, const std::string& path) {
  const int error = errno;
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(
        absl::StrCat(message, " (the data directory is full)"));
  }
  return absl::InternalError(message);
}

}  // namespace

absl::Status SendFile(
    const std::string& path, v1::CheckpointHeader header,
    const std::function<bool(const v1::CheckpointChunk&)>& send) {
  absl::StatusOr<FileDigest> digest = DigestFile(path);
  if (!digest.ok()) return digest.status();
  if (!header.sha256().empty() &&
      (header.sha256() != digest->sha256 || header.bytes() != digest->bytes)) {
    return absl::DataLossError(absl::StrCat(
        path, " is damaged: SHA-256 ", digest->sha256, " (", digest->bytes,
        " bytes), recorded ", header.sha256(), " (", header.bytes(), ")"));
  }
  header.set_bytes(digest->bytes);
  header.set_sha256(digest->sha256);
  v1::CheckpointChunk chunk;
  *chunk.mutable_header() = header;
  if (!send(chunk)) return absl::UnavailableError("stream closed");
  return SendFileData(path, digest->bytes, [&](absl::string_view data) {
    chunk.set_data(data.data(), data.size());
    return send(chunk);
  });
}

absl::Status SendFileData(const std::string& path, int64_t bytes,
                          const std::function<bool(absl::string_view)>& send) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("open", path);
  std::string buffer(kChunkBytes, '\0');
  size_t n;
  int64_t sent = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) {
    sent += static_cast<int64_t>(n);
    if (!send(absl::string_view(buffer.data(), n))) {
      std::fclose(f);
      return absl::UnavailableError("stream closed");
    }
  }
  std::fclose(f);
  if (sent != bytes) {
    return absl::DataLossError(absl::StrCat(path, " changed while being sent (",
                                            bytes, " bytes, then ", sent, ")"));
  }
  return absl::OkStatus();
}

absl::Status ReceiveFile(const v1::CheckpointHeader& header,
                         const std::function<bool(v1::CheckpointChunk*)>& next,
                         const std::string& path) {
  v1::CheckpointChunk chunk;
  return ReceiveData(
      header.bytes(), header.sha256(),
      [&](const std::string** data, absl::Status* error) {
        if (!next(&chunk)) return false;
        if (!chunk.has_data()) {
          *error = absl::DataLossError("a second header inside the stream");
          return false;
        }
        *data = &chunk.data();
        return true;
      },
      path);
}

NextData JobFileData(std::function<bool(v1::JobFileChunk*)> next,
                     v1::JobFileChunk* buffer) {
  return [next = std::move(next), buffer](const std::string** data,
                                          absl::Status* error) {
    if (!next(buffer)) return false;
    if (!buffer->has_data()) {
      *error = absl::DataLossError("a second header inside the stream");
      return false;
    }
    *data = &buffer->data();
    return true;
  };
}

absl::Status ReceiveData(int64_t bytes, const std::string& sha256,
                         const NextData& next, const std::string& path) {
  const std::filesystem::path target(path);
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  const std::string temp = TempPathFor(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return IoError("create", temp);
  Sha256 sha;
  int64_t received = 0;
  absl::Status status;
  const std::string* data = nullptr;
  while (status.ok() && next(&data, &status)) {
    received += static_cast<int64_t>(data->size());
    if (received > bytes) {
      status = absl::DataLossError(
          absl::StrCat("more than the ", bytes, " bytes the header announced"));
      break;
    }
    sha.Update(*data);
    for (size_t done = 0; done < data->size();) {
      const ssize_t n = ::write(fd, data->data() + done, data->size() - done);
      if (n < 0) {
        status = IoError("write", temp);
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  if (status.ok() && received != bytes) {
    status = absl::DataLossError(
        absl::StrCat("stream ended after ", received, " of ", bytes, " bytes"));
  }
  if (status.ok()) {
    if (const std::string hex = sha.Hex(); hex != sha256) {
      status = absl::DataLossError(absl::StrCat("SHA-256 mismatch: got ", hex,
                                                ", header says ", sha256));
    }
  }
  ::close(fd);
  if (!status.ok()) {
    std::filesystem::remove(temp, ec);
    return status;
  }
  return CommitFile(temp, path);
}

}  // namespace tailsweep::transfer
