#include "proto/coordinator_link.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "proto/run_dir.h"

namespace tailsweep {

DialCoordinator GrpcDial(int64_t max_reconnect_backoff_ms) {
  return [max_reconnect_backoff_ms](const ChannelOptions& at)
             -> absl::StatusOr<std::shared_ptr<const CoordinatorStubs>> {
    ChannelOptions options = at;
    options.max_reconnect_backoff_ms = max_reconnect_backoff_ms;
    options.bulk_channel = true;
    absl::StatusOr<Client> client = Connect(options);
    if (!client.ok()) return client.status();
    // The stubs and their channels, owned by the handle.
    struct Dialled {
      Client client;
      std::unique_ptr<v1::Coordinator::Stub> calls, transfers;
      CoordinatorStubs view;
    };
    auto dialled = std::make_shared<Dialled>();
    dialled->client = *std::move(client);
    dialled->calls = v1::Coordinator::NewStub(dialled->client.channel);
    dialled->transfers = v1::Coordinator::NewStub(dialled->client.bulk_channel);
    dialled->view = {dialled->calls.get(), dialled->transfers.get()};
    return std::shared_ptr<const CoordinatorStubs>(dialled, &dialled->view);
  };
}

RunDirLink::RunDirLink(std::string dir, std::string address,
                       std::shared_ptr<const CoordinatorStubs> current,
                       DialCoordinator dial, Clock* clock, int64_t reread_ms)
    : dir_(std::move(dir)),
      dial_(std::move(dial)),
      clock_(clock),
      reread_ms_(reread_ms),
      address_(std::move(address)),
      current_(std::move(current)),
      last_read_ms_(clock->SteadyMs()) {}

std::shared_ptr<const CoordinatorStubs> RunDirLink::Stubs() {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::string RunDirLink::address() {
  std::lock_guard<std::mutex> lock(mu_);
  return address_;
}

void RunDirLink::Unreachable() {
  std::string was;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clock_->SteadyMs();
    if (reading_ || now - last_read_ms_ < reread_ms_) return;
    reading_ = true;
    last_read_ms_ = now;
    was = address_;
  }
  // Outside the lock: the file read and the dial may take a while, and
  // other threads' calls go on with the current stubs meanwhile.
  std::string problem;
  std::shared_ptr<const CoordinatorStubs> dialled;
  absl::StatusOr<ChannelOptions> found =
      RunDirChannel(dir_, /*as_worker=*/true);
  if (!found.ok()) {
    problem = std::string(found.status().message());
  } else if (found->address != was) {
    absl::StatusOr<std::shared_ptr<const CoordinatorStubs>> stubs =
        dial_(*found);
    if (stubs.ok()) {
      dialled = *std::move(stubs);
    } else {
      problem = std::string(stubs.status().message());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  reading_ = false;
  if (dialled != nullptr) {
    spdlog::info("the run's coordinator moved: {} -> {} ({})", was,
                 found->address, RunPath(dir_, kRunAddress));
    address_ = found->address;
    current_ = std::move(dialled);
  }
  if (!problem.empty() && problem != last_problem_) {
    spdlog::warn("run directory {}: {}; still calling {}", dir_, problem,
                 address_);
  }
  last_problem_ = problem;
}

}  // namespace tailsweep
