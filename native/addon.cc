// Module entry: registers every binding and reports how BLAKE3 will dispatch.
#include <atomic>
#include <mutex>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "blake3.h"
#include "clock.h"
#include "napi_util.h"

extern "C" size_t blake3_simd_degree(void);  // internal to the BLAKE3 C sources, but exported

namespace layerfs {

namespace {

constexpr char kAddonVersion[] = "1.0.0";

// Mirrors blake3_dispatch.c's choice: it picks the widest SIMD the CPU and OS allow.
const char* SimdName() {
  const size_t degree = blake3_simd_degree();
#if defined(__x86_64__) || defined(_M_X64)
  if (degree >= 16) return "avx512";
  if (degree >= 8) return "avx2";
  if (degree >= 4) return __builtin_cpu_supports("sse4.1") ? "sse41" : "sse2";
#else
  if (degree >= 4) return "neon";
#endif
  return "portable";
}

// mallocTrim() → whether memory went back to the system. glibc keeps freed heap memory resident
// (and raises its mmap threshold as mapped blocks are freed, so later large Buffers come from the
// heap too); a long commit calls this between batches so what its collected Buffers used does not
// stay resident. Fixing the threshold at 128 KiB instead cost a small commit half again its CPU
// (every large Buffer a fresh mapping). No-op without glibc.
Napi::Value MallocTrim(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  return Napi::Boolean::New(info.Env(), malloc_trim(0) != 0);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

// mallocTrimSoon() → whether a trim was started: MallocTrim on a thread of its own, so the caller
// (a commit's main thread, between batches) does not wait the milliseconds it takes to return a
// large heap's free pages; false while the last one still runs, or without glibc. The trim holds
// each arena's lock in turn, so the caller's own mallocs wait only while its arena is trimmed.
// TrimSoon is its body, also started when the last stream of mallocStreamHeap ends.
#if defined(__GLIBC__)
bool TrimSoon() {
  static std::atomic<bool> running{false};
  if (running.exchange(true)) return false;
  try {
    std::thread([] {
      malloc_trim(0);
      running.store(false);
    }).detach();
  } catch (const std::system_error&) {
    // No thread to be had: trimmed here instead.
    malloc_trim(0);
    running.store(false);
  }
  return true;
}
#endif

Napi::Value MallocTrimSoon(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  return Napi::Boolean::New(info.Env(), TrimSoon());
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

// The threshold this process fixed (0: never), for any thread to see (mallocStreamHeap).
std::atomic<int> g_malloc_threshold{0};

// mallocStreamHeap: the threshold while large files stream into the Store, and how many do.
constexpr int kStreamThreshold = 2 << 20;
std::mutex g_stream_mu;
int g_streams = 0;

// mallocTune(mmapThreshold, arenaMax): a long-lived process (the mount daemon) fixes glibc's
// mmap threshold (blocks at least this large are mapped and unmapped, so a freed row or write
// buffer goes back to the system at once, instead of the threshold rising to the largest block
// freed so far and such blocks filling the arenas) and caps the arenas its threads allocate in.
// Call before threads start. True when both took effect.
Napi::Value MallocTune(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  const int threshold = info[0].As<Napi::Number>().Int32Value();
  const int arenas = info[1].As<Napi::Number>().Int32Value();
  const bool ok = mallopt(M_MMAP_THRESHOLD, threshold) == 1 && mallopt(M_ARENA_MAX, arenas) == 1;
  if (ok) g_malloc_threshold.store(threshold);
  return Napi::Boolean::New(info.Env(), ok);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

// mallocStreamHeap(on): a large file starts (true) or ends (false) streaming into the Store. While
// any does, in a process that fixed the mmap threshold, the threshold is kStreamThreshold: a
// chunk row is 1 MiB, and SQLite's two 1 MiB blocks per row (the bound copy and the record) were
// otherwise mapped, faulted in page by page and unmapped, row after row. Counted, so streams on
// several threads nest; when the last ends, the heap's free pages are trimmed on a thread of
// their own (mallocTrimSoon). True when the process had fixed the threshold.
Napi::Value MallocStreamHeap(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  const bool on = info[0].ToBoolean().Value();
  const int base = g_malloc_threshold.load();
  if (base == 0) return Napi::Boolean::New(info.Env(), false);
  std::lock_guard<std::mutex> lock(g_stream_mu);
  if (on) {
    if (g_streams++ == 0) mallopt(M_MMAP_THRESHOLD, kStreamThreshold);
  } else if (g_streams > 0 && --g_streams == 0) {
    mallopt(M_MMAP_THRESHOLD, base);
    // The rows' blocks freed meanwhile sit in the heap, below the threshold now: given back.
    TrimSoon();
  }
  return Napi::Boolean::New(info.Env(), true);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

// mallocStats() → { arena, mmap, inUse, free } bytes of glibc's heap (mallinfo2: the arenas'
// main heaps, blocks mapped on their own, bytes allocated, bytes free in the arenas); null
// without glibc. The mount daemon logs it while a commit runs when asked to (LAYERFS_DAEMON_MEMORY).
Napi::Value MallocStats(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = mallinfo2();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("arena", static_cast<double>(m.arena));
  o.Set("mmap", static_cast<double>(m.hblkhd));
  o.Set("inUse", static_cast<double>(m.uordblks));
  o.Set("free", static_cast<double>(m.fordblks));
  return o;
#else
  return info.Env().Null();
#endif
}

// realtimeNs() → the wall clock (CLOCK_REALTIME) in ns, a BigInt: the times a FUSE Workspace
// stamps on its files. Not performance.timeOrigin + performance.now(): that is the wall clock at
// the thread's start plus the monotonic clock since, which falls behind by as long as the machine
// slept (the monotonic clock stops in suspend) and misses every step of the wall clock, and the
// daemon lives for days.
Napi::Value JsRealtimeNs(const Napi::CallbackInfo& info) {
  return Napi::BigInt::New(info.Env(), layerfs::RealtimeNs());
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InitHash(env, exports);
  InitChunker(env, exports);
  InitBatch(env, exports);
  InitXattr(env, exports);
  InitFd(env, exports);
  InitWriteBehind(env, exports);
  InitFileWriter(env, exports);
  InitFdOutput(env, exports);
  InitWalk(env, exports);  // after InitBatch: its cleanup hook must run before the pool is joined
  InitStream(env, exports);
  InitZstd(env, exports);
  InitCow(env, exports);
  InitMount(env, exports);
  InitRun(env, exports);
  InitBlobs(env, exports);
  exports.Set("simd", SimdName());
  exports.Set("mallocTrim", Napi::Function::New(env, MallocTrim, "mallocTrim"));
  exports.Set("mallocTrimSoon", Napi::Function::New(env, MallocTrimSoon, "mallocTrimSoon"));
  exports.Set("mallocTune", Napi::Function::New(env, MallocTune, "mallocTune"));
  exports.Set("mallocStreamHeap", Napi::Function::New(env, MallocStreamHeap, "mallocStreamHeap"));
  exports.Set("mallocStats", Napi::Function::New(env, MallocStats, "mallocStats"));
  exports.Set("realtimeNs", Napi::Function::New(env, JsRealtimeNs, "realtimeNs"));
  exports.Set("version", kAddonVersion);
  exports.Set("blake3Version", blake3_version());
  return exports;
}

}  // namespace layerfs

static Napi::Object InitLayerfsNative(Napi::Env env, Napi::Object exports) {
  return layerfs::Init(env, exports);
}

NODE_API_MODULE(layerfs_native, InitLayerfsNative)
