// walkTree / walkTreeSync: a parallel walk + lstat of a whole tree (walk.h) on the process-wide
// Pool, returned as typed arrays. The async form resolves its promise through a thread-safe
// function called by the worker that finished the walk; the sync form lets the calling thread
// work too and returns when the walk is done.
#include <napi.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "napi_util.h"
#include "pool.h"
#include "scan.h"
#include "walk.h"

namespace layerfs {

namespace {

class WalkJob;

// Per-env registry of walks in flight, so env teardown can cancel them before the pool is joined.
struct WalkEnv {
  std::mutex mu;
  std::vector<std::weak_ptr<WalkJob>> jobs;
  bool closing = false;
};

template <typename T>
Napi::TypedArrayOf<T> CopyArray(Napi::Env env, const std::vector<T>& v) {
  auto a = Napi::TypedArrayOf<T>::New(env, v.size());
  if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(T));
  return a;
}

Napi::Object ResultObject(Napi::Env env, const WalkResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", Napi::Number::New(env, static_cast<double>(r.count())));
  o.Set("names", Napi::Buffer<char>::Copy(env, r.names.data(), r.names.size()));
  o.Set("nameOffsets", CopyArray(env, r.name_offsets));
  o.Set("parent", CopyArray(env, r.parent));
  o.Set("kind", CopyArray(env, r.kind));
  o.Set("mode", CopyArray(env, r.mode));
  o.Set("ino", CopyArray(env, r.ino));
  o.Set("size", CopyArray(env, r.size));
  o.Set("mtimeNs", CopyArray(env, r.mtime_ns));
  o.Set("ctimeNs", CopyArray(env, r.ctime_ns));
  return o;
}

// An Error with errno/syscall/path, turned into LayerFsError(ERR_NATIVE_IO) by lib/native.
Napi::Error WalkErrorObject(Napi::Env env, const WalkError& e) {
  Napi::Error err = ErrnoError(env, e.syscall.c_str(), e.err);
  char buf[256];
  err.Set("message", Napi::String::New(env, "cannot walk " + e.path + ": " + e.syscall + " failed: " +
                                                strerror_r(e.err, buf, sizeof(buf))));
  err.Set("path", Napi::String::New(env, e.path));
  return err;
}

Napi::Error CancelledError(Napi::Env env) { return Napi::Error::New(env, "the walk was cancelled"); }

class WalkJob : public std::enable_shared_from_this<WalkJob> {
 public:
  explicit WalkJob(std::string root) : walk_(std::move(root), &cancel_) {}

  Napi::Value Start(Napi::Env env, std::shared_ptr<WalkEnv> state, size_t threads) {
    napi_value promise;
    NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &deferred_, &promise), Napi::Value());
    auto* holder = new std::shared_ptr<WalkJob>(shared_from_this());
    napi_status s = napi_create_threadsafe_function(
        env, nullptr, nullptr, Napi::String::New(env, "layerfs.walk"), 0, 1, holder, OnFinalize,
        this, OnCallJs, &tsfn_);
    if (s != napi_ok) {
      delete holder;
      NAPI_THROW_IF_FAILED(env, s, Napi::Value());
    }
    state_ = std::move(state);
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->jobs.push_back(weak_from_this());
    }
    Pool::Get().Ensure(threads);
    for (size_t r = 0; r < threads; r++) {
      Pool::Get().Submit([job = shared_from_this()] {
        if (job->walk_.Work()) job->Finish();
      });
    }
    return Napi::Value(env, promise);
  }

  void Cancel() { cancel_.store(true, std::memory_order_relaxed); }

 private:
  // On the worker that finished the walk: assemble, then hand over to the JS thread.
  void Finish() {
    if (walk_.error().err == 0 && !walk_.cancelled()) {
      try {
        walk_.Assemble(&result_);
      } catch (const std::bad_alloc&) {
        oom_ = true;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finalized_) return;
      in_flight_ = true;
    }
    napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
    napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_ = false;
    }
    cv_.notify_all();
  }

  void Settle(Napi::Env env) {
    try {
      if (walk_.error().err != 0) {
        napi_reject_deferred(env, deferred_, WalkErrorObject(env, walk_.error()).Value());
      } else if (walk_.cancelled()) {
        napi_reject_deferred(env, deferred_, CancelledError(env).Value());
      } else if (oom_) {
        napi_reject_deferred(env, deferred_, Napi::Error::New(env, "out of memory assembling the walk").Value());
      } else {
        napi_resolve_deferred(env, deferred_, ResultObject(env, result_));
      }
    } catch (const Napi::Error& e) {
      napi_reject_deferred(env, deferred_, e.Value());
    }
    result_ = WalkResult();
  }

  static void OnCallJs(napi_env env, napi_value, void* context, void*) {
    if (env == nullptr) return;  // env is going away; the promise can no longer be observed
    try {
      Napi::HandleScope scope(env);
      static_cast<WalkJob*>(context)->Settle(Napi::Env(env));
    } catch (...) {
    }
  }

  static void OnFinalize(napi_env, void* data, void* context) {
    auto* holder = static_cast<std::shared_ptr<WalkJob>*>(data);
    WalkJob* job = static_cast<WalkJob*>(context);
    job->Cancel();
    {
      // After this no worker touches the tsfn.
      std::unique_lock<std::mutex> lock(job->mu_);
      job->finalized_ = true;
      job->cv_.wait(lock, [job] { return !job->in_flight_; });
    }
    if (job->state_) {
      std::lock_guard<std::mutex> lock(job->state_->mu);
      auto& v = job->state_->jobs;
      for (size_t i = 0; i < v.size(); i++) {
        auto sp = v[i].lock();
        if (!sp || sp.get() == job) {
          v[i] = v.back();
          v.pop_back();
          i--;
        }
      }
    }
    delete holder;
  }

  std::atomic<bool> cancel_{false};
  TreeWalk walk_;
  WalkResult result_;
  bool oom_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool in_flight_ = false;
  bool finalized_ = false;
  napi_deferred deferred_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  std::shared_ptr<WalkEnv> state_;
};

