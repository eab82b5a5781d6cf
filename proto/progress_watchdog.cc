#include "proto/progress_watchdog.h"

namespace tailsweep {

ProgressWatchdog::ProgressWatchdog(grpc::ClientContext* ctx, int64_t idle_ms)
    : ctx_(ctx),
      idle_(idle_ms),
      last_(std::chrono::steady_clock::now()),
      thread_([this] { Watch(); }) {}

ProgressWatchdog::~ProgressWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProgressWatchdog::Progress() {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = std::chrono::steady_clock::now();
}

bool ProgressWatchdog::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

void ProgressWatchdog::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const auto due = last_ + idle_;
    if (std::chrono::steady_clock::now() >= due) {
      fired_ = true;
      ctx_->TryCancel();
      return;
    }
    wake_.wait_until(lock, due);
  }
}

}  // namespace tailsweep
