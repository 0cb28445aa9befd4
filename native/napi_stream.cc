// ChunkStream: a ChunkReader driven on the Pool a few pieces ahead of JS. The JS thread stores
// piece k (SQLite) while a pool thread reads, cuts and hashes pieces k+1.. — the two overlap, and
// memory stays at (readAhead + pieces JS holds) blocks whatever the file size.
//
// Pieces reach JS as external Buffers over the reader's blocks. A block comes back to the
// stream's free list when its Buffer is released (at once: release() detaches it, so a stale
// view reads as empty, never as other bytes) or collected; reusing blocks avoids faulting in
// fresh pages and keeps memory at a few blocks.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "block_pool.h"
#include "chunk_reader.h"
#include "napi_env.h"
#include "napi_util.h"
#include "pool.h"

namespace layerfs {

namespace {

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

Napi::Error ChangedError(Napi::Env env) {
  Napi::Error e = Napi::Error::New(env, "file changed while it was read");
  e.Set("code", Napi::String::New(env, "ERR_FILE_CHANGED"));
  return e;
}

class Stream : public Cancellable, public std::enable_shared_from_this<Stream> {
 public:
  Stream(const CdcParams& params, size_t piece_size, size_t ahead)
      : ahead_(ahead),
        reader_(params, piece_size),
        blocks_(std::make_shared<BlockPool>(reader_.BlockSize(), ahead + 2)) {}

  ChunkReader& reader() { return reader_; }
  size_t BlocksAllocated() const { return blocks_->Allocated(); }

  void Begin(Napi::Env env) {
    auto* holder = new std::shared_ptr<Stream>(shared_from_this());
    napi_status s = napi_create_threadsafe_function(
        env, nullptr, nullptr, Napi::String::New(env, "layerfs.readChunks"), 0, 1, holder,
        OnFinalize, this, OnCallJs, &tsfn_);
    if (s != napi_ok) {
      delete holder;
      NAPI_THROW_IF_FAILED_VOID(env, s);
    }
    // Keeps the process alive only while a next() waits.
    napi_unref_threadsafe_function(env, tsfn_);
    env_state_ = StateOf(env);
    env_state_->work.push_back(weak_from_this());
  }

  // JS thread. Resolves with a piece, or null at the end.
  Napi::Value Next(Napi::Env env, Napi::Object self) {
    if (pending_) throw Napi::Error::New(env, "next() called while another next() is pending");
    napi_value promise;
    NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &pending_, &promise), Napi::Value());
    self_ = Napi::Persistent(self);  // the wrapper must outlive the pending promise
    {
      std::lock_guard<std::mutex> lock(mu_);
      waiting_ = true;
    }
    if (!TrySettle(env)) {
      napi_ref_threadsafe_function(env, tsfn_);
      MaybeStart();
    }
    return Napi::Value(env, promise);
  }

