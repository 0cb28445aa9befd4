// Node-API surface of the copy-on-write core (native/cow.h), wrapped by lib/native/cow.ts.
// Offsets cross as doubles: callers check they are safe integers.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cow.h"
#include "multihash.h"
#include "napi_util.h"
#include "objectid.h"
#include "pool.h"

namespace layerfs {

namespace {

constexpr double kMaxOffset = 9007199254740991.0;  // 2^53 - 1

uint64_t GetOffset(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= kMaxOffset) || d != std::floor(d)) {
    throw Napi::RangeError::New(env, std::string(what) + " must be a safe non-negative integer");
  }
  return static_cast<uint64_t>(d);
}

double ToJs(uint64_t v) { return v == kCowToEnd ? INFINITY : static_cast<double>(v); }

// Chunks emitted by the re-chunk, gathered back to back and hashed on the addon's pool a batch
// at a time while the chunker goes on into the other batch; JavaScript gets each batch once its
// ids are known (one call per batch: the bytes as a Buffer it may read only during the call,
// [offset, start, length] per chunk, and the ids). The batch buffers are allocated once per
// re-chunk: no Buffer per chunk, so a large commit leaves no garbage behind for V8 to find.
constexpr size_t kHashBatch = 2u << 20;
// A batch this small (the end of a small edit) is hashed on the calling thread: a hand-over to
// the pool would cost more than the hashing.
constexpr size_t kInlineHash = 256u << 10;
// Bytes hashed per pool task.
constexpr size_t kHashTask = 512u << 10;
// BLAKE3's wide kernels read up to 48 bytes past a message's last block (multihash.h).
constexpr size_t kSlack = 64;

MultiHasher& ChunkHasher() {
  static thread_local MultiHasher mh(std::string(kDomainChunk, sizeof(kDomainChunk)));  // tag and its NUL
  return mh;
}

struct HashWait {
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
};

struct ChunkBatch {
  Napi::Buffer<uint8_t> bytes;
  size_t used = 0;
  std::vector<double> table;  // offset, start, length per chunk
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  std::vector<uint8_t> ids;
  std::shared_ptr<HashWait> wait = std::make_shared<HashWait>();
  bool hashing = false;

  size_t count() const { return lens.size(); }
  void Clear() {
    used = 0;
    table.clear();
    ptrs.clear();
    lens.clear();
    hashing = false;
  }
  // Hashes chunks [from, to) into ids.
  static void HashRange(const uint8_t* const* ptrs, const size_t* lens, size_t n, uint8_t* out) {
    ChunkHasher().HashAll(ptrs, lens, n, out);
  }
  void Start(bool inline_hash) {
    ids.resize(32 * count());
    if (count() == 0) return;
    if (inline_hash || used <= kInlineHash) {
      HashRange(ptrs.data(), lens.data(), count(), ids.data());
      return;
    }
    Pool& pool = Pool::Get();
    pool.Ensure(Pool::DefaultThreads());
    hashing = true;
    // Contiguous runs of chunks of about kHashTask bytes each.
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t i = 0, from = 0, bytes = 0; i < count(); i++) {
      bytes += lens[i];
      if (bytes >= kHashTask || i + 1 == count()) {
        runs.emplace_back(from, i + 1);
        from = i + 1;
        bytes = 0;
      }
    }
    wait->pending = runs.size();
    for (const auto& [from, to] : runs) {
      pool.Submit([w = wait, p = ptrs.data() + from, l = lens.data() + from, n = to - from, out = ids.data() + 32 * from] {
        HashRange(p, l, n, out);
        std::lock_guard<std::mutex> lock(w->mu);
        if (--w->pending == 0) w->cv.notify_all();
      });
    }
  }
  void Finish() {
    if (!hashing) return;
    std::unique_lock<std::mutex> lock(wait->mu);
    wait->cv.wait(lock, [this] { return wait->pending == 0; });
    hashing = false;
  }
};

// The re-chunk's needs, answered by JavaScript callbacks; a callback that throws stops the
// re-chunk and the exception reaches the caller unchanged.
class JsRechunkIo : public RechunkIo {
 public:
  JsRechunkIo(Napi::Env env, Napi::Object io, size_t piece, size_t max_chunk)
      : env_(env),
        chunk_start_(GetFn(env, io, "chunkStart")),
        read_(GetFn(env, io, "read")),
        emit_(GetFn(env, io, "emit")),
        replace_(GetFn(env, io, "replace")),
        piece_(Napi::Buffer<uint8_t>::New(env, piece)),
        cap_(kHashBatch + max_chunk) {}

  // A batch's pool tasks may still read its buffer when a callback threw.
  ~JsRechunkIo() override {
    for (ChunkBatch& b : batches_) b.Finish();
  }

