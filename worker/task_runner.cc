#include "worker/task_runner.h"

#include <utility>

namespace tailsweep {
namespace {

class ThreadTask final : public BackgroundTask {
 public:
  explicit ThreadTask(std::function<void()> fn)
      : thread_([this, fn = std::move(fn)] {
          fn();
          done_.store(true, std::memory_order_release);
        }) {}
  ~ThreadTask() override { thread_.join(); }
  bool done() const override { return done_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: started once done_ exists
};

}  // namespace

std::unique_ptr<BackgroundTask> ThreadTaskRunner::Start(
    std::function<void()> fn) {
  return std::make_unique<ThreadTask>(std::move(fn));
}

}  // namespace tailsweep