  // JS thread, for callers that cannot await (a mount's serving thread): waits here for the
  // next piece, or the end (null), while the pool keeps reading ahead. Errors as next()'s.
  Napi::Value Take(Napi::Env env) {
    if (pending_) throw Napi::Error::New(env, "take() called while a next() is pending");
    MaybeStart();
    std::unique_ptr<Piece> piece;
    ReadStatus end;
    int err;
    bool cancelled;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !ready_.empty() || end_ != ReadStatus::kPiece || cancelled_; });
      cancelled = cancelled_;
      if (!ready_.empty() && !cancelled) {
        piece = std::move(ready_.front());
        ready_.pop_front();
      }
      end = end_;
      err = err_;
    }
    if (piece) {
      MaybeStart();
      return Napi::Value(env, PieceObject(env, std::move(piece)));
    }
    if (cancelled) throw Napi::Error::New(env, "the chunk stream was closed");
    if (end == ReadStatus::kChanged) throw ChangedError(env);
    if (end == ReadStatus::kError) throw ErrnoError(env, "read", err);
    return env.Null();
  }

  // JS thread: stops production, rejects a pending next(), lets the tsfn go, and closes the file
  // once the producer is out of it. The file and the reader's memory go now, not when the
  // wrapper and the tsfn are finalized: a thread that does not return to its event loop (a
  // mount's serving thread inside a commit) streams file after file meanwhile, and held an open
  // descriptor and ~130 KB of malloc'd scratch per file until then.
  void Close(Napi::Env env) {
    Cancel();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return in_flight_ == 0; });
      reader_.Close();
    }
    if (pending_) {
      napi_deferred d = pending_;
      pending_ = nullptr;
      self_.Reset();
      napi_reject_deferred(env, d, Napi::Error::New(env, "the chunk stream was closed").Value());
    }
    ReleaseTsfn();
  }

  // Finalizer of the JS wrapper: no JS may run here, and nothing is pending (self_ holds the
  // wrapper while a next() waits).
  void Abandon() {
    Cancel();
    ReleaseTsfn();
  }

  void Cancel() override {
    std::deque<std::unique_ptr<Piece>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      dropped.swap(ready_);
    }
    for (auto& p : dropped) blocks_->Put(p->data);
    blocks_->Close();
  }

  // JS thread: a Buffer this stream handed out goes back to the pool at once, and is detached so
  // every view of it reads as empty from now on (never as the next piece's bytes).
  bool Release(Napi::Env env, napi_value arraybuffer, uint8_t* data, size_t len) {
    bool detached = false;
    if (napi_is_detached_arraybuffer(env, arraybuffer, &detached) != napi_ok || detached) return false;
    if (!blocks_->IsHanded(data, len)) return false;
    // Detach before the block can be refilled, so no view of it can ever show other bytes.
    NAPI_THROW_IF_FAILED(env, napi_detach_arraybuffer(env, arraybuffer), false);
    blocks_->Release(data, len);
    return true;
  }

 private:
  void ReleaseTsfn() {
    if (tsfn_ && !tsfn_released_) {
      tsfn_released_ = true;
      napi_release_threadsafe_function(tsfn_, napi_tsfn_abort);
    }
  }

  // Any thread. Starts the producer if there is room ahead and work left.
  void MaybeStart() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (producing_ || cancelled_ || end_ != ReadStatus::kPiece || ready_.size() >= ahead_) return;
      producing_ = true;
      in_flight_++;
    }
    Pool::Get().Ensure(1);
    Pool::Get().Submit([self = shared_from_this()] { self->Produce(); });
  }

  // Pool thread: one piece after another until `ahead_` are ready, the end, or cancel.
  void Produce() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (cancelled_ || end_ != ReadStatus::kPiece || ready_.size() >= ahead_) {
          producing_ = false;
          in_flight_--;
          cv_.notify_all();
          return;
        }
      }
      auto piece = std::make_unique<Piece>();
      int err = 0;
      uint8_t* block = blocks_->Get();
      const ReadStatus s = block ? reader_.Next(block, piece.get(), &err) : ReadStatus::kError;
      if (!block) err = ENOMEM;
      bool notify;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (s == ReadStatus::kPiece && !cancelled_) {
          ready_.push_back(std::move(piece));
          block = nullptr;
        } else if (s != ReadStatus::kPiece) {
          end_ = s;
          err_ = err;
        }
        notify = waiting_ && !cancelled_;
      }
      // A take() waits on cv_ rather than on the tsfn.
      cv_.notify_all();
      if (block) blocks_->Put(block);
      // Still counted in flight, so the tsfn cannot be finalized under this call.
      if (notify) napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
    }
  }

  // JS thread: settles the pending next() if a piece or the end is there. False: keep waiting.
  bool TrySettle(Napi::Env env) {
    if (!pending_) return true;
    std::unique_ptr<Piece> piece;
    ReadStatus end;
    int err;
    bool cancelled;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled = cancelled_;
      if (!ready_.empty()) {
        piece = std::move(ready_.front());
        ready_.pop_front();
      }
      end = end_;
      err = err_;
      if (piece || end != ReadStatus::kPiece || cancelled) waiting_ = false;
    }
    napi_deferred d = pending_;
    if (piece) {
      pending_ = nullptr;
      // Settle whatever happens: an exception here must not leave the promise pending.
      try {
        napi_resolve_deferred(env, d, PieceObject(env, std::move(piece)));
      } catch (const Napi::Error& e) {
        napi_reject_deferred(env, d, e.Value());
      }
      MaybeStart();
    } else if (cancelled) {
      pending_ = nullptr;
      napi_reject_deferred(env, d, Napi::Error::New(env, "the chunk stream was closed").Value());
    } else if (end == ReadStatus::kEnd) {
      pending_ = nullptr;
      napi_resolve_deferred(env, d, env.Null());
    } else if (end == ReadStatus::kChanged) {
      pending_ = nullptr;
      napi_reject_deferred(env, d, ChangedError(env).Value());
    } else if (end == ReadStatus::kError) {
      pending_ = nullptr;
      napi_reject_deferred(env, d, ErrnoError(env, "read", err).Value());
    } else {
      return false;
    }
    self_.Reset();
    if (tsfn_ && !tsfn_released_) napi_unref_threadsafe_function(env, tsfn_);
    return true;
  }

  napi_value PieceObject(Napi::Env env, std::unique_ptr<Piece> p) {
    Napi::Object o = Napi::Object::New(env);
    auto* hint = new Handout{blocks_, p->data, p->len};
    napi_value data;
    napi_status s = napi_create_external_buffer(
        env, p->len, p->data,
        [](napi_env, void*, void* h) { BlockPool::Finalized(static_cast<Handout*>(h)); }, hint,
        &data);
    if (s != napi_ok) {
      delete hint;
      blocks_->Put(p->data);
      NAPI_THROW_IF_FAILED(env, s, nullptr);
    }
    blocks_->Handed(hint);
    o.Set("data", Napi::Value(env, data));
    o.Set("offset", Napi::Number::New(env, static_cast<double>(p->offset)));
    o.Set("lengths", CopyU32(env, p->lengths.data(), p->lengths.size()));
    o.Set("ids", Napi::Buffer<uint8_t>::Copy(env, p->ids.data(), p->ids.size()));
    return o;
  }

  static void OnCallJs(napi_env env, napi_value, void* context, void*) {
    if (env == nullptr) return;
    try {
      Napi::HandleScope scope(env);
      static_cast<Stream*>(context)->TrySettle(Napi::Env(env));
    } catch (...) {
    }
  }

  static void OnFinalize(napi_env, void* data, void* context) {
    auto* holder = static_cast<std::shared_ptr<Stream>*>(data);
    Stream* s = static_cast<Stream*>(context);
    s->Cancel();
    {
      std::unique_lock<std::mutex> lock(s->mu_);
      s->cv_.wait(lock, [s] { return s->in_flight_ == 0; });
    }
    if (s->env_state_) s->env_state_->Forget(s);
    delete holder;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Piece>> ready_;
  ReadStatus end_ = ReadStatus::kPiece;
  int err_ = 0;
  bool producing_ = false;
  bool cancelled_ = false;
  bool waiting_ = false;
  size_t in_flight_ = 0;
  const size_t ahead_;
  ChunkReader reader_;
  std::shared_ptr<BlockPool> blocks_;

  // JS thread only.
  napi_deferred pending_ = nullptr;
  Napi::ObjectReference self_;
  napi_threadsafe_function tsfn_ = nullptr;
  bool tsfn_released_ = false;
  std::shared_ptr<EnvState> env_state_;
};

