#ifndef TAILSWEEP_PROTO_COORDINATOR_LINK_H_
#define TAILSWEEP_PROTO_COORDINATOR_LINK_H_

// Where the worker's calls go. A worker started with --coordinator ADDRESS
// always calls the same stubs (FixedLink); one started with --run-dir DIR
// follows the run directory's address file (RunDirLink), because a requeued
// coordinator job may come back on another node and write a new address
// there: the worker's leases lapse meanwhile (fencing keeps that safe), but
// the worker itself finds the coordinator again instead of retrying a dead
// address until its allocation ends.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/schema/clock.h"
#include "proto/client_channel.h"
#include "proto/tailsweep.grpc.pb.h"

namespace tailsweep {

// The coordinator as the worker reaches it: `calls` for every call but the
// checkpoint transfers, which go through `transfers` (a connection of its
// own: proto/client_channel.h, bulk_channel). Both may be one stub.
struct CoordinatorStubs {
  v1::Coordinator::StubInterface* calls = nullptr;
  v1::Coordinator::StubInterface* transfers = nullptr;
};

class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  // The stubs for one call. The handle keeps them alive while the call
  // runs, even when the link moves on meanwhile. Thread-safe.
  virtual std::shared_ptr<const CoordinatorStubs> Stubs() = 0;
  // A call found the coordinator unreachable (worker_api.h's
  // Unreachable). The link may look for it elsewhere; later Stubs() then
  // reach it there. Thread-safe.
  virtual void Unreachable() {}
};

// Always the same stubs: borrowed ones, which must outlive the link, or
// owned ones (a dial's).
class FixedLink final : public CoordinatorLink {
 public:
  explicit FixedLink(CoordinatorStubs stubs)
      : stubs_(std::make_shared<const CoordinatorStubs>(stubs)) {}
  explicit FixedLink(std::shared_ptr<const CoordinatorStubs> stubs)
      : stubs_(std::move(stubs)) {}
  std::shared_ptr<const CoordinatorStubs> Stubs() override { return stubs_; }

 private:
  const std::shared_ptr<const CoordinatorStubs> stubs_;
};

// Makes the stubs of a coordinator at `options` (owning their channels:
// the stubs live as long as the handle). InvalidArgument for unreadable
// files (proto/client_channel.h's Connect).
using DialCoordinator =
    std::function<absl::StatusOr<std::shared_ptr<const CoordinatorStubs>>(
        const ChannelOptions& options)>;

// The real dial: a channel (and a bulk one for transfers) per address,
// reconnecting at least every `max_reconnect_backoff_ms`.
DialCoordinator GrpcDial(int64_t max_reconnect_backoff_ms);

// A worker's coordinator named by a run directory (proto/run_dir.h), with
// the worker token. After an unreachable answer it re-reads DIR/address, at
// most once per `reread_ms`; when the address is another one, it dials it
// and every later call goes there (logged). An address file that is
// missing, half there or unreadable, or a dial that fails, keeps the current
// stubs (logged once per reason).
class RunDirLink final : public CoordinatorLink {
 public:
  // `current`: the stubs of `address`, already dialled. `clock` must
  // outlive the link.
  RunDirLink(std::string dir, std::string address,
             std::shared_ptr<const CoordinatorStubs> current,
             DialCoordinator dial, Clock* clock, int64_t reread_ms);

  std::shared_ptr<const CoordinatorStubs> Stubs() override;
  void Unreachable() override;

  // The address calls go to now.
  std::string address();

 private:
  const std::string dir_;
  const DialCoordinator dial_;
  Clock* const clock_;
  const int64_t reread_ms_;

  std::mutex mu_;
  std::string address_;                              // guarded by mu_
  std::shared_ptr<const CoordinatorStubs> current_;  // guarded by mu_
  int64_t last_read_ms_;                             // guarded by mu_
  bool reading_ = false;      // one thread re-reads at a time; guarded by mu_
  std::string last_problem_;  // guarded by mu_
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_COORDINATOR_LINK_H_
