#ifndef TAILSWEEP_TESTS_TESTING_FAKE_TASK_RUNNER_H_
#define TAILSWEEP_TESTS_TESTING_FAKE_TASK_RUNNER_H_

// Task runners (worker/task_runner.h) for tests on one thread:
// - InlineTaskRunner runs each task at once, inside Start;
// - HeldTaskRunner holds the tasks `hold` picks (by their number, from 1,
//   in start order; default: all) until the test runs them (RunHeld), e.g.
//   at a moment of a fake clock: a transfer that takes that long. The
//   others run at once.

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "worker/task_runner.h"

namespace tailsweep {

class InlineTaskRunner final : public TaskRunner {
 public:
  std::unique_ptr<BackgroundTask> Start(std::function<void()> fn) override {
    fn();
    return std::make_unique<Done>();
  }

 private:
  struct Done final : BackgroundTask {
    bool done() const override { return true; }
  };
};

class HeldTaskRunner final : public TaskRunner {
 public:
  std::function<bool(int)> hold = [](int) { return true; };

  std::unique_ptr<BackgroundTask> Start(std::function<void()> fn) override {
    auto task = std::make_shared<State>();
    task->fn = std::move(fn);
    if (hold(++started_)) {
      held_.push_back(task);
    } else {
      task->fn();
      task->done = true;
    }
    return std::make_unique<Handle>(task);
  }
  // Runs every task started and not dropped so far, in start order.
  void RunHeld() {
    std::vector<std::shared_ptr<State>> now = std::move(held_);
    held_.clear();
    for (auto& t : now) {
      if (t->dropped) continue;
      t->fn();
      t->done = true;
    }
  }
  int held() const {
    int n = 0;
    for (const auto& t : held_) n += t->dropped ? 0 : 1;
    return n;
  }

 private:
  struct State {
    std::function<void()> fn;
    bool done = false;
    bool dropped = false;  // its Task was destroyed first: never run
  };
  struct Handle final : BackgroundTask {
    explicit Handle(std::shared_ptr<State> s) : state(std::move(s)) {}
    ~Handle() override { state->dropped = !state->done; }
    bool done() const override { return state->done; }
    std::shared_ptr<State> state;
  };
  int started_ = 0;
  std::vector<std::shared_ptr<State>> held_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_TESTING_FAKE_TASK_RUNNER_H_
