// Write-behind for spool files: the FUSE serving thread hands a WRITE's payload over and replies
// at once, while a background thread does the pwrite(2) into the spool file (the
// page-cache copy that made up most of a WRITE's round trip). Pending bytes are bounded: a
// hand-over waits while the buffer is full. Anything that reads or changes the spool file other
// than by writing first waits for that descriptor's pending writes (writeBehindDrain). The first
// failure of a background pwrite on a descriptor is kept and returned by its next hand-over or
// drain, never dropped.
//
// A payload of at least kTakeMin bytes that lies in the buffer its request was read into
// (request_pool.h) is not copied: the job takes that buffer and gives it back once written.
// Others are copied into a buffer of the queue. $LAYERFS_WRITE_HANDOVER=0 copies every payload.
//
// Large aligned pieces are written through the page cache or with O_DIRECT (through a second
// descriptor on the same file), whichever the write-behind thread finds faster (spool_mode.h;
// $LAYERFS_SPOOL_DIRECT=0 or 1 fixes one): where pages are recycled the page cache took a 1 GiB
// write at 2.2x the O_DIRECT rate and served its read-back at 2.2x, where the host had taken the
// free pages back it ran at a third of it (docs/DECISIONS.md, "Spool writes: page cache or
// O_DIRECT, whichever is faster").
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock.h"
#include "direct_files.h"
#include "direct_read_ahead.h"
#include "napi_util.h"
#include "request_pool.h"
#include "spool_mode.h"

namespace layerfs {

namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

struct Job {
  int fd;
  int64_t pos;
  size_t len;
  const uint8_t* bytes;  // the payload: in data, or in the request buffer slot
  int slot;              // the request buffer taken (RequestPool), or -1
  size_t capacity;
  Buffer data;
};

// Payloads this long or longer are taken as they lie in their request buffer.
constexpr size_t kTakeMin = 64u << 10;

// Pieces written with O_DIRECT: page-aligned offset and length, at least this long (smaller
// writes wait for the disk each time; they stay buffered).
constexpr size_t kDirectAlign = 4096;
constexpr size_t kDirectMin = 128u << 10;

// A buffer for a piece of len bytes: page-aligned (O_DIRECT needs it), its capacity rounded up.
Buffer NewBuffer(size_t len, size_t* capacity) {
  *capacity = (len + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, *capacity));
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(p);
}

