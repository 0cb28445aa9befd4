// Synchronous xattr helpers (never following symlinks): the Store's export writes user xattrs
// back, and tests need them without the `attr` package.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "napi_util.h"
#include "scan.h"

namespace layerfs {

namespace {

std::string GetName(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsString()) throw Napi::TypeError::New(env, "name must be a string");
  std::string s = v.As<Napi::String>().Utf8Value();
  if (s.empty() || s.find('\0') != std::string::npos) {
    throw Napi::TypeError::New(env, "name must be non-empty without NUL");
  }
  return s;
}

// setXattr(path: Buffer, name: string, value: Uint8Array)
Napi::Value SetXattr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = GetPath(env, info[0], "path");
  const std::string name = GetName(env, info[1]);
  Bytes v = GetBytes(env, info[2], "value");
  if (lsetxattr(path.c_str(), name.c_str(), v.data, v.size, 0) != 0) {
    throw ErrnoError(env, "lsetxattr", errno);
  }
  return env.Undefined();
}

Napi::Value RemoveXattr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = GetPath(env, info[0], "path");
  const std::string name = GetName(env, info[1]);
  if (lremovexattr(path.c_str(), name.c_str()) != 0) throw ErrnoError(env, "lremovexattr", errno);
  return env.Undefined();
}

// getXattrs(path) -> [{name, value}] for user.* names
Napi::Value GetXattrs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = GetPath(env, info[0], "path");
  std::vector<Xattr> xs;
  const int e = ListUserXattrs(path.c_str(), &xs, true);
  if (e != 0) throw ErrnoError(env, "llistxattr", e);
  Napi::Array out = Napi::Array::New(env, xs.size());
  for (size_t i = 0; i < xs.size(); i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", xs[i].name);
    o.Set("value", Napi::Buffer<uint8_t>::Copy(env, xs[i].value.data(), xs[i].value.size()));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// listXattrs(path) -> every name (all namespaces)
Napi::Value ListXattrs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = GetPath(env, info[0], "path");
  std::vector<std::string> names;
  const int e = ListAllXattrNames(path.c_str(), &names);
  if (e != 0) throw ErrnoError(env, "llistxattr", e);
  Napi::Array out = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); i++) out.Set(static_cast<uint32_t>(i), names[i]);
  return out;
}

// setTimes(path: Buffer, atimeNs: bigint, mtimeNs: bigint): utimensat without following a
// symlink. Node's utimes takes seconds as a double and loses the nanoseconds a state records.
Napi::Value SetTimes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = GetPath(env, info[0], "path");
  struct timespec ts[2];
  for (int i = 0; i < 2; i++) {
    if (!info[i + 1].IsBigInt()) throw Napi::TypeError::New(env, "times must be bigint nanoseconds");
    bool lossless = true;
    const int64_t ns = info[i + 1].As<Napi::BigInt>().Int64Value(&lossless);
    int64_t sec = ns / 1000000000, rem = ns % 1000000000;
    if (rem < 0) {
      rem += 1000000000;
      sec -= 1;
    }
    ts[i].tv_sec = static_cast<time_t>(sec);
    ts[i].tv_nsec = static_cast<long>(rem);
  }
  if (utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) throw ErrnoError(env, "utimensat", errno);
  return env.Undefined();
}

}  // namespace

void InitXattr(Napi::Env env, Napi::Object exports) {
  exports.Set("setXattr", Napi::Function::New<SetXattr>(env, "setXattr"));
  exports.Set("removeXattr", Napi::Function::New<RemoveXattr>(env, "removeXattr"));
  exports.Set("getXattrs", Napi::Function::New<GetXattrs>(env, "getXattrs"));
  exports.Set("listXattrs", Napi::Function::New<ListXattrs>(env, "listXattrs"));
  exports.Set("setTimes", Napi::Function::New<SetTimes>(env, "setTimes"));
}

}  // namespace layerfs
