// Sequential O_DIRECT reads of one file, kept ahead of its reader by a thread of their own: the
// way through a spool file this process wrote with O_DIRECT (direct_files.h) for the commit's
// sequential reads (the spool read window of napi_write_behind.cc, the ChunkReader).
// A direct read waits for the disk and the kernel does no read-ahead for it, so read in place,
// 1 MiB at a time, the reader hashed nothing while it waited (a re-commit of a 512 MiB written
// file took 1.5-2.5 s longer than through the page cache, docs/BENCHMARKS.md). Here a thread
// fills kSlotSize slots in file order, up to kSlots of them ahead, while the reader cuts and
// hashes what the previous slots hold. Header-only, so the fuzz harnesses link the reader
// without the addon.
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace layerfs {

class DirectReadAhead {
 public:
  static constexpr size_t kAlign = 4096;
  static constexpr size_t kSlotSize = 4 * 1024 * 1024;
  static constexpr size_t kSlots = 3;

  // Takes `fd` (opened with O_DIRECT; closed here), read from `start` (a multiple of kAlign) on.
  DirectReadAhead(int fd, uint64_t start) : fd_(fd), next_(start), pos_(start) {}
  ~DirectReadAhead() { Stop(); }
  DirectReadAhead(const DirectReadAhead&) = delete;
  DirectReadAhead& operator=(const DirectReadAhead&) = delete;

  // Allocates the slots and starts the thread; false when either is not possible (the caller
  // then reads without this, and drops it).
  bool Start() {
    slots_.resize(kSlots);
    for (Slot& s : slots_) {
      s.data = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kSlotSize));
      if (s.data == nullptr) return false;
    }
    try {
      thread_ = std::thread([this] { Run(); });
    } catch (...) {
      return false;
    }
    return true;
  }

  // Ends the thread, closes the descriptor and frees the slots; a Read after it returns 0. Any
  // thread may call it (the file's descriptor is being closed: nothing may keep it open).
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    std::lock_guard<std::mutex> once(stop_mu_);
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& s : slots_) std::free(s.data);
    slots_.clear();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  // The file offset the next Read starts at.
  uint64_t Pos() {
    std::lock_guard<std::mutex> lock(mu_);
    return pos_;
  }

  // Every byte up to the end of the file was read: nothing more will come.
  bool AtEnd() {
    std::lock_guard<std::mutex> lock(mu_);
    if (slots_.empty()) return false;
    const Slot& s = slots_[cur_];
    return s.full && s.last && s.err == 0 && pos_ == s.off + s.len;
  }

  // Copies up to `want` bytes of the file from Pos() on into dst; returns how many. Fewer means
  // the end of the file (AtEnd), a read that failed (any errno: EINVAL when the file system
  // refuses O_DIRECT), or Stop: the caller reads the rest through its buffered descriptor,
  // which reports a real failure, and drops this.
  size_t Read(uint8_t* dst, size_t want) {
    size_t copied = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (copied < want && !stop_) {
      Slot& s = slots_[cur_];
      cv_.wait(lock, [&] { return s.full || stop_; });
      if (stop_ || s.err != 0 || pos_ >= s.off + s.len) break;  // stopped, failed, or the end
      const size_t at = static_cast<size_t>(pos_ - s.off);
      const size_t n = s.len - at < want - copied ? s.len - at : want - copied;
      std::memcpy(dst + copied, s.data + at, n);
      copied += n;
      pos_ += n;
      if (pos_ == s.off + s.len && !s.last) {
        s.full = false;
        cv_.notify_all();
        cur_ = (cur_ + 1) % slots_.size();
      }
    }
    return copied;
  }

 private:
  struct Slot {
    uint8_t* data = nullptr;
    uint64_t off = 0;  // of data[0] in the file
    size_t len = 0;
    int err = 0;
    bool last = false;  // the end of the file, or a failure: nothing follows this slot
    bool full = false;  // written by the filler, not yet read to its end
  };

  // The filler's read of the next kSlotSize bytes into `data`; sets *end at the end of the file.
  size_t ReadSlot(uint8_t* data, int* err, bool* end) {
    size_t got = 0;
    while (got < kSlotSize) {
      const ssize_t r = pread(fd_, data + got, kSlotSize - got, static_cast<off_t>(next_ + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        *err = errno;
        return got;
      }
      got += static_cast<size_t>(r);
      // Nothing, or a count that is not a whole number of blocks: the end of the file.
      if (r == 0 || static_cast<size_t>(r) % kAlign != 0) {
        *end = true;
        return got;
      }
    }
    return got;
  }

  void Run() {
    pthread_setname_np(pthread_self(), "layerfs-readahd");
    for (size_t k = 0;; k = (k + 1) % slots_.size()) {
      Slot& s = slots_[k];
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !s.full; });
        if (stop_) return;
      }
      // The slot is the filler's until it is marked full: the reader waits for that.
      int err = 0;
      bool end = false;
      const size_t got = ReadSlot(s.data, &err, &end);
      {
        std::lock_guard<std::mutex> lock(mu_);
        s.off = next_;
        s.len = got;
        s.err = err;
        s.last = end || err != 0;
        s.full = true;
      }
      cv_.notify_all();
      next_ += got;
      if (end || err != 0) return;
    }
  }

  int fd_;
  uint64_t next_;  // the filler's next file offset
  std::vector<Slot> slots_;
  std::thread thread_;
  std::mutex mu_;
  std::mutex stop_mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t pos_;    // the reader's next file offset
  size_t cur_ = 0;  // the slot the reader reads from
};

