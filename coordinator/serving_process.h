#ifndef TAILSWEEP_COORDINATOR_SERVING_PROCESS_H_
#define TAILSWEEP_COORDINATOR_SERVING_PROCESS_H_

// What the coordinator's process sets about itself before it serves
// (tailsweep-coordinator, and the benchmarks that stand for it).

namespace tailsweep {

// Once, early in main:
// - raises the soft open-file limit to the hard one: every connection is a
//   file descriptor, and a soft limit of 1024 would let a thousand idle HTTP
//   connections take the ones the store and gRPC need;
// - keeps freed blocks of up to 16 MiB in malloc's heap (and up to 64 MiB
//   free at its top) rather than handing each back to the kernel: a read
//   storm's pages and answers are blocks of hundreds of kB, which glibc's
//   defaults map and unmap one by one, and each page fault and unmap takes
//   the memory-map lock every thread needs, the lease path's too (measured:
//   docs/performance.md, "Leases under a read storm"). Not done when
//   `tune_malloc` is false (to measure glibc's defaults) or when the
//   operator's GLIBC_TUNABLES names malloc settings of its own.
void PrepareServingProcess(bool tune_malloc = true);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_SERVING_PROCESS_H_
