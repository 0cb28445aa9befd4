// Small Node-API helpers shared by the binding files. Argument shapes are checked in TypeScript;
// these checks only keep a wrong call from crashing the process.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

#include "fastcdc.h"

namespace layerfs {

struct Bytes {
  const uint8_t* data;
  size_t size;
};

// A file descriptor argument: a number >= 0, else a TypeError or RangeError.
inline int GetFd(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, "fd must be a number");
  const int32_t fd = v.As<Napi::Number>().Int32Value();
  if (fd < 0) throw Napi::RangeError::New(env, "fd must be >= 0");
  return fd;
}

// A file position argument: a safe integer >= 0, else a TypeError or RangeError.
inline int64_t GetPosition(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, "position must be a number");
  const double pos = v.As<Napi::Number>().DoubleValue();
  if (!(pos >= 0 && pos <= 9007199254740991.0)) throw Napi::RangeError::New(env, "position must be a safe integer >= 0");
  return static_cast<int64_t>(pos);
}

inline Bytes GetBytes(const Napi::Env& env, const Napi::Value& v, const char* what) {
  napi_typedarray_type type;
  size_t length;
  void* data;
  bool is_typed = false;
  // One napi_get_typedarray_info call: this runs on every small hash, so no wrapper objects.
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, v, &type, &length, &data, nullptr, nullptr) != napi_ok ||
      type != napi_uint8_array) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a Uint8Array");
  }
  return Bytes{static_cast<const uint8_t*>(data), length};
}

inline uint32_t GetU32Field(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 4294967295.0) || d != static_cast<double>(static_cast<uint32_t>(d))) {
    throw Napi::RangeError::New(env, std::string(key) + " must be a 32-bit unsigned integer");
  }
  return static_cast<uint32_t>(d);
}

// undefined → defaults; otherwise {minSize, avgSize, maxSize, normalization}.
inline CdcParams GetParams(const Napi::Env& env, const Napi::Value& v) {
  if (v.IsUndefined() || v.IsNull()) return CdcDefaultParams();
  if (!v.IsObject()) throw Napi::TypeError::New(env, "params must be an object");
  auto o = v.As<Napi::Object>();
  CdcParams p{};
  const char* err = CdcMakeParams(GetU32Field(env, o, "minSize"), GetU32Field(env, o, "avgSize"),
                                  GetU32Field(env, o, "maxSize"),
                                  GetU32Field(env, o, "normalization"), &p);
  if (err) throw Napi::RangeError::New(env, err);
  return p;
}

// A thrown Error carrying errno details, turned into LayerFsError(ERR_NATIVE_IO) by lib/native.
Napi::Error ErrnoError(const Napi::Env& env, const char* syscall, int err);

Napi::Uint32Array CopyU32(const Napi::Env& env, const uint32_t* p, size_t n);

// Paths arrive as Buffers (file names are bytes); they must not contain NUL.
std::string GetPath(const Napi::Env& env, const Napi::Value& v, const char* what);

void InitHash(Napi::Env env, Napi::Object exports);
void InitChunker(Napi::Env env, Napi::Object exports);
void InitBatch(Napi::Env env, Napi::Object exports);
void InitXattr(Napi::Env env, Napi::Object exports);
void InitFd(Napi::Env env, Napi::Object exports);
void InitWriteBehind(Napi::Env env, Napi::Object exports);
void InitFileWriter(Napi::Env env, Napi::Object exports);
void InitFdOutput(Napi::Env env, Napi::Object exports);
void InitWalk(Napi::Env env, Napi::Object exports);
void InitStream(Napi::Env env, Napi::Object exports);
void InitZstd(Napi::Env env, Napi::Object exports);
void InitCow(Napi::Env env, Napi::Object exports);
void InitMount(Napi::Env env, Napi::Object exports);
void InitZstdDict(Napi::Env env, Napi::Object exports);
void InitRun(Napi::Env env, Napi::Object exports);
void InitBlobs(Napi::Env env, Napi::Object exports);
}  // namespace layerfs