  uint64_t OldChunkStart(uint64_t x) override {
    Napi::Value r = chunk_start_.Call({Napi::Number::New(env_, static_cast<double>(x))});
    const uint64_t start = GetOffset(env_, r, "chunkStart()");
    if (start > x) throw Napi::RangeError::New(env_, "chunkStart() returned a start past its offset");
    return start;
  }

  void Read(uint64_t pos, uint8_t* dst, size_t len) override {
    read_.Call({Napi::Number::New(env_, static_cast<double>(pos)), Napi::Number::New(env_, static_cast<double>(len)), piece_});
    std::copy(piece_.Data(), piece_.Data() + len, dst);
  }

  void Emit(uint64_t offset, const uint8_t* data, size_t len) override {
    ChunkBatch* b = &batches_[cur_];
    if (b->bytes.IsEmpty()) b->bytes = Napi::Buffer<uint8_t>::New(env_, cap_ + kSlack);
    if (b->used + len > cap_) {
      Rotate();
      b = &batches_[cur_];
      if (b->bytes.IsEmpty()) b->bytes = Napi::Buffer<uint8_t>::New(env_, cap_ + kSlack);
    }
    uint8_t* at = b->bytes.Data() + b->used;
    std::memcpy(at, data, len);
    b->table.push_back(static_cast<double>(offset));
    b->table.push_back(static_cast<double>(b->used));
    b->table.push_back(static_cast<double>(len));
    b->ptrs.push_back(at);
    b->lens.push_back(len);
    b->used += len;
    if (b->used >= kHashBatch) Rotate();
  }

  void Replace(uint64_t from, uint64_t to, size_t chunks) override {
    Flush();
    replace_.Call({Napi::Number::New(env_, static_cast<double>(from)), Napi::Number::New(env_, static_cast<double>(to)),
                   Napi::Number::New(env_, static_cast<double>(chunks))});
  }

  // Hands every chunk emitted so far to JavaScript, in order.
  void Flush() {
    ChunkBatch& older = batches_[cur_ ^ 1];
    ChunkBatch& cur = batches_[cur_];
    if (older.count() > 0) Deliver(older);
    if (cur.count() > 0) {
      cur.Start(true);
      Deliver(cur);
    }
  }

 private:
  // The current batch is full: its hashing starts, the older one is delivered, and the chunker
  // goes on into that one.
  void Rotate() {
    ChunkBatch& cur = batches_[cur_];
    ChunkBatch& older = batches_[cur_ ^ 1];
    cur.Start(false);
    if (older.count() > 0) Deliver(older);
    cur_ ^= 1;
  }

  void Deliver(ChunkBatch& b) {
    b.Finish();
    Napi::Float64Array table = Napi::Float64Array::New(env_, b.table.size());
    std::copy(b.table.begin(), b.table.end(), table.Data());
    Napi::Buffer<uint8_t> ids = Napi::Buffer<uint8_t>::Copy(env_, b.ids.data(), b.ids.size());
    b.Clear();
    emit_.Call({b.bytes, table, ids});
  }

  static Napi::Function GetFn(Napi::Env env, Napi::Object o, const char* key) {
    Napi::Value v = o.Get(key);
    if (!v.IsFunction()) throw Napi::TypeError::New(env, std::string("io.") + key + " must be a function");
    return v.As<Napi::Function>();
  }

  Napi::Env env_;
  Napi::Function chunk_start_, read_, emit_, replace_;
  Napi::Buffer<uint8_t> piece_;
  size_t cap_;
  ChunkBatch batches_[2];
  size_t cur_ = 0;
};