size_t GetThreads(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, "threads must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 1 && d <= static_cast<double>(Pool::kMaxThreads)) || d != static_cast<double>(static_cast<size_t>(d))) {
    throw Napi::RangeError::New(env, "threads must be 1..64");
  }
  return static_cast<size_t>(d);
}

// walkTree(root: Buffer, threads: number): Promise<RawWalkResult>
Napi::Value WalkTreeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string root = GetPath(env, info[0], "root");
  const size_t threads = GetThreads(env, info[1]);
  auto* state = static_cast<std::shared_ptr<WalkEnv>*>(info.Data());
  auto job = std::make_shared<WalkJob>(std::move(root));
  return job->Start(env, *state, threads);
}

// walkTreeSync(root: Buffer, threads: number): RawWalkResult. The calling thread walks too; the
// pool's threads help when they are free, and a walk never waits for them to start.
Napi::Value WalkTreeSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string root = GetPath(env, info[0], "root");
  const size_t threads = GetThreads(env, info[1]);
  auto walk = std::make_shared<TreeWalk>(std::move(root), nullptr);
  if (threads > 1) {
    Pool::Get().Ensure(threads - 1);
    for (size_t r = 1; r < threads; r++) Pool::Get().Submit([walk] { walk->Work(); });
  }
  walk->Work();
  if (walk->error().err != 0) throw WalkErrorObject(env, walk->error());
  WalkResult result;
  walk->Assemble(&result);
  return ResultObject(env, result);
}

}  // namespace

void InitWalk(Napi::Env env, Napi::Object exports) {
  auto* state = new std::shared_ptr<WalkEnv>(std::make_shared<WalkEnv>());
  // Registered after InitBatch's hook, so it runs before it (hooks run in reverse order): walks
  // are cancelled before the pool is joined. The hook owns `state`; no call comes after it.
  napi_add_env_cleanup_hook(
      env,
      [](void* arg) {
        auto* st = static_cast<std::shared_ptr<WalkEnv>*>(arg);
        std::vector<std::shared_ptr<WalkJob>> live;
        {
          std::lock_guard<std::mutex> lock((*st)->mu);
          (*st)->closing = true;
          for (auto& w : (*st)->jobs) {
            if (auto j = w.lock()) live.push_back(j);
          }
        }
        for (auto& j : live) j->Cancel();
        delete st;
      },
      state);
  exports.Set("walkTree", Napi::Function::New(env, WalkTreeAsync, "walkTree", state));
  exports.Set("walkTreeSync", Napi::Function::New(env, WalkTreeSync, "walkTreeSync", state));
}

}  // namespace layerfs
