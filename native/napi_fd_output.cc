// FdOutput: an output stream (a command's stdout) written in order by a background thread, so
// the caller decodes and verifies the next bytes while the last ones go out. The caller hands
// over Buffers it will not change (they are held, not copied, until written); the thread writes
// them in order with writev(2), a few at once, waiting in poll(2) when the descriptor is
// non-blocking and full. The first piece is written on the caller's thread (a small file's
// output is one piece and starts no thread). Queued bytes are bounded (a hand-over waits while the queue is full).
// When the descriptor is a pipe, it is first enlarged (F_SETPIPE_SZ, best effort): the reader
// then takes many pages per wake-up instead of 16. The first failure (EPIPE when the reader went
// away, ENOSPC for a file) is kept and returned by every later call; nothing after it is written.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "napi_util.h"

namespace layerfs {

namespace {

// Iovecs one writev takes (well under IOV_MAX).
constexpr size_t kMaxIov = 64;

struct Piece {
  const uint8_t* data;
  size_t len;
};

// Writes all of `iov` (advanced in place); 0 or errno. A non-blocking descriptor that is full is
// waited for in poll(2).
int WriteAllv(int fd, struct iovec* iov, int count) {
  while (count > 0) {
    const ssize_t n = writev(fd, iov, count);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return errno;
      continue;
    }
    if (n < 0) return errno;
    size_t done = static_cast<size_t>(n);
    while (count > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      iov++;
      count--;
    }
    if (count > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
  return 0;
}

class Output {
 public:
  Output(int fd, size_t limit) : fd_(fd), limit_(limit) {}
  ~Output() { Stop(); }

  // Queues a piece; waits while the queue is full. Returns pieces written so far, or -errno.
  // The first piece is written on the caller's thread and the thread starts with the second:
  // a small file's output (one piece) never waits for a thread to be scheduled.
  int64_t Put(Piece p) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!thread_.joinable() && released_ == 0 && error_ == 0) {
      struct iovec iov = {const_cast<uint8_t*>(p.data), p.len};
      const int err = WriteAllv(fd_, &iov, 1);
      released_++;
      if (err == 0) written_++;
      error_ = err;
      return err != 0 ? -err : static_cast<int64_t>(written_);
    }
    if (!thread_.joinable() && error_ == 0) thread_ = std::thread([this] { Run(); });
    space_.wait(lock, [&] { return error_ != 0 || bytes_ == 0 || bytes_ + p.len <= limit_; });
    if (error_ != 0) return -error_;
    bytes_ += p.len;
    queue_.push_back(p);
    work_.notify_one();
    return static_cast<int64_t>(written_);
  }

  // Waits until at least `count` pieces are written (all queued ones when count < 0), or a
  // failure. Returns pieces written so far, or -errno.
  int64_t Wait(int64_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] {
      return error_ != 0 || (count < 0 ? queue_.empty() && !busy_ : written_ >= static_cast<uint64_t>(count));
    });
    return error_ != 0 ? -error_ : static_cast<int64_t>(written_);
  }

  // Pieces written so far (or failed and dropped): the caller may let go of the first this many.
  uint64_t Released() {
    std::lock_guard<std::mutex> lock(mu_);
    return released_;
  }

  void Stop() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_) return;
      done_.wait(lock, [&] { return error_ != 0 || (queue_.empty() && !busy_); });
      stop_ = true;
      work_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    pthread_setname_np(pthread_self(), "layerfs-out");  // ps -L, /proc/<pid>/task/*/comm
    std::vector<struct iovec> iov;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      iov.clear();
      size_t len = 0;
      for (size_t i = 0; i < queue_.size() && iov.size() < kMaxIov; i++) {
        iov.push_back({const_cast<uint8_t*>(queue_[i].data), queue_[i].len});
        len += queue_[i].len;
      }
      const size_t taken = iov.size();
      const bool skip = error_ != 0;
      busy_ = true;
      lock.unlock();
      const int err = skip ? 0 : WriteAllv(fd_, iov.data(), static_cast<int>(taken));
      lock.lock();
      busy_ = false;
      for (size_t i = 0; i < taken; i++) queue_.pop_front();
      bytes_ -= len;
      released_ += taken;
      if (err == 0 && !skip) written_ += taken;
      if (err != 0 && error_ == 0) error_ = err;
      space_.notify_all();
      done_.notify_all();
    }
  }

  const int fd_;
  const size_t limit_;
  std::mutex mu_;
  std::condition_variable work_, space_, done_;
  std::deque<Piece> queue_;
  std::thread thread_;
  size_t bytes_ = 0;
  uint64_t written_ = 0;
  uint64_t released_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  int error_ = 0;
};

