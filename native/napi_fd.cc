// read(2)/write(2) on a descriptor for the FUSE serving thread: one request or one reply per
// call. A failure comes back as -errno instead of a thrown Error, since /dev/fuse reports
// routine conditions (EINTR, ENOENT for an interrupted request) through errno and the serving
// loop must not build an exception for them; node's readSync/writeSync cost ~0.5 us more each.
#include <errno.h>
#include <unistd.h>

#include "napi_util.h"

namespace layerfs {

namespace {

int GetFd(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, "fd must be a number");
  const int32_t fd = v.As<Napi::Number>().Int32Value();
  if (fd < 0) throw Napi::RangeError::New(env, "fd must be >= 0");
  return fd;
}

// fdRead(fd, buffer) -> bytes read, or -errno
Napi::Value FdRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  Bytes b = GetBytes(env, info[1], "buffer");
  const ssize_t n = read(fd, const_cast<uint8_t*>(b.data), b.size);
  return Napi::Number::New(env, n < 0 ? -errno : static_cast<double>(n));
}

// fdWrite(fd, buffer, length) -> bytes written, or -errno
Napi::Value FdWrite(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  Bytes b = GetBytes(env, info[1], "buffer");
  if (!info[2].IsNumber()) throw Napi::TypeError::New(env, "length must be a number");
  const double length = info[2].As<Napi::Number>().DoubleValue();
  if (!(length >= 0 && length <= static_cast<double>(b.size))) {
    throw Napi::RangeError::New(env, "length must be within the buffer");
  }
  const ssize_t n = write(fd, b.data, static_cast<size_t>(length));
  return Napi::Number::New(env, n < 0 ? -errno : static_cast<double>(n));
}

}  // namespace

void InitFd(Napi::Env env, Napi::Object exports) {
  exports.Set("fdRead", Napi::Function::New<FdRead>(env, "fdRead"));
  exports.Set("fdWrite", Napi::Function::New<FdWrite>(env, "fdWrite"));
}

}  // namespace layerfs
