// Mounting FUSE file systems without a helper program: mount(2) on a fresh /dev/fuse descriptor
// (root), umount2(2), and the receiving end of fusermount's descriptor hand-over (an ordinary
// user: fusermount3 mounts, then sends the /dev/fuse descriptor over a Unix socket named by
// _FUSE_COMMFD, as SCM_RIGHTS). mount(2) and umount2(2) resolve a path, so they run on the
// thread pool: the calling thread never waits on a file system, which could be one it serves.
#include <errno.h>
#include <fcntl.h>
#include <string>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <cstring>
#include <unistd.h>

#include "napi_util.h"

namespace layerfs {

namespace {

// A syscall's failure, with the path it was about, as the JS side's typed error expects.
Napi::Error PathError(const Napi::Env& env, const char* syscall, int err, const std::string& path) {
  Napi::Error e = ErrnoError(env, syscall, err);
  e.Set("path", Napi::String::New(env, path));
  e.Set("message", Napi::String::New(env, std::string(syscall) + " " + path + ": " + e.Message()));
  return e;
}

std::string GetString(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsString()) throw Napi::TypeError::New(env, std::string(what) + " must be a string");
  std::string s = v.As<Napi::String>().Utf8Value();
  if (s.empty() || s.find('\0') != std::string::npos) {
    throw Napi::TypeError::New(env, std::string(what) + " must be non-empty without NUL");
  }
  return s;
}

// Opens /dev/fuse and mounts it at `mountpoint` with "fd=N," + options; resolves to the
// descriptor (close-on-exec), which the caller then serves. Every mount is nosuid,nodev: a
// state is data, and a setuid binary or a device node in it must grant nothing.
class MountJob : public Napi::AsyncWorker {
 public:
  MountJob(Napi::Env env, std::string mountpoint, std::string source, std::string type, std::string options)
      : Napi::AsyncWorker(env, "layerfs.fuseMount"),
        deferred_(Napi::Promise::Deferred::New(env)),
        mountpoint_(std::move(mountpoint)),
        source_(std::move(source)),
        type_(std::move(type)),
        options_(std::move(options)) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    fd_ = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      err_ = errno;
      syscall_ = "open /dev/fuse";
      return;
    }
    const std::string data = "fd=" + std::to_string(fd_) + "," + options_;
    if (mount(source_.c_str(), mountpoint_.c_str(), type_.c_str(), MS_NOSUID | MS_NODEV, data.c_str()) < 0) {
      err_ = errno;
      syscall_ = "mount";
      close(fd_);
      fd_ = -1;
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (err_ != 0) {
      deferred_.Reject(PathError(env, syscall_, err_, mountpoint_).Value());
      return;
    }
    deferred_.Resolve(Napi::Number::New(env, fd_));
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string mountpoint_, source_, type_, options_;
  int fd_ = -1;
  int err_ = 0;
  const char* syscall_ = "";
};

class UnmountJob : public Napi::AsyncWorker {
 public:
  UnmountJob(Napi::Env env, std::string mountpoint, bool lazy)
      : Napi::AsyncWorker(env, "layerfs.unmount"),
        deferred_(Napi::Promise::Deferred::New(env)),
        mountpoint_(std::move(mountpoint)),
        lazy_(lazy) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    // UMOUNT_NOFOLLOW: a symlink planted at the mount point cannot redirect the unmount.
    if (umount2(mountpoint_.c_str(), (lazy_ ? MNT_DETACH : 0) | UMOUNT_NOFOLLOW) < 0) err_ = errno;
  }

  void OnOK() override {
    if (err_ != 0) {
      deferred_.Reject(PathError(Env(), "umount2", err_, mountpoint_).Value());
      return;
    }
    deferred_.Resolve(Env().Undefined());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string mountpoint_;
  bool lazy_;
  int err_ = 0;
};

// fuseMount(mountpoint, source, type, options): Promise<fd>
Napi::Value FuseMount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* job = new MountJob(env, GetString(env, info[0], "mountpoint"), GetString(env, info[1], "source"), GetString(env, info[2], "type"),
                           GetString(env, info[3], "options"));
  Napi::Promise p = job->Promise();
  job->Queue();
  return p;
}

