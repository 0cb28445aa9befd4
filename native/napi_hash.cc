#include <cstring>
#include <string>

#include "blake3.h"
#include "napi_util.h"

namespace layerfs {

namespace {

// Creating a Buffer in native code costs more than hashing a small input, so callers pass a
// 32-byte output allocated from Node's pooled Buffer slab; without one we allocate.
Napi::Value Output(const Napi::Env& env, const Napi::Value& out, const uint8_t digest[32]) {
  if (out.IsUndefined()) return Napi::Buffer<uint8_t>::Copy(env, digest, 32);
  Bytes o = GetBytes(env, out, "out");
  if (o.size < 32) throw Napi::RangeError::New(env, "out must hold 32 bytes");
  std::memcpy(const_cast<uint8_t*>(o.data), digest, 32);
  return out;
}

// blake3(data, out?)
Napi::Value Blake3(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes b = GetBytes(env, info[0], "data");
  blake3_hasher h;
  blake3_hasher_init(&h);
  blake3_hasher_update(&h, b.data, b.size);
  uint8_t digest[32];
  blake3_hasher_finalize(&h, digest, 32);
  return Output(env, info[1], digest);
}

void AbsorbTag(const Napi::Env& env, const Napi::Value& v, blake3_hasher* h) {
  // Tags are short: read them into a stack buffer with one call instead of a std::string.
  char buf[256];
  size_t len = 0;
  if (!v.IsString() || napi_get_value_string_utf8(env, v, buf, sizeof(buf), &len) != napi_ok) {
    throw Napi::TypeError::New(env, "domainTag must be a string");
  }
  if (len + 1 < sizeof(buf)) {
    blake3_hasher_update(h, buf, len);
  } else {
    const std::string tag = v.As<Napi::String>().Utf8Value();  // possibly truncated above
    blake3_hasher_update(h, tag.data(), tag.size());
  }
  const uint8_t zero = 0;
  blake3_hasher_update(h, &zero, 1);
}

// objectIdInto(out | undefined, tag, ...parts)
Napi::Value ObjectIdInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  blake3_hasher h;
  blake3_hasher_init(&h);
  AbsorbTag(env, info[1], &h);
  for (size_t i = 2; i < info.Length(); i++) {
    Bytes b = GetBytes(env, info[i], "part");
    blake3_hasher_update(&h, b.data, b.size);
  }
  uint8_t digest[32];
  blake3_hasher_finalize(&h, digest, 32);
  return Output(env, info[0], digest);
}

class Hasher : public Napi::ObjectWrap<Hasher> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Blake3Hasher",
                       {InstanceMethod<&Hasher::Update>("update"),
                        InstanceMethod<&Hasher::Digest>("digest"),
                        InstanceMethod<&Hasher::Reset>("reset")});
  }

  explicit Hasher(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Hasher>(info) {
    blake3_hasher_init(&initial_);
    if (info.Length() > 0 && !info[0].IsUndefined()) AbsorbTag(info.Env(), info[0], &initial_);
    state_ = initial_;
  }

 private:
  Napi::Value Update(const Napi::CallbackInfo& info) {
    Bytes b = GetBytes(info.Env(), info[0], "data");
    blake3_hasher_update(&state_, b.data, b.size);
    return info.This();
  }

  // digest(length = 32): BLAKE3 extended output; does not consume the state.
  Napi::Value Digest(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t len = 32;
    if (info.Length() > 0 && !info[0].IsUndefined()) {
      const double d = info[0].ToNumber().DoubleValue();
      if (!(d >= 1 && d <= (1 << 24)) || d != static_cast<double>(static_cast<size_t>(d))) {
        throw Napi::RangeError::New(env, "length must be an integer 1..16777216");
      }
      len = static_cast<size_t>(d);
    }
    Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, len);
    blake3_hasher_finalize(&state_, out.Data(), len);
    return out;
  }

  Napi::Value Reset(const Napi::CallbackInfo& info) {
    state_ = initial_;
    return info.This();
  }

  blake3_hasher initial_;  // empty, or primed with tag || 0x00
  blake3_hasher state_;
};

}  // namespace

void InitHash(Napi::Env env, Napi::Object exports) {
  exports.Set("blake3", Napi::Function::New<Blake3>(env, "blake3"));
  exports.Set("objectIdInto", Napi::Function::New<ObjectIdInto>(env, "objectIdInto"));
  exports.Set("Blake3Hasher", Hasher::Define(env));
}

}  // namespace layerfs
