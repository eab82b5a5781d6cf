#ifndef TAILSWEEP_PROTO_CHECKPOINT_TRANSFER_H_
#define TAILSWEEP_PROTO_CHECKPOINT_TRANSFER_H_

// Both ends of the checkpoint streams (UploadCheckpoint,
// DownloadCheckpoint): a file sent as a header and data chunks, and
// received into a temporary file that becomes the target only when its
// size and SHA-256 match the header (then core/schema/file_util.h's
// CommitFile: a crash leaves the old file or the new one, never a part).
// Checkpoint names follow core/schema/checkpoint_name.h.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::transfer {

// Bytes per data chunk (the API allows up to 1 MiB).
inline constexpr int64_t kChunkBytes = 256 * 1024;
inline constexpr int64_t kMaxChunkBytes = 1024 * 1024;

// Sends `header`, then the file's bytes. The header's bytes and sha256 are
// filled from the file; when the header carries them already (a recorded
// digest), a file that no longer matches is DataLoss and nothing is sent.
// `send` returns false when the stream broke (Unavailable).
absl::Status SendFile(
    const std::string& path, v1::CheckpointHeader header,
    const std::function<bool(const v1::CheckpointChunk&)>& send);

// Reads data chunks with `next` (false at the end of the stream) into a
// temporary file beside `path`, then, when they add up to header.bytes and
// header.sha256, makes it `path` atomically. DataLoss on a mismatch (or a
// second header), Internal on I/O failure; nothing changes at `path` then.
absl::Status ReceiveFile(const v1::CheckpointHeader& header,
                         const std::function<bool(v1::CheckpointChunk*)>& next,
                         const std::string& path);

// The same two halves for any file (UploadJobFile, ReadJobFile), the
// header being the caller's: the bytes of `path` (`bytes` of them; DataLoss
// when it changed), in chunks of at most kChunkBytes.
absl::Status SendFileData(const std::string& path, int64_t bytes,
                          const std::function<bool(absl::string_view)>& send);
// Pulls the next data chunk into *data (valid until the next call); false
// at the end, or with *error set when the stream sent something else.
using NextData =
    std::function<bool(const std::string** data, absl::Status* error)>;
// The data chunks of a JobFile stream read by `next` (into `buffer`, which
// must outlive the NextData), as NextData: another header is DataLoss.
NextData JobFileData(std::function<bool(v1::JobFileChunk*)> next,
                     v1::JobFileChunk* buffer);
// Receives `bytes` bytes whose SHA-256 is `sha256` into `path`, as
// ReceiveFile.
absl::Status ReceiveData(int64_t bytes, const std::string& sha256,
                         const NextData& next, const std::string& path);

}  // namespace tailsweep::transfer

#endif  // TAILSWEEP_PROTO_CHECKPOINT_TRANSFER_H_
