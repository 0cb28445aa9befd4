// Process-wide worker pool for batch jobs. Threads block on a condition variable when idle, so
// they never keep the event loop alive; Node-API env cleanup hooks stop and join them.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace layerfs {

class Pool {
 public:
  static constexpr size_t kMaxThreads = 64;

  // Lazily created; never destroyed by static destructors (a worker may still be finishing an
  // item while the process exits).
  static Pool& Get();
  static size_t DefaultThreads();

  // Grows to at least n threads (capped at kMaxThreads).
  void Ensure(size_t n);
  void Submit(std::function<void()> task);
  // Joins every thread after the queue drains; a later Submit starts threads again.
  void Shutdown();
  size_t Size();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace layerfs
