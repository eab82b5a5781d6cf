#ifndef TAILSWEEP_BENCH_LOOPBACK_COORDINATOR_H_
#define TAILSWEEP_BENCH_LOOPBACK_COORDINATOR_H_

// For the coordinator benchmarks: the real store (a fresh SQLite file in a
// temporary directory, removed at the end), checkpoint store and service,
// served on a loopback port, and a channel to it.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/service.h"

namespace tailsweep {

inline double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// A context for one benchmark call: its deadline.
inline std::unique_ptr<grpc::ClientContext> BenchContext(
    std::chrono::seconds deadline = std::chrono::seconds(30)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

class LoopbackCoordinator {
 public:
  // Under TMPDIR/`name` (emptied first); nullptr, said on stderr, when the
  // store cannot be opened. Call PrepareServingProcess() first, as
  // tailsweep-coordinator does.
  static std::unique_ptr<LoopbackCoordinator> Start(
      const std::string& name, const ServiceOptions& options = {}) {
    auto c = std::unique_ptr<LoopbackCoordinator>(new LoopbackCoordinator);
    c->dir_ = (std::filesystem::temp_directory_path() / name).string();
    std::filesystem::remove_all(c->dir_);
    std::filesystem::create_directories(c->dir_);
    auto store = Store::Open(c->dir_ + "/bench.db", &c->clock_);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(store.status().message()).c_str());
      return nullptr;
    }
    c->store_ = std::move(*store);
    c->checkpoints_ =
        std::make_unique<CheckpointStore>(c->store_.get(), c->dir_ + "/data");
    c->service_ = std::make_unique<CoordinatorService>(
        c->store_.get(), c->checkpoints_.get(), options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(c->service_.get());
    c->server_ = builder.BuildAndStart();
    c->port_ = port;
    c->channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                      grpc::InsecureChannelCredentials());
    return c;
  }
  // Stops serving and removes the directory.
  ~LoopbackCoordinator() {
    if (server_) server_->Shutdown();
    server_.reset();
    service_.reset();
    checkpoints_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Store& store() { return *store_; }
  const std::string& dir() const { return dir_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  int port() const { return port_; }
  grpc::Server& server() { return *server_; }

 private:
  LoopbackCoordinator() = default;
  std::string dir_;
  SystemClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_BENCH_LOOPBACK_COORDINATOR_H_
