// hashBuffers / scanPaths: items run on the process-wide Pool; one thread-safe function per call
// delivers the finished batch to the JS thread, which resolves the promise. The tsfn holds the
// event loop open only while a batch is in flight, so an idle process exits promptly.
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "digest.h"
#include "napi_env.h"
#include "napi_scan_results.h"
#include "napi_util.h"
#include "pool.h"
#include "scan.h"

namespace layerfs {

namespace {

std::mutex g_env_mu;
int g_env_count = 0;

class Job : public Cancellable, public std::enable_shared_from_this<Job> {
 public:
  explicit Job(size_t count) : count_(count) {}
  virtual ~Job() = default;

  // Returns the promise; the job keeps itself alive through the tsfn and the pool tasks.
  Napi::Value Start(Napi::Env env, std::shared_ptr<EnvState> state, size_t threads) {
    napi_value promise;
    NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &deferred_, &promise), Napi::Value());
    if (count_ == 0) {
      Settle(env);
      ReleaseJs();
      return Napi::Value(env, promise);
    }
    auto* holder = new std::shared_ptr<Job>(shared_from_this());
    napi_status s = napi_create_threadsafe_function(
        env, nullptr, nullptr, Napi::String::New(env, "layerfs.batch"), 0, 1, holder, OnFinalize,
        this, OnCallJs, &tsfn_);
    if (s != napi_ok) {
      delete holder;
      NAPI_THROW_IF_FAILED(env, s, Napi::Value());
    }
    env_state_ = std::move(state);
    env_state_->work.push_back(weak_from_this());
    const size_t runners = threads < count_ ? threads : count_;
    Pool::Get().Ensure(threads);
    for (size_t r = 0; r < runners; r++) {
      Pool::Get().Submit([job = shared_from_this()] { job->RunLoop(); });
    }
    return Napi::Value(env, promise);
  }

  // Runs the items on the pool without a promise: Take() waits for them on the calling (JS)
  // thread. For a caller that cannot return to the event loop (the mount daemon's serving
  // thread, inside a commit) but can do other work while the pool runs.
  void StartSync(std::shared_ptr<EnvState> state, size_t threads) {
    sync_ = true;
    env_state_ = std::move(state);
    env_state_->work.push_back(weak_from_this());
    if (count_ == 0) return;
    const size_t runners = threads < count_ ? threads : count_;
    Pool::Get().Ensure(threads);
    for (size_t r = 0; r < runners; r++) {
      Pool::Get().Submit([job = shared_from_this()] { job->RunLoop(); });
    }
  }

