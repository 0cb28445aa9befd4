// Per-env bookkeeping shared by the asynchronous bindings (batch jobs, chunk streams): work in
// flight registers here so env teardown (a worker thread terminated, the process exiting) can
// cancel it before the pool is joined.
#pragma once
#include <napi.h>

#include <memory>
#include <vector>

namespace layerfs {

class Cancellable {
 public:
  virtual ~Cancellable() = default;
  // Any thread. Workers stop at their next check; nothing is delivered to JS afterwards.
  virtual void Cancel() = 0;
};

struct EnvState {
  std::vector<std::weak_ptr<Cancellable>> work;
  bool closing = false;

  // Drops `item` and every expired entry (JS thread).
  void Forget(const Cancellable* item) {
    for (size_t i = 0; i < work.size(); i++) {
      auto sp = work[i].lock();
      if (!sp || sp.get() == item) {
        work[i] = work.back();
        work.pop_back();
        i--;
      }
    }
  }
};

// Set up by InitBatch, which owns the env cleanup hook.
std::shared_ptr<EnvState>& StateOf(Napi::Env env);

}  // namespace layerfs