// Writes all of [data, data + len) at pos; 0 or errno. On a direct descriptor, EINVAL (an
// alignment the file system refuses) returns at once with *done telling how much was written.
int WriteAll(int fd, const uint8_t* data, size_t len, int64_t pos, size_t* done) {
  while (*done < len) {
    const ssize_t n = pwrite(fd, data + *done, len - *done, pos + static_cast<int64_t>(*done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    *done += static_cast<size_t>(n);
  }
  return 0;
}

// Buffers are kept for reuse (at most a quarter of the queue bound): a fresh 1 MiB allocation per
// WRITE would be mmap'ed, faulted in and zeroed by the kernel each time, as costly as the copy.
constexpr size_t kMinBuffer = 1u << 20;

struct PerFd {
  size_t pending = 0;  // jobs queued or being written
  int error = 0;       // first failure (errno) not yet reported
};

class WriteBehind {
 public:
  WriteBehind(size_t limit, bool handover) : limit_(limit), mode_(SpoolMode::FromEnv()), handover_(handover) {}

  // Queues a copy of [data, data + len) for pwrite at pos; 0, or -errno of an earlier failure
  // on fd (then nothing is queued and the error is reported, once).
  int Put(int fd, const uint8_t* data, size_t len, int64_t pos) {
    Changed();
    std::unique_lock<std::mutex> lock(mu_);
    if (int e = TakeError(fd)) return -e;
    space_.wait(lock, [&] { return bytes_ == 0 || bytes_ + len <= limit_; });
    if (int e = TakeError(fd)) return -e;
    Job job{fd, pos, len, data, -1, 0, nullptr};
    if (handover_ && len >= kTakeMin) job.slot = RequestPool::Get().Take(data, len);
    if (job.slot < 0) {
      TakeSpare(&job);
      lock.unlock();
      if (!job.data) job.data = NewBuffer(len < kMinBuffer ? kMinBuffer : len, &job.capacity);
      std::memcpy(job.data.get(), data, len);
      job.bytes = job.data.get();
      lock.lock();
    }
    bytes_ += len;
    fds_[fd].pending++;
    queue_.push_back(std::move(job));
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    work_.notify_one();
    return 0;
  }

  // Waits until every write handed over for fd is done; 0, or -errno of a failure (reported once).
  // With release, also closes the direct descriptor opened for fd (fd is about to be closed).
  int Drain(int fd, bool release) {
    if (release) ReadAheads::Get().StopFile(fd);
    std::unique_lock<std::mutex> lock(mu_);
    const bool known = fds_.count(fd) != 0;
    if (known) done_.wait(lock, [&] { return fds_[fd].pending == 0; });
    // Nothing queued: the request buffers no one holds give their pages back (request_pool.h).
    if (known && bytes_ == 0) RequestPool::Get().Trim();
    if (release) {
      auto d = direct_fds_.find(fd);
      if (d != direct_fds_.end()) {
        if (d->second >= 0) CloseDirect(d->second);
        direct_fds_.erase(d);
      }
    }
    if (!known) return 0;
    const int e = TakeError(fd);
    return -e;
  }

  // pread(2) of [pos, pos + len) of fd into dst, the caller having drained fd's writes. A file
  // written with O_DIRECT is read with O_DIRECT too, so its bytes do not fill the page cache:
  // through a window of kWindow bytes per thread (readers ask for 64 KiB pieces at any offset,
  // each its own O_DIRECT read would wait for the disk), valid until the next write or truncate
  // of any file (generation_). Bytes read (fewer only at the end of the file), or -errno.
  ssize_t Read(int fd, uint8_t* dst, size_t len, int64_t pos) {
    size_t got = 0;
    struct stat st;
    // By file, not by descriptor: the reader (a commit) may have opened the spool file itself.
    if (mode_.MayDirect() && fstat(fd, &st) == 0 && DirectFiles::Get().Has(st.st_dev, st.st_ino)) {
      const int r = ReadWindowed(fd, st, dst, len, pos, &got);
      if (r > 0) return static_cast<ssize_t>(got);  // the end of the file
    }
    while (got < len) {
      const ssize_t n = pread(fd, dst + got, len - got, pos + static_cast<int64_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -errno;
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(got);
  }

  // A write or truncate of a spool file is coming: every read window is stale.
  void Changed() { generation_.fetch_add(1, std::memory_order_relaxed); }

 private:
  static constexpr size_t kWindow = 1u << 20;
  struct Window {
    uint64_t dev = 0, ino = 0, generation = 0;
    int64_t off = -1;
    size_t len = 0;
    Buffer data;
  };

  static bool Holds(const Window& w, int64_t cur) { return w.off >= 0 && cur >= w.off && cur < w.off + static_cast<int64_t>(w.len); }
  // The window ended short (the end of the file) before cur, which it would have covered.
  static bool EndsBefore(const Window& w, int64_t cur) {
    return w.off >= 0 && w.len < kWindow && cur >= w.off + static_cast<int64_t>(w.len) && cur < w.off + static_cast<int64_t>(kWindow);
  }
  // cur follows a whole window: the reads run on sequentially.
  static bool WholeBefore(const Window& w, int64_t cur) { return w.off >= 0 && w.len == kWindow && cur == w.off + static_cast<int64_t>(kWindow); }

  // Reads the window at cur (a direct descriptor opened into *direct when none is); -1 when it
  // holds cur, 1 when the file ends before cur, 0 when O_DIRECT failed.
  static int Refill(int fd, const struct stat& st, uint64_t gen, int64_t cur, Window* w, int* direct) {
    if (*direct < 0) {
      char path[64];
      snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
      *direct = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (*direct < 0) return 0;
    }
    if (!w->data) {
      size_t cap = 0;
      w->data = NewBuffer(kWindow, &cap);
    }
    const int64_t at = cur / static_cast<int64_t>(kDirectAlign) * static_cast<int64_t>(kDirectAlign);
    ssize_t n;
    do n = pread(*direct, w->data.get(), kWindow, at);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
      w->off = -1;
      return 0;
    }
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    w->generation = gen;
    w->off = at;
    w->len = static_cast<size_t>(n);
    return cur >= at + n ? 1 : -1;
  }

  // Fills dst from the thread's window over fd's file, refilling it with O_DIRECT reads (or from
  // its read-ahead, once the reads run on past a window); 1 at the end of the file, 0 when the
  // rest (from *got on) is left to a buffered read (a failure, which that read reports, or
  // O_DIRECT refused).
  int ReadWindowed(int fd, const struct stat& st, uint8_t* dst, size_t len, int64_t pos, size_t* got) {
    thread_local Window w;
    thread_local ThreadAhead a;
    const uint64_t gen = generation_.load(std::memory_order_relaxed);
    if (w.dev != static_cast<uint64_t>(st.st_dev) || w.ino != static_cast<uint64_t>(st.st_ino) || w.generation != gen) w.off = -1;
    if (a.ra && (a.dev != static_cast<uint64_t>(st.st_dev) || a.ino != static_cast<uint64_t>(st.st_ino) || a.generation != gen)) a.Drop();
    int direct = -1;
    int result = 0;
    while (*got < len) {
      const int64_t cur = pos + static_cast<int64_t>(*got);
      if (a.ra) {
        bool rest = false;
        const int r = a.Read(dst, len, cur, got, &rest);
        if (r == 1) result = 1;
        if (r == 1 || rest) break;
        if (r < 0) continue;
      }
      if (!Holds(w, cur)) {
        if (EndsBefore(w, cur)) {
          result = 1;  // the window ended short: the file ends before cur
          break;
        }
        // Reads that run on from a whole window to the next: read ahead from here.
        if (WholeBefore(w, cur) && ReadAheads::Get().Start(fd, st, gen, cur, &a)) {
          w.off = -1;
          continue;
        }
        const int r = Refill(fd, st, gen, cur, &w, &direct);
        if (r == 1) result = 1;
        if (r >= 0) break;
      }
      const size_t in = static_cast<size_t>(cur - w.off);
      const size_t n = w.len - in < len - *got ? w.len - in : len - *got;
      std::memcpy(dst + *got, w.data.get() + in, n);
      *got += n;
    }
    if (direct >= 0) close(direct);
    return result;
  }

 public:
  size_t Pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

  const SpoolMode& Mode() const { return mode_; }

 private:
  // A kept buffer for job (mu_ held), when one is large enough.
  void TakeSpare(Job* job) {
    for (size_t i = spare_.size(); i-- > 0;) {
      if (spare_[i].second < job->len) continue;
      job->data = std::move(spare_[i].first);
      job->capacity = spare_[i].second;
      spare_bytes_ -= job->capacity;
      spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }

  int TakeError(int fd) {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return 0;
    const int e = it->second.error;
    it->second.error = 0;
    if (it->second.pending == 0) fds_.erase(it);
    return e;
  }

  // Whether the piece may be written with O_DIRECT: large enough, its offset, length and bytes
  // page-aligned, and O_DIRECT not turned off.
  bool Large(const Job& job) const {
    if (!mode_.MayDirect() || job.len < kDirectMin || job.len % kDirectAlign != 0 || job.pos % kDirectAlign != 0) return false;
    return reinterpret_cast<uintptr_t>(job.bytes) % kDirectAlign == 0;
  }

  // The O_DIRECT descriptor for fd's file (opened once, through the /proc/self/fd link, which
  // must be followed), or -1 when the file refuses O_DIRECT. Called with mu_ held, for a Large
  // piece; only this thread uses the result, and only while fd has a job pending (so Drain(fd,
  // true) cannot close it meanwhile).
  int DirectFor(const Job& job) {
    auto it = direct_fds_.find(job.fd);
    if (it != direct_fds_.end()) return it->second;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", job.fd);
    int d = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
    struct stat st;
    if (d >= 0 && fstat(d, &st) != 0) {
      close(d);
      d = -1;
    }
    if (d >= 0) DirectFiles::Get().Add(st.st_dev, st.st_ino);
    direct_fds_[job.fd] = d;
    return d;
  }

  // Closes fd's direct descriptor; its file is read through the page cache again.
  static void CloseDirect(int d) {
    struct stat st;
    if (fstat(d, &st) == 0) DirectFiles::Get().Remove(st.st_dev, st.st_ino);
    close(d);
  }

  // The direct descriptor of fd refused a write (EINVAL: alignment): fd's pieces stay buffered.
  void NoDirect(int fd, int d) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = direct_fds_.find(fd);
    if (it != direct_fds_.end() && it->second == d) {
      CloseDirect(d);
      it->second = -1;
    }
  }

  void Run() {
    pthread_setname_np(pthread_self(), "layerfs-spoolwb");  // ps -L, /proc/<pid>/task/*/comm
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return !queue_.empty(); });
      Job job = std::move(queue_.front());
      queue_.pop_front();
      const bool failed_before = fds_[job.fd].error != 0;
      const bool large = !failed_before && Large(job);
      const int direct = large && mode_.Direct() ? DirectFor(job) : -1;
      lock.unlock();
      int err = 0;
      if (!failed_before) {
        size_t done = 0;
        const int64_t t0 = large ? MonotonicNs() : 0;
        if (direct >= 0 && WriteAll(direct, job.bytes, job.len, job.pos, &done) == EINVAL) NoDirect(job.fd, direct);
        const bool wrote_direct = done == job.len;
        if (done < job.len) err = WriteAll(job.fd, job.bytes, job.len, job.pos, &done);
        if (large && err == 0) mode_.Took(wrote_direct, job.len, static_cast<uint64_t>(MonotonicNs() - t0));
        // Again once the bytes are in the file: a window read meanwhile may hold the old ones.
        Changed();
      }
      if (job.slot >= 0) RequestPool::Get().Untake(job.slot);
      lock.lock();
      if (job.data && spare_bytes_ + job.capacity <= limit_ / 4) {
        spare_bytes_ += job.capacity;
        spare_.emplace_back(std::move(job.data), job.capacity);
      }
      job.data.reset();
      PerFd& f = fds_[job.fd];
      if (err != 0 && f.error == 0) f.error = err;
      f.pending--;
      bytes_ -= job.len;
      space_.notify_all();
      if (f.pending == 0) done_.notify_all();
    }
  }

  const size_t limit_;
  std::mutex mu_;
  std::condition_variable work_, space_, done_;
  std::deque<Job> queue_;
  std::unordered_map<int, PerFd> fds_;
  std::vector<std::pair<Buffer, size_t>> spare_;
  SpoolMode mode_;  // only this class's thread decides and records; others read its counters
  const bool handover_;
  std::unordered_map<int, int> direct_fds_;  // fd -> its O_DIRECT descriptor, -1 when none
  size_t spare_bytes_ = 0;
  size_t bytes_ = 0;
  bool started_ = false;
  std::atomic<uint64_t> generation_{0};
};