  // Waits until every item ran (StartSync), then builds the result; once only.
  Napi::Value Take(Napi::Env env) {
    bool cancelled;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return in_flight_ == 0 && (cancelled_ || done_.load(std::memory_order_acquire) == count_); });
      cancelled = cancelled_ && done_.load(std::memory_order_acquire) != count_;
      if (settled_) throw Napi::Error::New(env, "this batch was taken already");
      settled_ = true;
    }
    if (env_state_) env_state_->Forget(this);
    if (cancelled) {
      ReleaseJs();
      throw Napi::Error::New(env, "the batch was cancelled");
    }
    Napi::Value v = Build(env);
    ReleaseJs();
    // The handle holding this job lives until it is collected: what Build copied out goes now.
    ReleaseResults();
    return v;
  }

  // A sync job's handle was collected without Take(): stop its items and wait for them (they may
  // write into memory the JS side owned).
  void Abandon() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cancelled_ = true;
      cancel_flag_.store(true, std::memory_order_relaxed);
      cv_.wait(lock, [this] { return in_flight_ == 0; });
    }
    ReleaseJs();
    if (env_state_) env_state_->Forget(this);
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cancel_flag_.store(true, std::memory_order_relaxed);
  }

 protected:
  virtual void RunItem(size_t i) = 0;
  virtual Napi::Value Build(Napi::Env env) = 0;
  // Drops references to JS values; JS thread only.
  virtual void ReleaseJs() {}
  // Frees the items' results once built (Take); no runner touches them any more.
  virtual void ReleaseResults() {}

  const size_t count_;
  std::atomic<bool> cancel_flag_{false};

 private:
  void RunLoop() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (cancelled_) return;
        in_flight_++;
      }
      const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i < count_) {
        RunItem(i);
        if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_ && !sync_) {
          // Still counted in flight here, so a concurrent teardown waits before freeing the tsfn.
          napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
          napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        in_flight_--;
      }
      cv_.notify_all();
      if (i >= count_) return;
    }
  }

  void Settle(Napi::Env env) {
    if (settled_) return;
    settled_ = true;
    try {
      Napi::Value v = Build(env);
      napi_resolve_deferred(env, deferred_, v);
    } catch (const Napi::Error& e) {
      napi_reject_deferred(env, deferred_, e.Value());
    } catch (const std::bad_alloc&) {
      napi_value msg, err;
      if (napi_create_string_utf8(env, "out of memory building batch results", NAPI_AUTO_LENGTH, &msg) == napi_ok &&
          napi_create_error(env, nullptr, msg, &err) == napi_ok) {
        napi_reject_deferred(env, deferred_, err);
      }
    }
  }

  static void OnCallJs(napi_env env, napi_value, void* context, void*) {
    if (env == nullptr) return;  // env is going away; the promise can no longer be observed
    // Node-API calls fail while a worker is being terminated; nothing may escape a C callback.
    try {
      Napi::HandleScope scope(env);
      static_cast<Job*>(context)->Settle(Napi::Env(env));
    } catch (...) {
    }
  }

  static void OnFinalize(napi_env, void* data, void* context) {
    auto* holder = static_cast<std::shared_ptr<Job>*>(data);
    Job* job = static_cast<Job*>(context);
    {
      std::unique_lock<std::mutex> lock(job->mu_);
      job->cancelled_ = true;
      job->cancel_flag_.store(true, std::memory_order_relaxed);
      job->cv_.wait(lock, [job] { return job->in_flight_ == 0; });
    }
    job->ReleaseJs();
    if (job->env_state_) job->env_state_->Forget(job);
    delete holder;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  size_t in_flight_ = 0;
  bool cancelled_ = false;
  bool settled_ = false;
  bool sync_ = false;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> done_{0};
  napi_deferred deferred_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  std::shared_ptr<EnvState> env_state_;
};

struct BatchOptions {
  size_t threads;
  ScanOptions scan;
};

BatchOptions GetBatchOptions(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, "options must be an object");
  auto o = v.As<Napi::Object>();
  BatchOptions b;
  const uint32_t threads = GetU32Field(env, o, "threads");
  if (threads < 1 || threads > Pool::kMaxThreads) {
    throw Napi::RangeError::New(env, "threads must be 1..64");
  }
  b.threads = threads;
  b.scan.digest.cdc = GetParams(env, o.Get("params"));
  Napi::Value t = o.Get("smallFileThreshold");
  if (!t.IsNumber()) throw Napi::TypeError::New(env, "smallFileThreshold must be a number");
  const double td = t.As<Napi::Number>().DoubleValue();
  if (!(td >= 0 && td <= 9007199254740991.0)) {
    throw Napi::RangeError::New(env, "smallFileThreshold out of range");
  }
  b.scan.digest.small_threshold = static_cast<uint64_t>(td);
  b.scan.read_data = o.Get("readData").ToBoolean().Value();
  // Both optional here (older callers omit them): no limit, and oversize files digested.
  Napi::Value m = o.Get("maxDataSize");
  if (!m.IsUndefined()) {
    if (!m.IsNumber()) throw Napi::TypeError::New(env, "maxDataSize must be a number");
    const double md = m.As<Napi::Number>().DoubleValue();
    if (!(md >= 0 && md <= 9007199254740991.0)) throw Napi::RangeError::New(env, "maxDataSize out of range");
    b.scan.max_data_size = static_cast<uint64_t>(md);
  }
  Napi::Value mb = o.Get("maxBatchData");
  if (!mb.IsUndefined()) {
    if (!mb.IsNumber()) throw Napi::TypeError::New(env, "maxBatchData must be a number");
    const double x = mb.As<Napi::Number>().DoubleValue();
    if (!(x >= 0 && x <= 9007199254740991.0)) throw Napi::RangeError::New(env, "maxBatchData out of range");
    b.scan.max_batch_data = static_cast<uint64_t>(x);
  }
  Napi::Value arena = o.Get("dataArena");
  if (!arena.IsUndefined()) {
    Bytes a = GetBytes(env, arena, "dataArena");
    b.scan.arena = const_cast<uint8_t*>(a.data);
    b.scan.arena_size = a.size;
  }
  Napi::Value dov = o.Get("digestOversize");
  b.scan.digest_oversize = dov.IsUndefined() || dov.ToBoolean().Value();
  b.scan.xattrs = o.Get("xattrs").ToBoolean().Value();
  const uint32_t retries = GetU32Field(env, o, "retries");
  b.scan.retries = retries > 100 ? 100 : static_cast<int>(retries);
  return b;
}

