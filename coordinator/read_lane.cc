#include "coordinator/read_lane.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tailsweep {

ReadLane::ReadLane(int threads, int nice, std::chrono::milliseconds max_yield)
    : max_yield_(max_yield) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, nice] { Serve(nice); });
  }
}

ReadLane::~ReadLane() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReadLane::Run(Kind kind, absl::FunctionRef<void()> work) {
  if (threads_.empty()) return work();
  Task task{work};
  std::unique_lock<std::mutex> lock(mu_);
  QueueOf(kind).push_back(&task);
  queued_.notify_one();
  finished_.wait(lock, [&] { return task.done; });
}

int64_t ReadLane::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(views_.size() + exports_.size());
}

ReadLane::Task* ReadLane::Next() {
  const Kind other = last_ == Kind::kView ? Kind::kExport : Kind::kView;
  last_ = QueueOf(other).empty() ? last_ : other;
  Task* task = QueueOf(last_).front();
  QueueOf(last_).pop_front();
  return task;
}

ReadLane::WorkerCall::WorkerCall(ReadLane& lane) : lane_(lane) {
  std::lock_guard<std::mutex> lock(lane_.mu_);
  ++lane_.worker_calls_;
}

ReadLane::WorkerCall::~WorkerCall() {
  std::lock_guard<std::mutex> lock(lane_.mu_);
  if (--lane_.worker_calls_ == 0) lane_.workers_idle_.notify_all();
}

void ReadLane::YieldToWorkers() {
  if (threads_.empty()) return;  // no lane: nothing is held back
  std::unique_lock<std::mutex> lock(mu_);
  if (worker_calls_ == 0 || stopping_) return;
  ++yields_;
  workers_idle_.wait_for(lock, max_yield_,
                         [&] { return worker_calls_ == 0 || stopping_; });
}

int64_t ReadLane::yields() const {
  std::lock_guard<std::mutex> lock(mu_);
  return yields_;
}

void LowerThisThread(int nice) {
  if (nice <= 0) return;
  // This thread only (Linux: a thread's own nice value, by its id).
  const id_t self = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, self);
  if (errno != 0 ||
      setpriority(PRIO_PROCESS, self, std::min(19, now + nice)) != 0) {
    spdlog::warn("cannot lower a thread's priority: {}", std::strerror(errno));
  }
}

void ReadLane::Serve(int nice) {
  pthread_setname_np(pthread_self(), "ts-read-lane");  // top -H, perf, gdb
  LowerThisThread(nice);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !Idle(); });
    if (Idle()) return;  // stopping, nothing left
    if (worker_calls_ > 0 && !stopping_) {
      ++yields_;
      workers_idle_.wait_for(lock, max_yield_,
                             [&] { return worker_calls_ == 0 || stopping_; });
      if (Idle()) continue;  // another lane thread took it
    }
    Task* task = Next();
    lock.unlock();
    task->work();
    lock.lock();
    task->done = true;
    finished_.notify_all();
  }
}

}  // namespace tailsweep
