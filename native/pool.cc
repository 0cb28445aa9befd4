#include "pool.h"

namespace layerfs {

Pool& Pool::Get() {
  static Pool* pool = new Pool();
  return *pool;
}

size_t Pool::DefaultThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 2 : (n > kMaxThreads ? kMaxThreads : n);
}

size_t Pool::Size() {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void Pool::Ensure(size_t n) {
  if (n > kMaxThreads) n = kMaxThreads;
  std::lock_guard<std::mutex> lock(mu_);
  while (threads_.size() < n) threads_.emplace_back([this] { Run(); });
}

void Pool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void Pool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void Pool::Shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = false;
}

}  // namespace layerfs
