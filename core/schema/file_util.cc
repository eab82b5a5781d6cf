#include "core/schema/file_util.h"

#if TAILSWEEP_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace {

absl::Status IoError(absl::string_view what, const std::string& path) {
  const int err = errno;
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(err));
  return err == ENOENT ? absl::NotFoundError(message)
                       : absl::InternalError(message);
}

absl::Status SyncFile(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return IoError("open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return IoError("fsync", path);
  return absl::OkStatus();
}

std::string DirOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return IoError("open", path);
  std::string out;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = IoError("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string ReadFileTail(const std::string& path, int64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "";
  struct stat st;
  std::string out;
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && max_bytes > 0) {
    const int64_t size = static_cast<int64_t>(st.st_size);
    const int64_t from = size > max_bytes ? size - max_bytes : 0;
    out.resize(static_cast<size_t>(size - from));
    const ssize_t n = ::pread(fd, out.data(), out.size(), from);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  return out;
}

std::string TempPathFor(const std::string& path) {
  static std::atomic<int64_t> counter{0};
  return absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
}

absl::Status CommitFile(const std::string& temp, const std::string& path) {
  absl::Status s = SyncFile(temp, O_RDONLY);
  if (s.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    s = IoError(absl::StrCat("rename ", temp, " to"), path);
  }
  if (!s.ok()) {
    std::remove(temp.c_str());
    return s;
  }
  return SyncFile(DirOf(path), O_RDONLY | O_DIRECTORY);
}

absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents) {
  const std::string temp = TempPathFor(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return IoError("create", temp);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n =
        ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status s = IoError("write", temp);
      ::close(fd);
      std::remove(temp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    absl::Status s = IoError("close", temp);
    std::remove(temp.c_str());
    return s;
  }
  return CommitFile(temp, path);
}

// SHA-256, FIPS 180-4.
namespace {
constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
}  // namespace

PortableSha256::PortableSha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void PortableSha256::Block(const unsigned char* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = uint32_t{p[4 * i]} << 24 | uint32_t{p[4 * i + 1]} << 16 |
           uint32_t{p[4 * i + 2]} << 8 | uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 =
        Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 =
        Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5],
           g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    const uint32_t ch = (e & f) ^ (~e & g);
    const uint32_t t1 = h + s1 + ch + kK[i] + w[i];
    const uint32_t s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d;
  h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

void PortableSha256::Update(absl::string_view data) {
  length_ += data.size();
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  if (buffered_ > 0) {
    const size_t take = std::min(n, 64 - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take, p += take, n -= take;
    if (buffered_ < 64) return;
    Block(buffer_);
    buffered_ = 0;
  }
  for (; n >= 64; p += 64, n -= 64) Block(p);
  std::memcpy(buffer_, p, n);
  buffered_ = n;
}

std::string PortableSha256::Hex() {
  const uint64_t bits = length_ * 8;
  const unsigned char pad = 0x80;
  Update(absl::string_view(reinterpret_cast<const char*>(&pad), 1));
  const unsigned char zero = 0;
  while (buffered_ != 56) {
    Update(absl::string_view(reinterpret_cast<const char*>(&zero), 1));
  }
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  Update(absl::string_view(reinterpret_cast<const char*>(len), 8));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint32_t word : h_) {
    for (int shift = 28; shift >= 0; shift -= 4) {
      out.push_back(kHex[(word >> shift) & 15]);
    }
  }
  return out;
}

#if TAILSWEEP_HAVE_OPENSSL
namespace {
std::atomic<bool> use_portable_sha256{false};
}  // namespace

void Sha256::UsePortable(bool portable) { use_portable_sha256 = portable; }

Sha256::Sha256() : ctx_(use_portable_sha256 ? nullptr : EVP_MD_CTX_new()) {
  if (ctx_ != nullptr && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    ctx_ = nullptr;  // the portable code then
  }
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }
void Sha256::Update(absl::string_view data) {
  if (ctx_ == nullptr) return portable_.Update(data);
  EVP_DigestUpdate(ctx_, data.data(), data.size());
}
std::string Sha256::Hex() {
  if (ctx_ == nullptr) return portable_.Hex();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, digest, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}
const char* Sha256::Implementation() { return "openssl"; }
#else
void Sha256::UsePortable(bool) {}
Sha256::Sha256() = default;
Sha256::~Sha256() = default;
void Sha256::Update(absl::string_view data) { portable_.Update(data); }
std::string Sha256::Hex() { return portable_.Hex(); }
const char* Sha256::Implementation() { return "portable"; }
#endif

std::string Sha256Hex(absl::string_view data) {
  Sha256 sha;
  sha.Update(data);
  return sha.Hex();
}

absl::StatusOr<FileDigest> DigestFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return IoError("open", path);
  Sha256 sha;
  FileDigest out;
  std::string buffer(1 << 18, '\0');
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = IoError("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    sha.Update(absl::string_view(buffer.data(), static_cast<size_t>(n)));
    out.bytes += n;
  }
  ::close(fd);
  out.sha256 = sha.Hex();
  return out;
}

}  // namespace tailsweep
