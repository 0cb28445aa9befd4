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

template <typename T>
const T* ViewArray(Napi::Env env, const Napi::Object& o, const char* key, napi_typedarray_type want, size_t length) {
  Napi::Value v = o.Get(key);
  napi_typedarray_type type;
  size_t n;
  void* data;
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, v, &type, &n, &data, nullptr, nullptr) != napi_ok || type != want ||
      n != length) {
    throw Napi::TypeError::New(env, std::string("against.") + key + " is not a typed array of the walk's shape");
  }
  return static_cast<const T*>(data);
}

// Borrows the arrays of a walk-shaped object (a Workspace's stat cache); valid while it lives.
WalkView ViewOf(Napi::Env env, const Napi::Object& o) {
  Napi::Value c = o.Get("count");
  if (!c.IsNumber()) throw Napi::TypeError::New(env, "against.count must be a number");
  const double d = c.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d < 4294967295.0) || d != static_cast<double>(static_cast<size_t>(d))) {
    throw Napi::RangeError::New(env, "against.count is out of range");
  }
  WalkView v{};
  v.count = static_cast<size_t>(d);
  v.name_offsets = ViewArray<uint32_t>(env, o, "nameOffsets", napi_uint32_array, v.count + 1);
  v.parent = ViewArray<int32_t>(env, o, "parent", napi_int32_array, v.count);
  v.kind = ViewArray<uint8_t>(env, o, "kind", napi_uint8_array, v.count);
  v.mode = ViewArray<uint32_t>(env, o, "mode", napi_uint32_array, v.count);
  v.ino = ViewArray<uint64_t>(env, o, "ino", napi_biguint64_array, v.count);
  v.size = ViewArray<int64_t>(env, o, "size", napi_bigint64_array, v.count);
  v.mtime_ns = ViewArray<int64_t>(env, o, "mtimeNs", napi_bigint64_array, v.count);
  v.ctime_ns = ViewArray<int64_t>(env, o, "ctimeNs", napi_bigint64_array, v.count);
  Napi::Value names = o.Get("names");
  if (!names.IsTypedArray() || names.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw Napi::TypeError::New(env, "against.names must be a Uint8Array");
  }
  auto nb = names.As<Napi::Uint8Array>();
  v.names = reinterpret_cast<const char*>(nb.Data());
  v.names_size = nb.ElementLength();
  if (v.count > 0 && v.name_offsets[v.count] != v.names_size) throw Napi::RangeError::New(env, "against.names does not match nameOffsets");
  return v;
}

// The walk compared with `against` (walk.h CompareWalk): {count, same: true} when nothing
// changed; {count, changed, mode, size, mtimeNs, ctimeNs} (the changed entries' new fields only)
// when only stats changed; otherwise the whole walk. Runs on the JS thread: the arrays are JS's.
Napi::Object ResultAgainst(Napi::Env env, const WalkResult& r, const Napi::Object& against) {
  const WalkView old = ViewOf(env, against);
  std::vector<uint32_t> changed;
  const WalkMatch m = CompareWalk(r, old, &changed);
  if (m == WalkMatch::kDifferent) return ResultObject(env, r);
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", Napi::Number::New(env, static_cast<double>(r.count())));
  if (m == WalkMatch::kSame) {
    o.Set("same", Napi::Boolean::New(env, true));
    return o;
  }
  const size_t k = changed.size();
  auto mode = Napi::Uint32Array::New(env, k);
  auto size = Napi::BigInt64Array::New(env, k);
  auto mtime = Napi::BigInt64Array::New(env, k);
  auto ctime = Napi::BigInt64Array::New(env, k);
  for (size_t j = 0; j < k; j++) {
    const uint32_t i = changed[j];
    mode[j] = r.mode[i];
    size[j] = r.size[i];
    mtime[j] = r.mtime_ns[i];
    ctime[j] = r.ctime_ns[i];
  }
  o.Set("changed", CopyArray(env, changed));
  o.Set("mode", mode);
  o.Set("size", size);
  o.Set("mtimeNs", mtime);
  o.Set("ctimeNs", ctime);
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

  Napi::Value Start(Napi::Env env, std::shared_ptr<WalkEnv> state, size_t threads, Napi::Value against) {
    napi_value promise;
    if (against.IsObject()) {
      ViewOf(env, against.As<Napi::Object>());  // check its shape now, not after the walk
      NAPI_THROW_IF_FAILED(env, napi_create_reference(env, against, 1, &against_), Napi::Value());
    }
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
      } else if (against_ != nullptr) {
        napi_value against;
        NAPI_THROW_IF_FAILED_VOID(env, napi_get_reference_value(env, against_, &against));
        napi_resolve_deferred(env, deferred_, ResultAgainst(env, result_, Napi::Object(env, against)));
      } else {
        napi_resolve_deferred(env, deferred_, ResultObject(env, result_));
      }
    } catch (const Napi::Error& e) {
      napi_reject_deferred(env, deferred_, e.Value());
    }
    if (against_ != nullptr) {
      napi_delete_reference(env, against_);
      against_ = nullptr;
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
  // The cache to compare with (walkTree's third argument), released on the JS thread in Settle;
  // if the env goes away first it is left to the env's teardown.
  napi_ref against_ = nullptr;
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

// walkTree(root: Buffer, threads: number, against?: walk-shaped object): Promise<RawWalkResult | RawWalkAgainst>
Napi::Value WalkTreeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string root = GetPath(env, info[0], "root");
  const size_t threads = GetThreads(env, info[1]);
  auto* state = static_cast<std::shared_ptr<WalkEnv>*>(info.Data());
  auto job = std::make_shared<WalkJob>(std::move(root));
  return job->Start(env, *state, threads, info[2]);
}

// walkTreeSync(root: Buffer, threads: number, against?): RawWalkResult | RawWalkAgainst. The calling thread walks too; the
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
  if (info[2].IsObject()) return ResultAgainst(env, result, info[2].As<Napi::Object>());
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
