// Decoding and verification of a run of stored chunks of one pack row (lib/store/chunk-run.ts):
// the work of a streamed read of a large file, done without a Buffer or a call per chunk. Each
// chunk is decoded (raw bytes, or its place in a zstd frame, each frame decoded once) into its
// place in one output buffer, then re-hashed with the chunk domain against its id, many chunks
// per SIMD pass (MultiHasher). The work is split at frame boundaries over the calling thread and
// pool threads. No Node-API here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace layerfs {

// Physical forms a run may hold (docs/FORMAT.md "Physical forms": codecs 0, 1 and 3).
constexpr uint32_t kRunRaw = 0;
constexpr uint32_t kRunZstd = 1;
// A zstd frame compressed with the Store dictionary the run is given.
constexpr uint32_t kRunDict = 3;

// A Store dictionary digested for decoding, shared by the threads of the runs that use it.
struct RunDict;

// The digested form of dictionary `data` (`size` bytes), kept while the same one comes back.
// `key`, when not empty, is the dictionary object's id, which the caller checked the bytes
// against: a held dictionary of the same id and size is the same one without comparing bytes.
// Null when zstd runs out of memory.
std::shared_ptr<const RunDict> RunDictFor(const uint8_t* data, size_t size, const std::string& key);

struct RunChunk {
  uint64_t src_off = 0;  // its stored bytes (raw: the chunk; zstd: the whole frame) in src
  uint64_t src_len = 0;
  uint32_t codec = kRunRaw;
  uint64_t at = 0;    // of the chunk in the decoded frame (0 for raw)
  uint64_t size = 0;  // canonical length
};

// Frames larger than this are not decoded (the readers' limit for any frame, 64 MiB).
constexpr size_t kRunMaxFrame = 64u << 20;

// Decodes chunk k into out at the sum of the sizes before it (out holds at least the sum of all
// sizes) and sets ok[k] = 1 when its bytes hash to ids[32k..32k+32), else 0 (a frame that does
// not decode, stored bytes outside src, or a wrong hash; its bytes in out are then unspecified).
// With out == nullptr every chunk must be raw: the stored bytes are verified where they are.
// Chunks of codec kRunDict decode with `dict` (without one they fail: ok 0).
// `threads` (1..16) threads share the work, the caller's included.
void DecodeRun(const uint8_t* src, size_t src_size, const RunChunk* chunks, size_t n,
               const uint8_t* ids, uint8_t* out, size_t out_size, uint8_t* ok, size_t threads,
               std::shared_ptr<const RunDict> dict = nullptr);

// The same work started on pool threads and waited for later, so a caller can fetch the next
// run's stored bytes meanwhile. The buffers (and `chunks`, copied) must stay valid until Wait.
class RunTask {
 public:
  RunTask(const uint8_t* src, size_t src_size, const RunChunk* chunks, size_t n, const uint8_t* ids,
          uint8_t* out, size_t out_size, uint8_t* ok, size_t threads, std::shared_ptr<const RunDict> dict = nullptr);
  ~RunTask();  // waits
  RunTask(const RunTask&) = delete;
  RunTask& operator=(const RunTask&) = delete;
  // Runs parts no pool thread has taken yet on this thread, then waits for the rest; idempotent.
  void Wait();

 private:
  struct State;
  State* state_;
};

}  // namespace layerfs
