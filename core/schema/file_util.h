#ifndef TAILSWEEP_CORE_SCHEMA_FILE_UTIL_H_
#define TAILSWEEP_CORE_SCHEMA_FILE_UTIL_H_

// The one way files are read whole, written durably and hashed, used for
// checkpoints, result.json, metrics files and transfers alike. Torch-free;
// POSIX. Thread-compatible.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct evp_md_ctx_st;  // OpenSSL's digest context (openssl/evp.h)

namespace tailsweep {

// The whole file. NotFound when it does not exist, Internal on I/O errors.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// The last `max_bytes` bytes of a file ("" when it does not exist).
std::string ReadFileTail(const std::string& path, int64_t max_bytes);

// Writes `contents` to a temporary file beside `path`, fsyncs it, renames it
// over `path` and fsyncs the directory: after an OK, `path` holds
// `contents` even across a power cut; on any failure (Internal, naming the
// step and the path) `path` is unchanged.
absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents);

// The second half of WriteFileAtomic for a file written by someone else
// (torch::save, a stream): fsyncs `temp`, renames it to `path`, fsyncs the
// directory. Internal on failure (then `temp` is removed).
absl::Status CommitFile(const std::string& temp, const std::string& path);

// A temporary name beside `path`, unique within this process.
std::string TempPathFor(const std::string& path);

// Lower-case hex SHA-256 (FIPS 180-4) of bytes, and of a whole file with
// its size (NotFound / Internal as ReadFile).
std::string Sha256Hex(absl::string_view data);
struct FileDigest {
  int64_t bytes = 0;
  std::string sha256;
};
absl::StatusOr<FileDigest> DigestFile(const std::string& path);

// Incremental SHA-256 written out here (FIPS 180-4), for builds without
// OpenSSL; and what Sha256 is measured against (bench/sha256_bench.cc).
class PortableSha256 {
 public:
  PortableSha256();
  void Update(absl::string_view data);
  // The digest of everything given; the object must not be used after.
  std::string Hex();

 private:
  void Block(const unsigned char* p);
  uint32_t h_[8];
  unsigned char buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

// Incremental SHA-256, for data that arrives in parts: OpenSSL's (its
// SHA extensions or vector code) where the build has OpenSSL, else
// PortableSha256. Not copyable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(absl::string_view data);
  // The digest of everything given; the object must not be used after.
  std::string Hex();
  // "openssl" or "portable": which one this build uses.
  static const char* Implementation();
  // For benchmarks that measure the switch to OpenSSL: Sha256 objects made
  // after UsePortable(true) use the portable code. Not for the product.
  static void UsePortable(bool portable);

 private:
  ::evp_md_ctx_st* ctx_ = nullptr;  // OpenSSL's, when built with it
  PortableSha256 portable_;         // else this
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_FILE_UTIL_H_