// One per process (the addon is loaded once; every serving thread shares it), never destroyed:
// its thread may still be writing while the process exits, which loses only spool bytes.
// Bound of the queue: 32 MiB, or $LAYERFS_WRITE_BEHIND_QUEUE_MIB (1-1024), read once.
WriteBehind& Instance() {
  static WriteBehind* wb = [] {
    const char* env = getenv("LAYERFS_WRITE_BEHIND_QUEUE_MIB");
    long mib = env != nullptr ? strtol(env, nullptr, 10) : 32;
    if (mib < 1 || mib > 1024) mib = 32;
    const char* handover = getenv("LAYERFS_WRITE_HANDOVER");
    return new WriteBehind(static_cast<size_t>(mib) << 20, handover == nullptr || std::strcmp(handover, "0") != 0);
  }();
  return *wb;
}

// writeBehind(fd, buffer, position) -> 0 once queued, or -errno of an earlier failure on fd.
Napi::Value Put(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  Bytes b = GetBytes(env, info[1], "buffer");
  const int64_t pos = GetPosition(env, info[2]);
  if (b.size == 0) return Napi::Number::New(env, 0);
  return Napi::Number::New(env, Instance().Put(fd, b.data, b.size, pos));
}

// writeBehindDrain(fd, release?) -> 0 once fd has no pending write, or -errno of a failure since
// the last report. release: fd is about to be closed (its direct descriptor is closed now).
Napi::Value Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const bool release = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
  return Napi::Number::New(env, Instance().Drain(GetFd(env, info[0]), release));
}

