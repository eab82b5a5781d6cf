#ifndef TAILSWEEP_TESTS_TESTING_FAULT_VFS_H_
#define TAILSWEEP_TESTS_TESTING_FAULT_VFS_H_

// A SQLite VFS for tests, in the manner of SQLite's own crash and I/O-error
// simulation: it passes every call to the default VFS and, when told, fails
// writes or syncs from the Nth one on (an I/O error, or a full disk). The
// store opens it by name (StoreOptions::vfs). Faults are process-wide.

#include <sqlite3.h>

#include <cstdint>

namespace tailsweep::testing {

class FaultVfs {
 public:
  static constexpr char kName[] = "tailsweep-fault";
  // Registers the VFS once (not as the default) and returns it.
  static FaultVfs& Get();

  // From the (n+1)-th write (or sync) from now on, every one fails with
  // `code` (SQLITE_IOERR_WRITE, SQLITE_FULL, SQLITE_IOERR_FSYNC, ...).
  void FailWritesAfter(int64_t n, int code);
  void FailSyncsAfter(int64_t n, int code);
  // The disk works again.
  void Heal();
  int64_t writes() const;
  int64_t syncs() const;
};

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_FAULT_VFS_H_