// unmount(mountpoint, lazy): Promise<void>
Napi::Value Unmount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* job = new UnmountJob(env, GetString(env, info[0], "mountpoint"), info[1].ToBoolean().Value());
  Napi::Promise p = job->Promise();
  job->Queue();
  return p;
}

// socketPair(): [a, b], a connected AF_UNIX stream pair, both close-on-exec (a child that is
// given one as an extra stdio descriptor gets a copy without the flag).
Napi::Value SocketPair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) throw ErrnoError(env, "socketpair", errno);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, fds[0]));
  out.Set(1u, Napi::Number::New(env, fds[1]));
  return out;
}

// receiveFd(socket): the descriptor the peer sent as SCM_RIGHTS with a one-byte message (what
// fusermount sends), close-on-exec, or -errno: -EAGAIN when nothing is waiting (never blocks),
// -ENOMSG when a message came without a descriptor.
Napi::Value ReceiveFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "socket must be a number");
  const int sock = info[0].As<Napi::Number>().Int32Value();
  char byte = 0;
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Napi::Number::New(env, -errno);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (n == 0 || c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return Napi::Number::New(env, -ENOMSG);
  }
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return Napi::Number::New(env, fd);
}

}  // namespace

// FUSE passthrough (Linux 6.9+, uapi linux/fuse.h; older libc headers lack it): a file registered
// on the /dev/fuse descriptor gets a backing id, which an OPEN reply names with
// FOPEN_PASSTHROUGH so the kernel reads that file itself. The kernel takes its own reference to
// the file, so the descriptor opened here is closed at once. Needs CAP_SYS_ADMIN (EPERM else).
struct FuseBackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
constexpr unsigned long kBackingOpen = _IOW(229, 1, FuseBackingMap);
constexpr unsigned long kBackingClose = _IOW(229, 2, uint32_t);

// fuseBackingOpen(devFd, path): the backing id (> 0) of the plain file at path, or -errno.
Napi::Value FuseBackingOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "devFd must be a number");
  const int dev = info[0].As<Napi::Number>().Int32Value();
  const std::string path = GetString(env, info[1], "path");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Napi::Number::New(env, -errno);
  FuseBackingMap map{fd, 0, 0};
  const int id = ioctl(dev, kBackingOpen, &map);
  const int err = errno;
  close(fd);
  return Napi::Number::New(env, id < 0 ? -err : id);
}

// fuseBackingClose(devFd, id): 0, or -errno.
Napi::Value FuseBackingClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsNumber()) throw Napi::TypeError::New(env, "devFd and id must be numbers");
  const int dev = info[0].As<Napi::Number>().Int32Value();
  uint32_t id = info[1].As<Napi::Number>().Uint32Value();
  return Napi::Number::New(env, ioctl(dev, kBackingClose, &id) < 0 ? -errno : 0);
}

void InitMount(Napi::Env env, Napi::Object exports) {
  exports.Set("fuseBackingOpen", Napi::Function::New<FuseBackingOpen>(env, "fuseBackingOpen"));
  exports.Set("fuseBackingClose", Napi::Function::New<FuseBackingClose>(env, "fuseBackingClose"));
  exports.Set("fuseMount", Napi::Function::New<FuseMount>(env, "fuseMount"));
  exports.Set("unmount", Napi::Function::New<Unmount>(env, "unmount"));
  exports.Set("socketPair", Napi::Function::New<SocketPair>(env, "socketPair"));
  exports.Set("receiveFd", Napi::Function::New<ReceiveFd>(env, "receiveFd"));
}

}  // namespace layerfs