Napi::Object DigestObject(Napi::Env env, Digest& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("chunked", Napi::Boolean::New(env, d.chunked));
  o.Set("contentId", Napi::Buffer<uint8_t>::Copy(env, d.content_id, 32));
  o.Set("chunkLengths", CopyU32(env, d.lengths.data(), d.lengths.size()));
  if (d.ids.empty()) {
    o.Set("chunkIds", Napi::Buffer<uint8_t>::New(env, 0));
  } else {
    auto* ids = new std::vector<uint8_t>(std::move(d.ids));
    o.Set("chunkIds", Napi::Buffer<uint8_t>::New(
                          env, ids->data(), ids->size(),
                          [](Napi::Env, uint8_t*, std::vector<uint8_t>* p) { delete p; }, ids));
  }
  return o;
}

class HashJob : public Job {
 public:
  HashJob(size_t count, const ScanOptions& opts) : Job(count), opts_(opts), results_(count) {}

  std::vector<Bytes> inputs;
  std::vector<Napi::Reference<Napi::Value>> refs;

 protected:
  void RunItem(size_t i) override {
    if (cancel_flag_.load(std::memory_order_relaxed)) return;
    DigestBuffer(opts_.digest, inputs[i].data, inputs[i].size, &results_[i]);
  }

  Napi::Value Build(Napi::Env env) override {
    Napi::Array out = Napi::Array::New(env, count_);
    for (size_t i = 0; i < count_; i++) {
      Napi::Object o = DigestObject(env, results_[i]);
      o.Set("length", Napi::Number::New(env, static_cast<double>(inputs[i].size)));
      out.Set(static_cast<uint32_t>(i), o);
    }
    return out;
  }

  void ReleaseJs() override { refs.clear(); }

 private:
  ScanOptions opts_;
  std::vector<Digest> results_;
};

class ScanJob : public Job {
 public:
  ScanJob(std::vector<std::string> paths, const ScanOptions& opts)
      : Job(paths.size()), paths_(std::move(paths)), opts_(opts), results_(paths_.size()) {}

 protected:
  void RunItem(size_t i) override {
    results_[i].reset(new ScanResult());
    ScanPath(paths_[i], opts_, &cancel_flag_, &batch_data_, results_[i].get());
  }

  Napi::Value Build(Napi::Env env) override { return ScanResultsObject(env, results_, opts_.xattrs); }
  void ReleaseJs() override { arena_ref.Reset(); }
  void ReleaseResults() override {
    std::vector<std::unique_ptr<ScanResult>>().swap(results_);
    std::vector<std::string>().swap(paths_);
  }

 public:
  Napi::Reference<Napi::Value> arena_ref;

 private:
  std::vector<std::string> paths_;
  ScanOptions opts_;
  std::atomic<uint64_t> batch_data_{0};
  std::vector<std::unique_ptr<ScanResult>> results_;
};

// hashBuffers(buffers: Uint8Array[], options)
Napi::Value HashBuffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "buffers must be an array");
  auto arr = info[0].As<Napi::Array>();
  const BatchOptions opts = GetBatchOptions(env, info[1]);
  const size_t n = arr.Length();
  auto job = std::make_shared<HashJob>(n, opts.scan);
  job->inputs.reserve(n);
  job->refs.reserve(n);
  for (size_t i = 0; i < n; i++) {
    Napi::Value v = arr.Get(static_cast<uint32_t>(i));
    job->inputs.push_back(GetBytes(env, v, "buffers[i]"));
    // Keeps the memory alive (and unmoved) while workers read it.
    job->refs.push_back(Napi::Reference<Napi::Value>::New(v, 1));
  }
  return job->Start(env, StateOf(env), opts.threads);
}

