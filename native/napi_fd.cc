// read(2)/write(2) on a descriptor for the FUSE serving thread: one request or one reply per
// call. A failure comes back as -errno instead of a thrown Error, since /dev/fuse reports
// routine conditions (EINTR, ENOENT for an interrupted request) through errno and the serving
// loop must not build an exception for them; node's readSync/writeSync cost ~0.5 us more each.
#include <errno.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sys/uio.h>

#include "napi_util.h"
#include "request_pool.h"

namespace layerfs {

namespace {

// fdRead(fd, buffer) -> bytes read, or -errno
Napi::Value FdRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  Bytes b = GetBytes(env, info[1], "buffer");
  const ssize_t n = read(fd, const_cast<uint8_t*>(b.data), b.size);
  return Napi::Number::New(env, n < 0 ? -errno : static_cast<double>(n));
}

// fdReadRequest(fd, poll) -> bytes read * 65536 + the slot read into (request_pool.h), or -errno.
// The calling thread's previous slot is released first. With poll, the descriptor is polled for
// the spin time (fuseSpin) before the read blocks.
Napi::Value FdReadRequest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  const bool poll = info.Length() < 2 || info[1].ToBoolean().Value();
  int slot = 0;
  const ssize_t n = RequestPool::Get().Read(fd, &slot, poll);
  return Napi::Number::New(env, n < 0 ? static_cast<double>(n) : static_cast<double>(n) * 65536 + slot);
}

// requestSlot(slot) -> a Buffer over a slot's request bytes (the memory is the pool's, never freed).
Napi::Value RequestSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "slot must be a number");
  const int slot = info[0].As<Napi::Number>().Int32Value();
  if (slot < 0 || slot >= RequestPool::Get().Count()) throw Napi::RangeError::New(env, "no such request slot");
  return Napi::Buffer<uint8_t>::New(env, RequestPool::Get().Request(slot), RequestPool::kRequestMax);
}

// fdReadRequestReady(fd) -> bytes read * 65536 + the slot read into, or -errno; -EAGAIN without
// reading when nothing is waiting: the serving thread takes requests between the steps of a
// commit this way without ever blocking in it. The slot stays held until requestRelease(slot).
Napi::Value FdReadRequestReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  int slot = 0;
  const ssize_t n = RequestPool::Get().ReadReady(fd, &slot);
  return Napi::Number::New(env, n <= 0 ? static_cast<double>(n) : static_cast<double>(n) * 65536 + slot);
}

// requestRelease(slot): the slot of a request read by fdReadRequestReady may be reused.
Napi::Value RequestRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "slot must be a number");
  RequestPool::Get().ReleaseHeld(info[0].As<Napi::Number>().Int32Value());
  return env.Undefined();
}

// fuseSpin(ns): how long threads reading requests poll before they block (0: never).
Napi::Value FuseSpin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "ns must be a number");
  RequestPool::Get().SetSpin(info[0].As<Napi::Number>().Int64Value());
  return env.Undefined();
}

// fuseSpinStats() -> { spinNs, spins, caught, spunNs }: the setting, polls begun, polls that found
// a request, and ns spent polling, since the process started.
Napi::Value FuseSpinStats(const Napi::CallbackInfo& info) {
  const RequestPool::SpinStats st = RequestPool::Get().Spins();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("spinNs", static_cast<double>(st.spin_ns));
  o.Set("spins", static_cast<double>(st.spins));
  o.Set("caught", static_cast<double>(st.caught));
  o.Set("spunNs", static_cast<double>(st.spun_ns));
  return o;
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

// fdWritev(fd, buffers) -> bytes written by one writev(2), or -errno: a FUSE reply of a header
// and the verified bytes where they lie, without gathering them into one buffer first.
Napi::Value FdWritev(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  if (!info[1].IsArray()) throw Napi::TypeError::New(env, "buffers must be an array");
  Napi::Array list = info[1].As<Napi::Array>();
  const uint32_t n = list.Length();
  if (n == 0 || n > 64) throw Napi::RangeError::New(env, "buffers must hold 1 to 64 buffers");
  struct iovec iov[64];
  for (uint32_t i = 0; i < n; i++) {
    Bytes b = GetBytes(env, list.Get(i), "buffers[i]");
    iov[i].iov_base = const_cast<uint8_t*>(b.data);
    iov[i].iov_len = b.size;
  }
  const ssize_t w = writev(fd, iov, static_cast<int>(n));
  return Napi::Number::New(env, w < 0 ? -errno : static_cast<double>(w));
}

// fdLock(fd) -> 0 once an exclusive flock(2) is held, or -errno (-EWOULDBLOCK: held elsewhere).
// Never waits. The kernel drops the lock when the last descriptor closes, also on SIGKILL.
Napi::Value FdLock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  int r;
  do {
    r = flock(fd, LOCK_EX | LOCK_NB);
  } while (r < 0 && errno == EINTR);
  return Napi::Number::New(env, r < 0 ? -errno : 0);
}

// makeNode(path, kind, permissions, major, minor) -> 0 or -errno. kind: 'p' FIFO, 'c' character
// device, 'b' block device. The path is raw bytes: a name that is not UTF-8 is created as it is.
Napi::Value MakeNode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes p = GetBytes(env, info[0], "path");
  const std::string path(reinterpret_cast<const char*>(p.data), p.size);
  if (path.empty() || path.find('\0') != std::string::npos) throw Napi::TypeError::New(env, "path must be non-empty bytes without NUL");
  if (!info[1].IsString()) throw Napi::TypeError::New(env, "kind must be a string");
  const std::string kind = info[1].As<Napi::String>().Utf8Value();
  const mode_t type = kind == "p" ? S_IFIFO : kind == "c" ? S_IFCHR : kind == "b" ? S_IFBLK : 0;
  if (type == 0) throw Napi::RangeError::New(env, "kind must be 'p', 'c' or 'b'");
  const mode_t perm = static_cast<mode_t>(info[2].As<Napi::Number>().Uint32Value() & 07777);
  const dev_t dev = type == S_IFIFO ? 0 : makedev(info[3].As<Napi::Number>().Uint32Value(), info[4].As<Napi::Number>().Uint32Value());
  const int r = mknod(path.c_str(), type | perm, dev);
  return Napi::Number::New(env, r < 0 ? -errno : 0);
}

}  // namespace

void InitFd(Napi::Env env, Napi::Object exports) {
  exports.Set("fdRead", Napi::Function::New<FdRead>(env, "fdRead"));
  exports.Set("fdReadRequest", Napi::Function::New<FdReadRequest>(env, "fdReadRequest"));
  exports.Set("requestSlot", Napi::Function::New<RequestSlot>(env, "requestSlot"));
  exports.Set("fdReadRequestReady", Napi::Function::New<FdReadRequestReady>(env, "fdReadRequestReady"));
  exports.Set("requestRelease", Napi::Function::New<RequestRelease>(env, "requestRelease"));
  exports.Set("fdWrite", Napi::Function::New<FdWrite>(env, "fdWrite"));
  exports.Set("fuseSpin", Napi::Function::New<FuseSpin>(env, "fuseSpin"));
  exports.Set("fuseSpinStats", Napi::Function::New<FuseSpinStats>(env, "fuseSpinStats"));
  exports.Set("fdWritev", Napi::Function::New<FdWritev>(env, "fdWritev"));
  exports.Set("fdLock", Napi::Function::New<FdLock>(env, "fdLock"));
  exports.Set("makeNode", Napi::Function::New<MakeNode>(env, "makeNode"));
}

}  // namespace layerfs
