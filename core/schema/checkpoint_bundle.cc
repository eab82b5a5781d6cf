#include "core/schema/checkpoint_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;
constexpr char kLegacyMagic[] = "TAILSWEEP-BUNDLE 1\n";
constexpr size_t kBlock = 512;
constexpr size_t kCopyBytes = 1 << 20;

absl::Status Damaged(const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint bundle ", path, ": ", why));
}

// A relative path of plain components (no "", ".", ".." or absolute).
bool SafeRelative(absl::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

// --- tar (POSIX ustar, pax for long paths) ---

// A numeric field: octal digits and a NUL, or base-256 (GNU) when the value
// needs more digits than the field has.
void PutNumber(char* field, size_t width, uint64_t value) {
  if (value < (uint64_t{1} << (3 * (width - 1)))) {
    for (size_t i = width - 1; i-- > 0; value >>= 3)
      field[i] = '0' + (value & 7);
    field[width - 1] = '\0';
    return;
  }
  for (size_t i = width; i-- > 1; value >>= 8) field[i] = char(value & 0xff);
  field[0] = char(0x80);
}

std::optional<uint64_t> GetNumber(const char* field, size_t width) {
  uint64_t value = 0;
  if (static_cast<unsigned char>(field[0]) == 0x80) {
    for (size_t i = 1; i < width; ++i) {
      if (value >> 56) return std::nullopt;
      value = (value << 8) | static_cast<unsigned char>(field[i]);
    }
    return value;
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i, any = true) {
    value = (value << 3) | uint64_t(field[i] - '0');
  }
  if (!any || (i < width && field[i] != '\0' && field[i] != ' ')) {
    return std::nullopt;
  }
  return value;
}

unsigned Checksum(const char* block) {
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? unsigned{' '}
                                 : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

struct TarEntry {
  std::string path;  // relative; directories without a trailing '/'
  char type = '0';   // '0' file, '5' directory
  uint64_t size = 0;
  unsigned mode = 0644;
  int64_t mtime = 0;
};

// One header block for `e` with `name` (and `prefix`) as its ustar path.
std::string HeaderBlock(const TarEntry& e, absl::string_view name,
                        absl::string_view prefix) {
  std::string b(kBlock, '\0');
  std::memcpy(&b[0], name.data(), std::min<size_t>(name.size(), 100));
  PutNumber(&b[100], 8, e.mode & 07777);
  PutNumber(&b[108], 8, 0);
  PutNumber(&b[116], 8, 0);
  PutNumber(&b[124], 12, e.size);
  PutNumber(&b[136], 12, static_cast<uint64_t>(std::max<int64_t>(e.mtime, 0)));
  b[156] = e.type;
  std::memcpy(&b[257],
              "ustar\0"
              "00",
              8);
  std::memcpy(&b[345], prefix.data(), std::min<size_t>(prefix.size(), 155));
  char sum[8];
  std::snprintf(sum, sizeof sum, "%06o", Checksum(b.data()));
  std::memcpy(&b[148], sum, 7);
  b[155] = ' ';
  return b;
}

std::string Padding(uint64_t size) {
  return std::string((kBlock - size % kBlock) % kBlock, '\0');
}

// A pax record "LEN key=value\n", LEN counting itself.
std::string PaxRecord(absl::string_view key, absl::string_view value) {
  const size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t len = body + 1;
  while (absl::StrCat(len).size() + body != len) ++len;
  return absl::StrCat(len, " ", key, "=", value, "\n");
}

// The header block(s) of `e`: ustar's name and prefix when the path fits,
// else a pax header with the path first.
std::string Headers(const TarEntry& e) {
  const std::string path = e.type == '5' ? e.path + "/" : e.path;
  if (path.size() <= 100) return HeaderBlock(e, path, "");
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (slash <= 155 && path.size() - slash - 1 <= 100 &&
        slash + 1 < path.size()) {
      return HeaderBlock(e, absl::string_view(path).substr(slash + 1),
                         absl::string_view(path).substr(0, slash));
    }
  }
  const std::string pax = PaxRecord("path", path);
  TarEntry x;
  x.type = 'x';
  x.size = pax.size();
  const std::string cut = path.substr(path.size() - 90);
  return absl::StrCat(HeaderBlock(x, absl::StrCat("PaxHeader/", cut), ""), pax,
                      Padding(pax.size()), HeaderBlock(e, cut, ""));
}

absl::Status WriteAll(int fd, absl::string_view bytes,
                      const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Appends the file at `src` (`size` bytes) to `fd`, then its padding.
absl::Status CopyInto(int fd, const std::string& out, const fs::path& src,
                      uint64_t size, std::string& buffer) {
  const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return absl::InternalError(absl::StrCat("cannot read ", src.string()));
  uint64_t left = size;
  absl::Status s;
  while (left > 0 && s.ok()) {
    const ssize_t n =
        ::read(in, buffer.data(), std::min<uint64_t>(left, buffer.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s = absl::InternalError(
          absl::StrCat(src.string(), " shrank while packed"));
      break;
    }
    s = WriteAll(fd, absl::string_view(buffer.data(), size_t(n)), out);
    left -= uint64_t(n);
  }
  ::close(in);
  if (!s.ok()) return s;
  return WriteAll(fd, Padding(size), out);
}

absl::StatusOr<std::vector<TarEntry>> EntriesOf(const fs::path& root) {
  std::vector<TarEntry> entries;
  const auto add = [&](const fs::path& p, const std::string& rel,
                       char type) -> absl::Status {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) {
      return absl::InternalError(absl::StrCat("cannot stat ", p.string()));
    }
    entries.push_back({rel, type, type == '0' ? uint64_t(st.st_size) : 0,
                       unsigned(st.st_mode & 0777), int64_t(st.st_mtime)});
    return absl::OkStatus();
  };
  const std::string top = root.filename().string();
  if (absl::Status s = add(root, top, '5'); !s.ok()) return s;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code e2;
    const std::string rel =
        (fs::path(top) / fs::relative(it->path(), root)).generic_string();
    if (it->is_symlink(e2)) continue;
    if (it->is_directory(e2)) {
      if (absl::Status s = add(it->path(), rel, '5'); !s.ok()) return s;
    } else if (it->is_regular_file(e2)) {
      if (absl::Status s = add(it->path(), rel, '0'); !s.ok()) return s;
    }
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot read ", root.string(), ": ", ec.message()));
  }
  std::sort(
      entries.begin(), entries.end(),
      [](const TarEntry& a, const TarEntry& b) { return a.path < b.path; });
  return entries;
}

// --- unpacking into a staging directory ---

// Reads exactly `n` bytes (false at a short read).
bool ReadExactly(std::istream& in, char* out, size_t n) {
  in.read(out, static_cast<std::streamsize>(n));
  return in.gcount() == static_cast<std::streamsize>(n);
}

// Copies `size` bytes of `in` to the new file `target`.
absl::Status WriteEntry(std::istream& in, const std::string& bundle,
                        const fs::path& target, uint64_t size, unsigned mode,
                        std::string& buffer) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  const int fd =
      ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot write ", target.string()));
  }
  uint64_t left = size;
  absl::Status s;
  while (left > 0 && s.ok()) {
    const size_t n = std::min<uint64_t>(left, buffer.size());
    if (!ReadExactly(in, buffer.data(), n)) {
      s = Damaged(bundle,
                  absl::StrCat("truncated in ", target.filename().string()));
      break;
    }
    s = WriteAll(fd, absl::string_view(buffer.data(), n), target.string());
    left -= n;
  }
  if (s.ok() && ::fchmod(fd, mode & 0777) != 0) {
    s = absl::InternalError(absl::StrCat("cannot chmod ", target.string()));
  }
  ::close(fd);
  return s;
}

