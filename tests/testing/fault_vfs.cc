#include "tests/testing/fault_vfs.h"

#include <atomic>
#include <cstring>
#include <mutex>

namespace tailsweep::testing {
namespace {

sqlite3_vfs* real_vfs = nullptr;
sqlite3_vfs fault_vfs;
std::atomic<int64_t> write_count{0}, sync_count{0};
std::atomic<int64_t> fail_writes_at{-1}, fail_syncs_at{-1};
std::atomic<int> write_code{SQLITE_IOERR_WRITE}, sync_code{SQLITE_IOERR_FSYNC};

// Our file: the real file's object follows it in the same allocation.
struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real;
};
sqlite3_file* Real(sqlite3_file* f) {
  return reinterpret_cast<FaultFile*>(f)->real;
}

int Close(sqlite3_file* f) {
  const int rc =
      Real(f)->pMethods ? Real(f)->pMethods->xClose(Real(f)) : SQLITE_OK;
  return rc;
}
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  const int64_t k = write_count++;
  const int64_t at = fail_writes_at.load();
  if (at >= 0 && k >= at) return write_code.load();
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  const int64_t k = sync_count++;
  const int64_t at = fail_syncs_at.load();
  if (at >= 0 && k >= at) return sync_code.load();
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) {
  return Real(f)->pMethods->xLock(Real(f), level);
}
int Unlock(sqlite3_file* f, int level) {
  return Real(f)->pMethods->xUnlock(Real(f), level);
}
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) {
  return Real(f)->pMethods->xSectorSize(Real(f));
}
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend,
           void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) {
  return Real(f)->pMethods->xShmUnmap(Real(f), del);
}

// Version 2 methods: WAL needs the shared-memory calls; no memory mapping.
const sqlite3_io_methods kMethods = {2,
                                     Close,
                                     Read,
                                     Write,
                                     Truncate,
                                     Sync,
                                     FileSize,
                                     Lock,
                                     Unlock,
                                     CheckReservedLock,
                                     FileControl,
                                     SectorSize,
                                     DeviceCharacteristics,
                                     ShmMap,
                                     ShmLock,
                                     ShmBarrier,
                                     ShmUnmap,
                                     nullptr,
                                     nullptr};

int Open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags,
         int* out_flags) {
  FaultFile* f = reinterpret_cast<FaultFile*>(file);
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  std::memset(f->real, 0, real_vfs->szOsFile);
  const int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
  file->pMethods = rc == SQLITE_OK ? &kMethods : nullptr;
  return rc;
}

}  // namespace

FaultVfs& FaultVfs::Get() {
  static std::once_flag once;
  std::call_once(once, [] {
    real_vfs = sqlite3_vfs_find(nullptr);
    fault_vfs = *real_vfs;
    fault_vfs.iVersion = 2;
    fault_vfs.szOsFile =
        static_cast<int>(sizeof(FaultFile)) + real_vfs->szOsFile;
    fault_vfs.zName = kName;
    fault_vfs.pNext = nullptr;
    fault_vfs.xOpen = Open;
    sqlite3_vfs_register(&fault_vfs, /*makeDflt=*/0);
  });
  static FaultVfs vfs;
  return vfs;
}

void FaultVfs::FailWritesAfter(int64_t n, int code) {
  write_code = code;
  fail_writes_at = write_count.load() + n;
}
void FaultVfs::FailSyncsAfter(int64_t n, int code) {
  sync_code = code;
  fail_syncs_at = sync_count.load() + n;
}
void FaultVfs::Heal() {
  fail_writes_at = -1;
  fail_syncs_at = -1;
}
int64_t FaultVfs::writes() const { return write_count.load(); }
int64_t FaultVfs::syncs() const { return sync_count.load(); }

}  // namespace tailsweep::testing