class CowFile : public Napi::ObjectWrap<CowFile> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "CowPages",
                       {InstanceAccessor<&CowFile::Size>("size"),
                        InstanceAccessor<&CowFile::ValidBase>("validBase"),
                        InstanceAccessor<&CowFile::DirtyPages>("dirtyPages"),
                        InstanceMethod<&CowFile::Write>("write"),
                        InstanceMethod<&CowFile::CommitWrite>("commitWrite"),
                        InstanceMethod<&CowFile::PlanRead>("planRead"),
                        InstanceMethod<&CowFile::Truncate>("truncate"),
                        InstanceMethod<&CowFile::Rebase>("rebase"),
                        InstanceMethod<&CowFile::ChangedRanges>("changedRanges"),
                        InstanceMethod<&CowFile::Rechunk>("rechunk")});
  }

  explicit CowFile(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CowFile>(info) {
    pages_.Rebase(GetOffset(info.Env(), info[0], "baseSize"));
  }

 private:
  Napi::Value Size(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(pages_.size())); }
  Napi::Value ValidBase(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(pages_.valid_base()));
  }
  Napi::Value DirtyPages(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(pages_.dirty_pages()));
  }

  // write(pos, len): null when the write is recorded already; otherwise the stored ranges to
  // copy into the spool first ([start, len, ...]), and commitWrite(pos, len) records it after.
  Napi::Value Write(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint64_t pos = GetOffset(env, info[0], "pos"), len = GetOffset(env, info[1], "len");
    if (pos + len > static_cast<uint64_t>(kMaxOffset)) throw Napi::RangeError::New(env, "write ends past 2^53");
    copies_.clear();
    pages_.PlanWrite(pos, len, &copies_);
    if (copies_.empty()) {
      pages_.CommitWrite(pos, len);
      return env.Null();
    }
    Napi::Float64Array out = Napi::Float64Array::New(env, copies_.size() * 2);
    for (size_t i = 0; i < copies_.size(); i++) {
      out[i * 2] = static_cast<double>(copies_[i].start);
      out[i * 2 + 1] = static_cast<double>(copies_[i].len);
    }
    return out;
  }

  Napi::Value CommitWrite(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint64_t pos = GetOffset(env, info[0], "pos"), len = GetOffset(env, info[1], "len");
    if (pos + len > static_cast<uint64_t>(kMaxOffset)) throw Napi::RangeError::New(env, "write ends past 2^53");
    pages_.CommitWrite(pos, len);
    return env.Undefined();
  }

  // planRead(pos, len, out: Float64Array): segments as [source, pos, len] triples in out; returns
  // their count, which may exceed out's room (then nothing was written: call again, bigger).
  Napi::Value PlanRead(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint64_t pos = GetOffset(env, info[0], "pos"), len = GetOffset(env, info[1], "len");
    if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
      throw Napi::TypeError::New(env, "out must be a Float64Array");
    }
    Napi::Float64Array out = info[2].As<Napi::Float64Array>();
    segments_.clear();
    pages_.PlanRead(pos, len, &segments_);
    if (segments_.size() * 3 <= out.ElementLength()) {
      double* d = out.Data();
      for (const CowSegment& s : segments_) {
        *d++ = static_cast<double>(s.source);
        *d++ = static_cast<double>(s.pos);
        *d++ = static_cast<double>(s.len);
      }
    }
    return Napi::Number::New(env, static_cast<double>(segments_.size()));
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    pages_.Truncate(GetOffset(info.Env(), info[0], "size"));
    return info.Env().Undefined();
  }

  Napi::Value Rebase(const Napi::CallbackInfo& info) {
    pages_.Rebase(GetOffset(info.Env(), info[0], "size"));
    return info.Env().Undefined();
  }

  Napi::Value ChangedRanges(const Napi::CallbackInfo& info) {
    std::vector<CowRange> ranges;
    pages_.ChangedRanges(info[0].ToBoolean(), &ranges);
    Napi::Float64Array out = Napi::Float64Array::New(info.Env(), ranges.size() * 2);
    for (size_t i = 0; i < ranges.size(); i++) {
      out[i * 2] = ToJs(ranges[i].begin);
      out[i * 2 + 1] = ToJs(ranges[i].end);
    }
    return out;
  }

  // rechunk(params, baseIsExtents, piece, io) -> { bytesRead, chunks }
  Napi::Value Rechunk(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const CdcParams params = GetParams(env, info[0]);
    const bool extents = info[1].ToBoolean();
    const uint64_t piece = GetOffset(env, info[2], "piece");
    if (piece == 0 || piece > (64u << 20)) throw Napi::RangeError::New(env, "piece must be 1..64 MiB");
    if (!info[3].IsObject()) throw Napi::TypeError::New(env, "io must be an object");
    std::vector<CowRange> ranges;
    pages_.ChangedRanges(extents, &ranges);
    JsRechunkIo io(env, info[3].As<Napi::Object>(), static_cast<size_t>(piece), params.max_size);
    const uint64_t old_size = extents ? pages_.base_size() : 0;
    const RechunkStats st = CowRechunk(params, ranges, old_size, pages_.size(), static_cast<size_t>(piece), io);
    io.Flush();
    Napi::Object r = Napi::Object::New(env);
    r.Set("bytesRead", static_cast<double>(st.bytes_read));
    r.Set("chunks", static_cast<double>(st.chunks));
    return r;
  }

  CowPages pages_;
  std::vector<CowCopy> copies_;
  std::vector<CowSegment> segments_;
};

}  // namespace

void InitCow(Napi::Env env, Napi::Object exports) {
  exports.Set("CowPages", CowFile::Define(env));
  exports.Set("cowPage", Napi::Number::New(env, static_cast<double>(kCowPage)));
}

}  // namespace layerfs
