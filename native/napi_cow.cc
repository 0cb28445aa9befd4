// Node-API surface of the copy-on-write core (native/cow.h), wrapped by lib/native/cow.ts.
// Offsets cross as doubles: callers check they are safe integers.
#include <cmath>
#include <vector>

#include "cow.h"
#include "napi_util.h"

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

// The re-chunk's needs, answered by JavaScript callbacks; a callback that throws stops the
// re-chunk and the exception reaches the caller unchanged.
class JsRechunkIo : public RechunkIo {
 public:
  JsRechunkIo(Napi::Env env, Napi::Object io, size_t piece)
      : env_(env),
        chunk_start_(GetFn(env, io, "chunkStart")),
        read_(GetFn(env, io, "read")),
        emit_(GetFn(env, io, "emit")),
        replace_(GetFn(env, io, "replace")),
        piece_(Napi::Buffer<uint8_t>::New(env, piece)) {}

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
    emit_.Call({Napi::Number::New(env_, static_cast<double>(offset)), Napi::Buffer<uint8_t>::Copy(env_, data, len)});
  }

  void Replace(uint64_t from, uint64_t to, size_t chunks) override {
    replace_.Call({Napi::Number::New(env_, static_cast<double>(from)), Napi::Number::New(env_, static_cast<double>(to)),
                   Napi::Number::New(env_, static_cast<double>(chunks))});
  }

 private:
  static Napi::Function GetFn(Napi::Env env, Napi::Object o, const char* key) {
    Napi::Value v = o.Get(key);
    if (!v.IsFunction()) throw Napi::TypeError::New(env, std::string("io.") + key + " must be a function");
    return v.As<Napi::Function>();
  }

  Napi::Env env_;
  Napi::Function chunk_start_, read_, emit_, replace_;
  Napi::Buffer<uint8_t> piece_;
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
    JsRechunkIo io(env, info[3].As<Napi::Object>(), static_cast<size_t>(piece));
    const uint64_t old_size = extents ? pages_.base_size() : 0;
    const RechunkStats st = CowRechunk(params, ranges, old_size, pages_.size(), static_cast<size_t>(piece), io);
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
