#include "run_decode.h"

#define ZSTD_STATIC_LINKING_ONLY
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "multihash.h"
#include "objectid.h"
#include "pool.h"
#include "zstd.h"

namespace layerfs {

struct RunDict {
  std::string bytes;
  std::string key;
  ZSTD_DDict* ddict = nullptr;
  ~RunDict() { ZSTD_freeDDict(ddict); }
};

std::shared_ptr<const RunDict> RunDictFor(const uint8_t* data, size_t size, const std::string& key) {
  static std::mutex mu;
  static std::shared_ptr<const RunDict> held;
  std::lock_guard<std::mutex> lock(mu);
  if (held && held->bytes.size() == size &&
      (key.empty() ? std::memcmp(held->bytes.data(), data, size) == 0 : key == held->key)) {
    return held;
  }
  auto d = std::make_shared<RunDict>();
  d->bytes.assign(reinterpret_cast<const char*>(data), size);
  d->key = key;
  d->ddict = ZSTD_createDDict(d->bytes.data(), d->bytes.size());
  if (!d->ddict) return nullptr;
  held = d;
  return held;
}

namespace {

// A part smaller than this is not worth handing to another thread (the hand-off costs tens of µs).
constexpr uint64_t kMinPartBytes = 192u << 10;
// BLAKE3's wide kernels read up to 48 bytes past a message's last block (multihash.h): a
// message that ends closer than this to the end of its buffer is hashed on its own.
constexpr size_t kOverRead = 64;

std::string ChunkPrefix() { return std::string(kDomainChunk, sizeof(kDomainChunk)); }

// Per-thread decoder (magicless frames, docs/FORMAT.md), hasher and frame scratch.
struct ThreadState {
  ZSTD_DCtx* dctx = nullptr;
  MultiHasher hasher{ChunkPrefix()};
  DomainHasher single{std::string(kDomainChunk)};
  std::vector<uint8_t> scratch;
  std::vector<const uint8_t*> data;
  std::vector<size_t> lens;
  std::vector<size_t> which;
  std::vector<uint8_t> digests;
  ThreadState() {
    dctx = ZSTD_createDCtx();
    if (dctx && ZSTD_isError(ZSTD_DCtx_setParameter(dctx, ZSTD_d_format, ZSTD_f_zstd1_magicless))) {
      ZSTD_freeDCtx(dctx);
      dctx = nullptr;
    }
  }
  ~ThreadState() { ZSTD_freeDCtx(dctx); }
};

ThreadState& State() {
  static thread_local ThreadState s;
  return s;
}

struct Job {
  std::vector<RunChunk> own;  // a started task's copy of the chunks
  const uint8_t* src;
  size_t src_size;
  const RunChunk* chunks;
  const uint8_t* ids;
  uint8_t* out;
  size_t out_size;
  uint8_t* ok;
  std::shared_ptr<const RunDict> dict;  // for kRunDict chunks, or null
  std::vector<uint64_t> dst;     // out offset of each chunk (n + 1 entries)
  std::vector<size_t> bounds;    // parts: chunks [bounds[p], bounds[p + 1])
  std::atomic<size_t> next{0};   // the next part to take
  size_t done = 0;               // parts finished (under mu)
  std::mutex mu;
  std::condition_variable cv;
};

bool Framed(const RunChunk& c) { return c.codec == kRunZstd || c.codec == kRunDict; }

bool SameFrame(const RunChunk& a, const RunChunk& b) {
  return Framed(a) && a.codec == b.codec && a.src_off == b.src_off && a.src_len == b.src_len;
}

// ZSTD_decompressDCtx through `t`'s context, with the job's dictionary referenced for a
// kRunDict frame (and let go again afterwards).
size_t Decompress(const Job& j, const RunChunk& c, ThreadState& t, uint8_t* dst, size_t cap, const uint8_t* src) {
  if (c.codec == kRunDict) {
    const size_t r = ZSTD_DCtx_refDDict(t.dctx, j.dict->ddict);
    if (ZSTD_isError(r)) return r;
  }
  const size_t r = ZSTD_decompressDCtx(t.dctx, dst, cap, src, c.src_len);
  if (c.codec == kRunDict) ZSTD_DCtx_refDDict(t.dctx, nullptr);
  return r;
}

bool InSrc(const Job& j, const RunChunk& c) {
  return c.src_off <= j.src_size && c.src_len <= j.src_size - c.src_off;
}

// Raw chunk i: copied into out (when there is one). False when its bytes are not in src.
bool DecodeRaw(Job& j, size_t i) {
  const RunChunk& c = j.chunks[i];
  if (!InSrc(j, c) || c.src_len != c.size || c.at != 0) return false;
  // An empty run may come with no buffers at all (null pointers): nothing to copy.
  if (j.out && c.size > 0) std::memcpy(j.out + j.dst[i], j.src + c.src_off, c.size);
  return true;
}

// The frame of chunks [i, e) (one frame), decoded once: straight into out when its chunks are
// exactly the whole frame in order, else into scratch and each chunk that lies inside it copied.
// Sets ok[k] for each chunk; all 0 when the frame does not decode.
void DecodeFrame(Job& j, size_t i, size_t e, ThreadState& t) {
  for (size_t k = i; k < e; k++) j.ok[k] = 0;
  const RunChunk& c = j.chunks[i];
  if (!j.out || !t.dctx || !InSrc(j, c) || (c.codec == kRunDict && (!j.dict || !j.dict->ddict))) return;
  ZSTD_frameHeader h;
  const uint8_t* p = j.src + c.src_off;
  if (ZSTD_getFrameHeader_advanced(&h, p, c.src_len, ZSTD_f_zstd1_magicless) != 0) return;
  if (h.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || h.frameContentSize > kRunMaxFrame) return;
  const size_t fcs = static_cast<size_t>(h.frameContentSize);
  bool tiles = true;
  uint64_t expect = 0;
  for (size_t k = i; k < e; k++) {
    tiles = tiles && j.chunks[k].at == expect && j.chunks[k].size <= fcs - expect;
    if (!tiles) break;
    expect += j.chunks[k].size;
  }
  if (tiles && expect == fcs) {
    const size_t r = Decompress(j, c, t, j.out + j.dst[i], fcs, p);
    if (!ZSTD_isError(r) && r == fcs) std::memset(j.ok + i, 1, e - i);
    return;
  }
  t.scratch.resize(fcs);
  const size_t r = Decompress(j, c, t, t.scratch.data(), fcs, p);
  if (ZSTD_isError(r) || r != fcs) return;
  for (size_t k = i; k < e; k++) {
    const RunChunk& x = j.chunks[k];
    if (x.at > fcs || x.size > fcs - x.at) continue;
    if (x.size > 0) std::memcpy(j.out + j.dst[k], t.scratch.data() + x.at, x.size);
    j.ok[k] = 1;
  }
}

// Hashes the decoded chunks [b, e) (those with ok = 1) and keeps ok = 1 only where the id matches.
void Verify(Job& j, size_t b, size_t e, ThreadState& t) {
  const uint8_t* base = j.out ? j.out : j.src;
  const size_t limit = j.out ? j.out_size : j.src_size;
  t.data.clear();
  t.lens.clear();
  t.which.clear();
  for (size_t k = b; k < e; k++) {
    if (!j.ok[k]) continue;
    const size_t at = j.out ? static_cast<size_t>(j.dst[k]) : static_cast<size_t>(j.chunks[k].src_off);
    const size_t len = static_cast<size_t>(j.chunks[k].size);
    if (at + len + kOverRead > limit) {
      uint8_t d[32];
      t.single.Hash(base + at, len, d);
      j.ok[k] = std::memcmp(d, j.ids + 32 * k, 32) == 0;
      continue;
    }
    t.data.push_back(base + at);
    t.lens.push_back(len);
    t.which.push_back(k);
  }
  if (t.data.empty()) return;
  t.digests.resize(32 * t.data.size());
  t.hasher.HashAll(t.data.data(), t.lens.data(), t.data.size(), t.digests.data());
  for (size_t m = 0; m < t.which.size(); m++) {
    const size_t k = t.which[m];
    j.ok[k] = std::memcmp(t.digests.data() + 32 * m, j.ids + 32 * k, 32) == 0;
  }
}

void RunPart(Job& j, size_t part) {
  ThreadState& t = State();
  const size_t b = j.bounds[part];
  const size_t e = j.bounds[part + 1];
  for (size_t i = b; i < e;) {
    size_t f = i + 1;
    while (f < e && SameFrame(j.chunks[i], j.chunks[f])) f++;
    if (Framed(j.chunks[i])) {
      DecodeFrame(j, i, f, t);
    } else {
      f = i + 1;
      j.ok[i] = j.chunks[i].codec == kRunRaw && DecodeRaw(j, i) ? 1 : 0;
    }
    i = f;
  }
  Verify(j, b, e, t);
}

// Takes parts until none is left; returns how many this thread ran.
void Work(Job& j) {
  size_t ran = 0;
  for (;;) {
    const size_t p = j.next.fetch_add(1);
    if (p + 1 >= j.bounds.size()) break;
    RunPart(j, p);
    ran++;
  }
  if (ran == 0) return;
  std::lock_guard<std::mutex> lock(j.mu);
  j.done += ran;
  j.cv.notify_all();
}

// Part boundaries: about equal bytes, never inside a frame, none smaller than kMinPartBytes.
void Split(Job& j, size_t n, size_t threads) {
  const uint64_t total = j.dst[n];
  size_t parts = threads;
  while (parts > 1 && total / parts < kMinPartBytes) parts--;
  j.bounds.push_back(0);
  for (size_t i = 1; i < n && j.bounds.size() < parts; i++) {
    if (SameFrame(j.chunks[i - 1], j.chunks[i])) continue;
    if (j.dst[i] * parts >= total * j.bounds.size()) j.bounds.push_back(i);
  }
  j.bounds.push_back(n);
}

}  // namespace

namespace {

std::shared_ptr<Job> Prepare(const uint8_t* src, size_t src_size, const RunChunk* chunks, size_t n,
                             const uint8_t* ids, uint8_t* out, size_t out_size, uint8_t* ok, size_t threads,
                             std::shared_ptr<const RunDict> dict) {
  auto j = std::make_shared<Job>();
  j->dict = std::move(dict);
  j->src = src;
  j->src_size = src_size;
  j->chunks = chunks;
  j->ids = ids;
  j->out = out;
  j->out_size = out_size;
  j->ok = ok;
  j->dst.resize(n + 1);
  for (size_t i = 0; i < n; i++) j->dst[i + 1] = j->dst[i] + chunks[i].size;
  if (n == 0 || (out && j->dst[n] > out_size)) {
    if (n > 0) std::memset(ok, 0, n);
    j->bounds = {0, 0};  // one empty part
    return j;
  }
  Split(*j, n, threads < 1 ? 1 : (threads > 16 ? 16 : threads));
  return j;
}

// Hands `helpers` of the job's parts to pool threads. Helpers that start after every part is
// taken find nothing to do: a waiter never waits for a pool thread that has not begun (the
// pool may be busy with other work).
void Hand(const std::shared_ptr<Job>& j, size_t helpers) {
  if (helpers == 0) return;
  Pool::Get().Ensure(helpers);
  for (size_t p = 0; p < helpers; p++) Pool::Get().Submit([j] { Work(*j); });
}

void Finish(Job& j) {
  Work(j);
  const size_t parts = j.bounds.size() - 1;
  std::unique_lock<std::mutex> lock(j.mu);
  j.cv.wait(lock, [&] { return j.done >= parts; });
}

}  // namespace

void DecodeRun(const uint8_t* src, size_t src_size, const RunChunk* chunks, size_t n,
               const uint8_t* ids, uint8_t* out, size_t out_size, uint8_t* ok, size_t threads,
               std::shared_ptr<const RunDict> dict) {
  std::shared_ptr<Job> j = Prepare(src, src_size, chunks, n, ids, out, out_size, ok, threads, std::move(dict));
  Hand(j, j->bounds.size() - 2);
  Finish(*j);
}

struct RunTask::State {
  std::shared_ptr<Job> job;
  bool waited = false;
};

RunTask::RunTask(const uint8_t* src, size_t src_size, const RunChunk* chunks, size_t n, const uint8_t* ids,
                 uint8_t* out, size_t out_size, uint8_t* ok, size_t threads, std::shared_ptr<const RunDict> dict)
    : state_(new State()) {
  std::vector<RunChunk> own(chunks, chunks + n);
  state_->job = Prepare(src, src_size, own.data(), n, ids, out, out_size, ok, threads, std::move(dict));
  state_->job->own.swap(own);  // the vector's buffer moves with it: `chunks` stays valid
  Hand(state_->job, state_->job->bounds.size() - 1);
}

RunTask::~RunTask() {
  Wait();
  delete state_;
}

void RunTask::Wait() {
  if (state_->waited) return;
  Finish(*state_->job);
  state_->waited = true;
}

}  // namespace layerfs