// Checks an entry's path against the bundle's one top directory (set by
// the first entry).
absl::Status CheckPath(const std::string& bundle, const std::string& path,
                       std::string* top) {
  if (!SafeRelative(path)) {
    return Damaged(bundle, absl::StrCat("entry '", path,
                                        "' is absolute or has '..', '.' or an "
                                        "empty part; nothing was restored"));
  }
  const std::string first = path.substr(0, path.find('/'));
  if (top->empty()) *top = first;
  if (first != *top) {
    return Damaged(bundle, absl::StrCat("entries of more than one directory ('",
                                        *top, "', '", first, "')"));
  }
  return absl::OkStatus();
}

std::string FieldText(const char* field, size_t width) {
  return std::string(field, strnlen(field, width));
}

// The path a pax extended header's records set ("" for none).
std::string PaxPath(absl::string_view records) {
  std::string path;
  while (!records.empty()) {
    const size_t space = records.find(' ');
    size_t len = 0;
    if (space == absl::string_view::npos ||
        !absl::SimpleAtoi(records.substr(0, space), &len) || len <= space ||
        len > records.size()) {
      break;
    }
    absl::string_view record = records.substr(space + 1, len - space - 2);
    if (absl::ConsumePrefix(&record, "path=")) path = std::string(record);
    records.remove_prefix(len);
  }
  return path;
}

