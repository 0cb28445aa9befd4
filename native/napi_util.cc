#include "napi_util.h"

#include <string.h>

#include <cstring>

#include "scan.h"

namespace layerfs {

Napi::Error ErrnoError(const Napi::Env& env, const char* syscall, int err) {
  char buf[256];
  Napi::Error e =
      Napi::Error::New(env, std::string(syscall) + " failed: " + strerror_r(err, buf, sizeof(buf)));
  e.Set("errno", Napi::String::New(env, ErrnoName(err)));
  e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

Napi::Uint32Array CopyU32(const Napi::Env& env, const uint32_t* p, size_t n) {
  Napi::Uint32Array a = Napi::Uint32Array::New(env, n);
  if (n > 0) std::memcpy(a.Data(), p, n * sizeof(uint32_t));
  return a;
}

std::string GetPath(const Napi::Env& env, const Napi::Value& v, const char* what) {
  Bytes b = GetBytes(env, v, what);
  std::string s(reinterpret_cast<const char*>(b.data), b.size);
  if (s.empty() || s.find('\0') != std::string::npos) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a non-empty path without NUL");
  }
  return s;
}

}  // namespace layerfs