// new FdOutput(fd, limitBytes, pipeBytes): pipeBytes > 0 enlarges a pipe to that size (best
// effort; `pipeSize` tells the size it has, 0 when fd is not a pipe).
class FdOutputJs : public Napi::ObjectWrap<FdOutputJs> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FdOutput",
                       {InstanceMethod<&FdOutputJs::PutJs>("put"), InstanceMethod<&FdOutputJs::WaitJs>("wait"),
                        InstanceMethod<&FdOutputJs::CloseJs>("close"), InstanceAccessor<&FdOutputJs::PipeSize>("pipeSize")});
  }

  explicit FdOutputJs(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FdOutputJs>(info) {
    Napi::Env env = info.Env();
    const int fd = GetFd(env, info[0]);
    const double limit = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : 16.0 * 1048576;
    const double pipe = info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : 0;
    if (!(limit >= 1 && limit <= 1099511627776.0)) throw Napi::RangeError::New(env, "limit must be 1 byte to 1 TiB");
    if (!(pipe >= 0 && pipe <= 1073741824.0)) throw Napi::RangeError::New(env, "pipe size must be 0 to 1 GiB");
    struct stat st;
    // A descriptor that is not open fails at the first write (EBADF), like any other write error.
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
#ifdef F_SETPIPE_SZ
      if (pipe > 0) (void)fcntl(fd, F_SETPIPE_SZ, static_cast<int>(pipe));  // EPERM over the user's limit: kept as is
      const int size = fcntl(fd, F_GETPIPE_SZ);
      pipe_size_ = size > 0 ? size : 0;
#endif
    }
    out_ = std::make_unique<Output>(fd, static_cast<size_t>(limit));
  }

  ~FdOutputJs() override { out_.reset(); }  // waits for the queue, then the buffers are let go

 private:
  // put(buffer) -> pieces written so far, or -errno of the first failure (then nothing is queued).
  Napi::Value PutJs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!out_) throw Napi::Error::New(env, "the output is closed");
    Bytes b = GetBytes(env, info[0], "buffer");
    Release();
    if (b.size == 0) return Napi::Number::New(env, static_cast<double>(out_->Wait(0)));
    const int64_t r = out_->Put(Piece{b.data, b.size});
    if (r >= 0) held_.push_back(Napi::Persistent(info[0].As<Napi::Object>()));
    return Napi::Number::New(env, static_cast<double>(r));
  }

  // wait(count) -> pieces written so far once at least `count` are (every queued one for -1), or -errno.
  Napi::Value WaitJs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!out_) throw Napi::Error::New(env, "the output is closed");
    const int64_t count = info[0].IsNumber() ? info[0].As<Napi::Number>().Int64Value() : -1;
    const int64_t r = out_->Wait(count);
    Release();
    return Napi::Number::New(env, static_cast<double>(r));
  }

  // close(): waits for the queue (or a failure), ends the thread and lets go of the buffers.
  Napi::Value CloseJs(const Napi::CallbackInfo& info) {
    out_.reset();
    for (auto& r : held_) r.Reset();
    held_.clear();
    return info.Env().Undefined();
  }

  Napi::Value PipeSize(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), pipe_size_); }

  // Lets go of the buffers the thread is done with (oldest first).
  void Release() {
    const uint64_t released = out_->Released();
    while (first_ < released && !held_.empty()) {
      held_.front().Reset();
      held_.pop_front();
      first_++;
    }
  }

  std::unique_ptr<Output> out_;
  std::deque<Napi::ObjectReference> held_;
  uint64_t first_ = 0;  // pieces let go of so far
  int pipe_size_ = 0;
};

}  // namespace

void InitFdOutput(Napi::Env env, Napi::Object exports) { exports.Set("FdOutput", FdOutputJs::Define(env)); }

}  // namespace layerfs