// The scan job of scanPaths(paths: Buffer[], options) and scanPathsStart; `threads` gets the
// options' thread count.
std::shared_ptr<ScanJob> NewScanJob(const Napi::CallbackInfo& info, size_t* threads) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "paths must be an array");
  auto arr = info[0].As<Napi::Array>();
  const BatchOptions opts = GetBatchOptions(env, info[1]);
  std::vector<std::string> paths;
  paths.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) paths.push_back(GetPath(env, arr.Get(i), "paths[i]"));
  auto job = std::make_shared<ScanJob>(std::move(paths), opts.scan);
  // Keeps the arena alive (and unmoved) while workers write into it.
  if (opts.scan.arena) job->arena_ref = Napi::Reference<Napi::Value>::New(info[1].As<Napi::Object>().Get("dataArena"), 1);
  *threads = opts.threads;
  return job;
}

// scanPaths(paths: Buffer[], options)
Napi::Value ScanPaths(const Napi::CallbackInfo& info) {
  size_t threads = 1;
  auto job = NewScanJob(info, &threads);
  return job->Start(info.Env(), StateOf(info.Env()), threads);
}

// scanPathsStart(paths: Buffer[], options) → handle: scanPaths on the pool, taken with
// scanPathsTake(handle), which waits for it on this thread and returns what scanPaths resolves to.
Napi::Value ScanPathsStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t threads = 1;
  auto job = NewScanJob(info, &threads);
  auto* holder = new std::shared_ptr<ScanJob>(job);
  auto handle = Napi::External<std::shared_ptr<ScanJob>>::New(env, holder, [](Napi::Env, std::shared_ptr<ScanJob>* h) {
    (*h)->Abandon();
    delete h;
  });
  job->StartSync(StateOf(env), threads);
  return handle;
}

Napi::Value ScanPathsTake(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsExternal()) throw Napi::TypeError::New(env, "handle must come from scanPathsStart");
  return (*info[0].As<Napi::External<std::shared_ptr<ScanJob>>>().Data())->Take(env);
}

void OnEnvCleanup(void*) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(g_env_mu);
    last = --g_env_count == 0;
  }
  // Jobs of this env are cancelled and waited for by their tsfn finalizers; joining is only
  // safe once no env can submit more work.
  if (last) Pool::Get().Shutdown();
}

}  // namespace

std::shared_ptr<EnvState>& StateOf(Napi::Env env) {
  return *env.GetInstanceData<std::shared_ptr<EnvState>>();
}

void InitBatch(Napi::Env env, Napi::Object exports) {
  auto shared = std::make_shared<EnvState>();
  env.SetInstanceData<std::shared_ptr<EnvState>>(new std::shared_ptr<EnvState>(shared));
  {
    std::lock_guard<std::mutex> lock(g_env_mu);
    g_env_count++;
  }
  // The hook owns its own reference: instance data may be finalized before it runs.
  napi_add_env_cleanup_hook(
      env,
      [](void* arg) {
        auto* st = static_cast<std::shared_ptr<EnvState>*>(arg);
        (*st)->closing = true;
        for (auto& w : (*st)->work) {
          if (auto j = w.lock()) j->Cancel();
        }
        delete st;
        OnEnvCleanup(nullptr);
      },
      new std::shared_ptr<EnvState>(shared));
  exports.Set("hashBuffers", Napi::Function::New<HashBuffers>(env, "hashBuffers"));
  exports.Set("scanPaths", Napi::Function::New<ScanPaths>(env, "scanPaths"));
  exports.Set("scanPathsStart", Napi::Function::New<ScanPathsStart>(env, "scanPathsStart"));
  exports.Set("scanPathsTake", Napi::Function::New<ScanPathsTake>(env, "scanPathsTake"));
  exports.Set("defaultThreads",
              Napi::Number::New(env, static_cast<double>(Pool::DefaultThreads())));
}

}  // namespace layerfs