absl::Status UnpackTar(std::istream& in, const std::string& bundle,
                       const fs::path& staging, std::string* top) {
  std::string buffer(kCopyBytes, '\0');
  std::string pax_path;
  char block[kBlock];
  while (true) {
    if (!ReadExactly(in, block, kBlock)) return Damaged(bundle, "truncated");
    if (std::all_of(block, block + kBlock, [](char c) { return c == 0; })) {
      return top->empty() ? Damaged(bundle, "empty") : absl::OkStatus();
    }
    const std::optional<uint64_t> sum = GetNumber(block + 148, 8);
    const std::optional<uint64_t> size = GetNumber(block + 124, 12);
    if (std::memcmp(block + 257, "ustar", 5) != 0 || !sum ||
        *sum != Checksum(block) || !size) {
      return Damaged(bundle, "a damaged tar header (bad magic or checksum)");
    }
    const char type = block[156];
    std::string path = pax_path;
    pax_path.clear();
    if (path.empty()) {
      const std::string prefix = FieldText(block + 345, 155);
      const std::string name = FieldText(block, 100);
      path = prefix.empty() ? name : absl::StrCat(prefix, "/", name);
    }
    if (type == 'x' || type == 'g') {
      if (*size > (1 << 20)) return Damaged(bundle, "a pax header over 1 MiB");
      std::string records(*size + Padding(*size).size(), '\0');
      if (!ReadExactly(in, records.data(), records.size())) {
        return Damaged(bundle, "truncated");
      }
      if (type == 'x')
        pax_path = PaxPath(absl::string_view(records).substr(0, *size));
      continue;
    }
    while (absl::EndsWith(path, "/")) path.pop_back();
    if (type != '0' && type != '\0' && type != '5') {
      return Damaged(bundle, absl::StrCat("entry '", path,
                                          "' is a link or a "
                                          "special file (type '",
                                          std::string(1, type),
                                          "'); nothing was restored"));
    }
    if (absl::Status s = CheckPath(bundle, path, top); !s.ok()) return s;
    const unsigned mode = unsigned(GetNumber(block + 100, 8).value_or(0644));
    std::error_code ec;
    if (type == '5') {
      fs::create_directories(staging / path, ec);
      continue;
    }
    if (path == *top) return Damaged(bundle, "its top entry is a file");
    if (absl::Status s =
            WriteEntry(in, bundle, staging / path, *size, mode, buffer);
        !s.ok()) {
      return s;
    }
    in.ignore(static_cast<std::streamsize>(Padding(*size).size()));
  }
}

// The format before tar: "F SIZE PATH" lines, each followed by its bytes.
absl::Status UnpackLegacy(std::istream& in, const std::string& bundle,
                          const fs::path& staging, std::string* top) {
  std::string buffer(kCopyBytes, '\0');
  std::string line;
  std::getline(in, line);  // the magic
  while (true) {
    if (!std::getline(in, line)) return Damaged(bundle, "truncated");
    if (line == "E") break;
    std::vector<std::string> parts =
        absl::StrSplit(line, absl::MaxSplits(' ', 2));
    int64_t size = -1;
    if (parts.size() != 3 || parts[0] != "F" ||
        !absl::SimpleAtoi(parts[1], &size) || size < 0) {
      return Damaged(bundle, absl::StrCat("bad entry '", line, "'"));
    }
    if (absl::Status s = CheckPath(bundle, parts[2], top); !s.ok()) return s;
    if (parts[2] == *top) return Damaged(bundle, "its top entry is a file");
    if (absl::Status s = WriteEntry(in, bundle, staging / parts[2],
                                    uint64_t(size), 0644, buffer);
        !s.ok()) {
      return s;
    }
  }
  return top->empty() ? Damaged(bundle, "empty") : absl::OkStatus();
}