uint64_t GetU64Big(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsBigInt()) throw Napi::TypeError::New(env, std::string("expect.") + key + " must be a bigint");
  bool lossless = false;
  const uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw Napi::RangeError::New(env, std::string("expect.") + key + " out of range");
  return x;
}

int64_t GetI64Big(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsBigInt()) throw Napi::TypeError::New(env, std::string("expect.") + key + " must be a bigint");
  bool lossless = false;
  const int64_t x = v.As<Napi::BigInt>().Int64Value(&lossless);
  if (!lossless) throw Napi::RangeError::New(env, std::string("expect.") + key + " out of range");
  return x;
}

// new ChunkStream(path: Buffer, {params, pieceSize, readAhead, expect?})
class ChunkStreamWrap : public Napi::ObjectWrap<ChunkStreamWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ChunkStream",
                       {InstanceMethod<&ChunkStreamWrap::Next>("next"),
                        InstanceMethod<&ChunkStreamWrap::Take>("take"),
                        InstanceMethod<&ChunkStreamWrap::Release>("release"),
                        InstanceMethod<&ChunkStreamWrap::Close>("close"),
                        InstanceAccessor<&ChunkStreamWrap::Blocks>("blocksAllocated")});
  }

  explicit ChunkStreamWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ChunkStreamWrap>(info) {
    Napi::Env env = info.Env();
    const std::string path = GetPath(env, info[0], "path");
    if (!info[1].IsObject()) throw Napi::TypeError::New(env, "options must be an object");
    auto o = info[1].As<Napi::Object>();
    const CdcParams params = GetParams(env, o.Get("params"));
    const uint32_t piece = GetU32Field(env, o, "pieceSize");
    const uint32_t ahead = GetU32Field(env, o, "readAhead");
    if (piece < params.max_size || piece > (64u << 20)) {
      throw Napi::RangeError::New(env, "pieceSize must be maxSize..64 MiB");
    }
    if (ahead < 1 || ahead > 16) throw Napi::RangeError::New(env, "readAhead must be 1..16");
    FileIdentity expect;
    const bool has_expect = o.Has("expect") && !o.Get("expect").IsUndefined();
    if (has_expect) {
      if (!o.Get("expect").IsObject()) throw Napi::TypeError::New(env, "expect must be an object");
      auto e = o.Get("expect").As<Napi::Object>();
      expect.dev = GetU64Big(env, e, "dev");
      expect.ino = GetU64Big(env, e, "ino");
      Napi::Value size = e.Get("size");
      if (!size.IsNumber() || size.As<Napi::Number>().DoubleValue() < 0) {
        throw Napi::TypeError::New(env, "expect.size must be a number");
      }
      expect.size = static_cast<uint64_t>(size.As<Napi::Number>().DoubleValue());
      expect.mtime_ns = GetI64Big(env, e, "mtimeNs");
      expect.ctime_ns = GetI64Big(env, e, "ctimeNs");
    }
    stream_ = std::make_shared<Stream>(params, piece, ahead);
    int err = 0;
    const ReadStatus s = stream_->reader().Open(path, has_expect ? &expect : nullptr, &err);
    if (s == ReadStatus::kChanged) throw ChangedError(env);
    if (s == ReadStatus::kError) throw ErrnoError(env, "open", err);
    const struct stat& st = stream_->reader().Stat();
    Napi::Object self = info.This().As<Napi::Object>();
    self.Set("size", Napi::Number::New(env, static_cast<double>(st.st_size)));
    self.Set("dev", Napi::BigInt::New(env, static_cast<uint64_t>(st.st_dev)));
    self.Set("ino", Napi::BigInt::New(env, static_cast<uint64_t>(st.st_ino)));
    self.Set("mtimeNs", Napi::BigInt::New(env, Nanos(st.st_mtim)));
    self.Set("ctimeNs", Napi::BigInt::New(env, Nanos(st.st_ctim)));
    stream_->Begin(env);
  }

  ~ChunkStreamWrap() override {
    if (stream_) stream_->Abandon();
  }

 private:
  Napi::Value Next(const Napi::CallbackInfo& info) { return stream_->Next(info.Env(), Value()); }
  Napi::Value Take(const Napi::CallbackInfo& info) { return stream_->Take(info.Env()); }

  // release(buffer): true if it was a live piece of this stream (now detached), else false.
  Napi::Value Release(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    napi_value v = info[0];
    bool is_typed = false;
    napi_typedarray_type type;
    size_t length, offset;
    void* data;
    napi_value ab;
    size_t ab_length = 0;
    void* ab_data = nullptr;
    if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
        napi_get_typedarray_info(env, v, &type, &length, &data, &ab, &offset) != napi_ok ||
        type != napi_uint8_array || offset != 0 ||
        napi_get_arraybuffer_info(env, ab, &ab_data, &ab_length) != napi_ok || ab_data != data) {
      return Napi::Boolean::New(env, false);
    }
    return Napi::Boolean::New(env, stream_->Release(env, ab, static_cast<uint8_t*>(data), ab_length));
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    stream_->Close(info.Env());
    return info.Env().Undefined();
  }

  Napi::Value Blocks(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(stream_->BlocksAllocated()));
  }

  std::shared_ptr<Stream> stream_;
};

}  // namespace

void InitStream(Napi::Env env, Napi::Object exports) {
  exports.Set("ChunkStream", ChunkStreamWrap::Define(env));
}

}  // namespace layerfs
