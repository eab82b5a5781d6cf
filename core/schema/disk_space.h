#ifndef TAILSWEEP_CORE_SCHEMA_DISK_SPACE_H_
#define TAILSWEEP_CORE_SCHEMA_DISK_SPACE_H_

// Free space of the filesystem that holds a path: for the coordinator's
// storage messages and data budget, and the worker's full work directory.
// Injected where it is used (FreeBytesFn), so tests can say a disk is full
// without filling one.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace tailsweep {

// Bytes an unprivileged process may still write on the filesystem of
// `path` (statvfs: f_bavail * f_frsize); the path need not exist yet (its
// nearest existing parent is asked).
absl::StatusOr<int64_t> FreeBytes(const std::string& path);

using FreeBytesFn = std::function<absl::StatusOr<int64_t>(const std::string&)>;

// "12.3 MB": a byte count for people (decimal megabytes).
std::string Megabytes(int64_t bytes);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_DISK_SPACE_H_