// A thread's read-ahead over one file, started when its reads of a spool file run on past the
// end of a whole read window (napi_write_behind.cc: a commit re-chunking a written file, a
// `cat` of one), valid while the file and the spool generation are those it started with.
struct ThreadAhead {
  uint64_t dev = 0, ino = 0, generation = 0;
  std::shared_ptr<DirectReadAhead> ra;

  void Drop() {
    if (ra) ra->Stop();
    ra.reset();
  }

  // Copies into dst from *got on while cur (the offset of dst[*got]) is where the read-ahead
  // stands; 1 at the end of the file, -1 when dst is full, 0 when the rest is left to the caller:
  // the reads are not sequential (the read-ahead is dropped), or a read came back short
  // (failed or stopped; *rest is set: the caller's buffered read reports a failure).
  int Read(uint8_t* dst, size_t len, int64_t cur, size_t* got, bool* rest) {
    if (static_cast<uint64_t>(cur) != ra->Pos()) {
      Drop();
      return 0;
    }
    *got += ra->Read(dst + *got, len - *got);
    if (ra->AtEnd()) {
      Drop();
      return *got < len ? 1 : -1;
    }
    if (*got < len) {
      Drop();
      *rest = true;
      return 0;
    }
    return -1;
  }
};

// Every thread's read-ahead, by file, so that closing a spool file's descriptor stops those over
// it (a read-ahead must not keep a removed spool file's blocks allocated). One per process.
class ReadAheads {
 public:
  static ReadAheads& Get() {
    static ReadAheads* r = new ReadAheads();  // never destroyed: threads may use it at exit
    return *r;
  }

  // Starts a read-ahead over fd's file (fstat: st) from `at` into *a; false when none could.
  bool Start(int fd, const struct stat& st, uint64_t generation, int64_t at, ThreadAhead* a) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const int d = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (d < 0) return false;
    auto ra = std::make_shared<DirectReadAhead>(d, static_cast<uint64_t>(at));
    if (!ra->Start()) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = all_.size(); i-- > 0;) {
        if (all_[i].ra.expired()) all_.erase(all_.begin() + static_cast<std::ptrdiff_t>(i));
      }
      all_.push_back({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), ra});
    }
    a->dev = static_cast<uint64_t>(st.st_dev);
    a->ino = static_cast<uint64_t>(st.st_ino);
    a->generation = generation;
    a->ra = std::move(ra);
    return true;
  }

  // Stops every read-ahead over fd's file (fd is about to be closed).
  void StopFile(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    std::vector<std::shared_ptr<DirectReadAhead>> stop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& e : all_) {
        auto ra = e.ra.lock();
        if (ra && e.dev == static_cast<uint64_t>(st.st_dev) && e.ino == static_cast<uint64_t>(st.st_ino)) stop.push_back(ra);
      }
    }
    for (auto& ra : stop) ra->Stop();
  }

 private:
  struct Entry {
    uint64_t dev, ino;
    std::weak_ptr<DirectReadAhead> ra;
  };
  std::mutex mu_;
  std::vector<Entry> all_;
};

}  // namespace layerfs