// writeBehindRead(fd, buffer, position) -> bytes read into buffer (fewer at the end of the file), or -errno.
Napi::Value Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = GetFd(env, info[0]);
  Bytes b = GetBytes(env, info[1], "buffer");
  const int64_t pos = GetPosition(env, info[2]);
  uint8_t* dst = const_cast<uint8_t*>(b.data);
  return Napi::Number::New(env, static_cast<double>(Instance().Read(fd, dst, b.size, pos)));
}

// writeBehindChanged() -> undefined: a spool file is about to change other than by writeBehind
// (a truncate); windows read ahead by writeBehindRead are dropped.
Napi::Value Changed(const Napi::CallbackInfo& info) {
  Instance().Changed();
  return info.Env().Undefined();
}

// writeBehindPending() -> bytes handed over and not yet written (all descriptors).
Napi::Value Pending(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Instance().Pending()));
}

// writeBehindModes() -> { direct, buffered, switches }: large aligned pieces written each way,
// and switches of the automatic mode between them, since the process started (spool_mode.h).
Napi::Value Modes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const SpoolMode& m = Instance().Mode();
  Napi::Object out = Napi::Object::New(env);
  out.Set("direct", Napi::Number::New(env, static_cast<double>(m.direct_pieces())));
  out.Set("buffered", Napi::Number::New(env, static_cast<double>(m.buffered_pieces())));
  out.Set("switches", Napi::Number::New(env, static_cast<double>(m.switches())));
  return out;
}

}  // namespace

void InitWriteBehind(Napi::Env env, Napi::Object exports) {
  exports.Set("writeBehind", Napi::Function::New<Put>(env, "writeBehind"));
  exports.Set("writeBehindDrain", Napi::Function::New<Drain>(env, "writeBehindDrain"));
  exports.Set("writeBehindRead", Napi::Function::New<Read>(env, "writeBehindRead"));
  exports.Set("writeBehindChanged", Napi::Function::New<Changed>(env, "writeBehindChanged"));
  exports.Set("writeBehindPending", Napi::Function::New<Pending>(env, "writeBehindPending"));
  exports.Set("writeBehindModes", Napi::Function::New<Modes>(env, "writeBehindModes"));
}

}  // namespace layerfs
