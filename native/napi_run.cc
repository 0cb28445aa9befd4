// decodeRun: the binding of run_decode.h (lib/native/run.ts checks the shapes first).
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "napi_util.h"
#include "run_decode.h"
#include "zstd_frame.h"

namespace layerfs {

namespace {

constexpr size_t kFields = 5;  // srcOff, srcLen, codec, at, size per chunk

const double* GetF64(const Napi::Env& env, const Napi::Value& v, size_t* count) {
  napi_typedarray_type type;
  void* data;
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, v, &type, count, &data, nullptr, nullptr) != napi_ok ||
      type != napi_float64_array) {
    throw Napi::TypeError::New(env, "spec must be a Float64Array");
  }
  return static_cast<const double*>(data);
}

uint64_t Field(const Napi::Env& env, double d) {
  if (!(d >= 0 && d <= 9007199254740991.0) || std::floor(d) != d) {
    throw Napi::RangeError::New(env, "spec fields must be non-negative integers");
  }
  return static_cast<uint64_t>(d);
}

struct RunArgs {
  Bytes src;
  Bytes ids;
  Bytes out{nullptr, 0};
  Bytes ok;
  std::vector<RunChunk> chunks;
  size_t threads = 1;
  std::shared_ptr<const RunDict> dict;
};

// (src, spec, ids, out | null, ok, threads, dict?, dictKey?), checked.
RunArgs GetRunArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RunArgs a;
  a.src = GetBytes(env, info[0], "src");
  size_t count = 0;
  const double* spec = GetF64(env, info[1], &count);
  if (count % kFields != 0) throw Napi::RangeError::New(env, "spec must hold 5 numbers per chunk");
  const size_t n = count / kFields;
  a.ids = GetBytes(env, info[2], "ids");
  if (a.ids.size < 32 * n) throw Napi::RangeError::New(env, "ids must hold 32 bytes per chunk");
  if (!info[3].IsNull() && !info[3].IsUndefined()) a.out = GetBytes(env, info[3], "out");
  a.ok = GetBytes(env, info[4], "ok");
  if (a.ok.size < n) throw Napi::RangeError::New(env, "ok must hold a byte per chunk");
  if (!info[5].IsNumber()) throw Napi::TypeError::New(env, "threads must be a number");
  const double threads = info[5].As<Napi::Number>().DoubleValue();
  a.threads = threads >= 1 && threads <= 16 ? static_cast<size_t>(threads) : 1;
  if (info.Length() > 6 && !info[6].IsUndefined() && !info[6].IsNull()) {
    Bytes dict = GetBytes(env, info[6], "dict");
    a.dict = RunDictFor(dict.data, dict.size, DictKey(info, 7));
    if (!a.dict) throw Napi::Error::New(env, "zstd: out of memory");
  }
  a.chunks.resize(n);
  for (size_t i = 0; i < n; i++) {
    const double* f = spec + kFields * i;
    a.chunks[i] = RunChunk{Field(env, f[0]), Field(env, f[1]), static_cast<uint32_t>(Field(env, f[2])), Field(env, f[3]), Field(env, f[4])};
    const uint32_t codec = a.chunks[i].codec;
    if (codec != kRunRaw && codec != kRunZstd && codec != kRunDict) throw Napi::RangeError::New(env, "codec must be 0 (raw), 1 (zstd) or 3 (zstd with the dictionary)");
    if (codec == kRunDict && !a.dict) throw Napi::RangeError::New(env, "dictionary chunks need the dictionary");
    if (!a.out.data && a.chunks[i].codec != kRunRaw) throw Napi::RangeError::New(env, "zstd chunks need an output buffer");
  }
  return a;
}

// decodeRun(src, spec, ids, out | null, ok, threads)
Napi::Value DecodeRunJs(const Napi::CallbackInfo& info) {
  RunArgs a = GetRunArgs(info);
  DecodeRun(a.src.data, a.src.size, a.chunks.data(), a.chunks.size(), a.ids.data, const_cast<uint8_t*>(a.out.data),
            a.out.size, const_cast<uint8_t*>(a.ok.data), a.threads, a.dict);
  return info.Env().Undefined();
}

// RunTaskJs wrappers not yet collected and finalized, in the process (runTasksAlive(): tests
// check that a thread answering requests in a synchronous loop lets its finalizers run).
std::atomic<int64_t> g_run_tasks_alive{0};

// new RunTaskJs(src, spec, ids, out | null, ok, threads): the work started on pool threads; wait()
// finishes it. The buffers are held until then (a task never waited for is waited for when it
// is collected, before they are let go). wait() frees the task's native state too, not the
// finalizer: a wrapper promoted to the old generation is collected only at the next full
// collection, and its finalizer runs only at its thread's next event-loop turn
// (lib/fuse/loop-turns.ts), while a mount daemon's reader thread starts a task per stretch of
// every READ (the daemon grew ~3.5 MiB per GiB read while the tasks waited for both).
class RunTaskJs : public Napi::ObjectWrap<RunTaskJs> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "RunTask", {InstanceMethod<&RunTaskJs::Wait>("wait")});
  }

  explicit RunTaskJs(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RunTaskJs>(info) {
    RunArgs a = GetRunArgs(info);
    g_run_tasks_alive.fetch_add(1, std::memory_order_relaxed);
    for (size_t i : {0, 2, 3, 4}) {
      if (info[i].IsObject()) held_.push_back(Napi::Persistent(info[i].As<Napi::Object>()));
    }
    task_ = std::make_unique<RunTask>(a.src.data, a.src.size, a.chunks.data(), a.chunks.size(), a.ids.data,
                                      const_cast<uint8_t*>(a.out.data), a.out.size, const_cast<uint8_t*>(a.ok.data), a.threads, a.dict);
  }

  ~RunTaskJs() override {
    task_.reset();  // waits (unless wait() did), then the buffers are let go
    g_run_tasks_alive.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  Napi::Value Wait(const Napi::CallbackInfo& info) {
    task_.reset();  // waits, as often as wait() is called
    for (auto& r : held_) r.Reset();
    held_.clear();
    return info.Env().Undefined();
  }

  std::unique_ptr<RunTask> task_;
  std::vector<Napi::ObjectReference> held_;
};

}  // namespace

Napi::Value RunTasksAliveJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(g_run_tasks_alive.load(std::memory_order_relaxed)));
}

void InitRun(Napi::Env env, Napi::Object exports) {
  exports.Set("decodeRun", Napi::Function::New(env, DecodeRunJs, "decodeRun"));
  exports.Set("runTasksAlive", Napi::Function::New(env, RunTasksAliveJs, "runTasksAlive"));
  exports.Set("RunTask", RunTaskJs::Define(env));
}

}  // namespace layerfs