bool IsLegacy(const std::string& first_bytes) {
  return absl::StartsWith(first_bytes, kLegacyMagic);
}

}  // namespace

absl::StatusOr<int64_t> CheckpointDirStep(absl::string_view name) {
  absl::string_view digits = name;
  int64_t step = 0;
  const bool ok = absl::ConsumePrefix(&digits, "step-") && !digits.empty() &&
                  digits.size() <= 18 &&
                  std::all_of(digits.begin(), digits.end(),
                              [](char c) { return absl::ascii_isdigit(c); }) &&
                  absl::SimpleAtoi(digits, &step) && step >= 1;
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint directory '", name, "': expected step-N (N >= 1)"));
  }
  return step;
}

absl::StatusOr<CheckpointDir> NewestCompleteCheckpointDir(
    const std::string& dir) {
  CheckpointDir newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    absl::StatusOr<int64_t> step =
        CheckpointDirStep(entry.path().filename().string());
    if (!step.ok() || *step <= newest.step) continue;
    if (!fs::is_regular_file(entry.path() / kCheckpointCompleteMarker, e2)) {
      continue;
    }
    newest = {*step, entry.path().string()};
  }
  if (newest.step == 0) {
    return absl::NotFoundError(
        absl::StrCat("no complete checkpoint directory in ", dir));
  }
  return newest;
}

absl::Status PackCheckpointDir(const std::string& src, const std::string& out) {
  absl::StatusOr<std::vector<TarEntry>> entries = EntriesOf(fs::path(src));
  if (!entries.ok()) return entries.status();
  const std::string temp = TempPathFor(out);
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", temp));
  std::string buffer(kCopyBytes, '\0');
  absl::Status s;
  const fs::path root = fs::path(src).parent_path();
  for (const TarEntry& e : *entries) {
    s = WriteAll(fd, Headers(e), temp);
    if (s.ok() && e.type == '0')
      s = CopyInto(fd, temp, root / e.path, e.size, buffer);
    if (!s.ok()) break;
  }
  if (s.ok()) s = WriteAll(fd, std::string(2 * kBlock, '\0'), temp);
  ::close(fd);
  if (!s.ok()) {
    std::remove(temp.c_str());
    return s;
  }
  return CommitFile(temp, out);
}

bool IsCheckpointBundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kBlock, '\0');
  in.read(head.data(), kBlock);
  head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  if (IsLegacy(head)) return true;
  return head.size() == kBlock && head.compare(257, 5, "ustar") == 0;
}

absl::StatusOr<std::string> UnpackCheckpointBundle(const std::string& bundle,
                                                   const std::string& dest) {
  std::ifstream in(bundle, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", bundle));
  if (!IsCheckpointBundle(bundle)) {
    return Damaged(bundle, "not a checkpoint bundle (a tar)");
  }
  std::string head(sizeof(kLegacyMagic) - 1, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  in.seekg(0);
  const fs::path staging =
      fs::path(dest) /
      absl::StrCat(".unpack-", fs::path(bundle).filename().string());
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  std::string top;
  absl::Status s = IsLegacy(head) ? UnpackLegacy(in, bundle, staging, &top)
                                  : UnpackTar(in, bundle, staging, &top);
  if (!s.ok()) {
    fs::remove_all(staging, ec);
    return s;
  }
  const fs::path final_dir = fs::path(dest) / top;
  fs::remove_all(final_dir, ec);
  fs::rename(staging / top, final_dir, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(staging, ec);
    return absl::InternalError(absl::StrCat("cannot move the checkpoint into ",
                                            final_dir.string(), ": ", why));
  }
  fs::remove_all(staging, ec);
  return top;
}

}  // namespace tailsweep
