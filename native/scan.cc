#include "scan.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>

namespace layerfs {

namespace {

// Whole-file reads are issued in pieces of this size so a cancelled job stops promptly; streamed
// reads (readData=false, or a file over maxDataSize) use a per-thread buffer of kStreamPiece,
// bounding memory per worker.
constexpr size_t kPiece = 8u << 20;
constexpr size_t kStreamPiece = 1u << 20;
// Node 20's buffer.constants.MAX_LENGTH.
constexpr size_t kMaxDataLen = size_t{1} << 32;

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool Unchanged(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         SameTime(a.st_mtim, b.st_mtim) && SameTime(a.st_ctim, b.st_ctim);
}

void Fail(ScanResult* out, const char* syscall, int err) {
  out->error_code = "ERR_NATIVE_IO";
  out->error_errno = err;
  char buf[256];
  out->error_message = std::string(syscall) + " failed: " + strerror_r(err, buf, sizeof(buf));
}

ssize_t PreadFull(int fd, uint8_t* p, size_t n, off_t off) {
  for (;;) {
    const ssize_t r = pread(fd, p, n, off);
    if (r >= 0 || errno != EINTR) return r;
  }
}

enum class ReadOutcome { kOk, kChanged, kError, kCancelled };

template <typename Sink>
ReadOutcome ReadFile(int fd, size_t size, size_t piece, uint8_t* buf, bool advance_buf,
                     const std::atomic<bool>* cancel, int* err, Sink&& sink) {
  size_t off = 0;
  while (off < size) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return ReadOutcome::kCancelled;
    const size_t want = size - off < piece ? size - off : piece;
    uint8_t* dst = advance_buf ? buf + off : buf;
    const ssize_t r = PreadFull(fd, dst, want, static_cast<off_t>(off));
    if (r < 0) {
      *err = errno;
      return ReadOutcome::kError;
    }
    if (r == 0) return ReadOutcome::kChanged;  // shrank under us
    sink(dst, static_cast<size_t>(r));
    off += static_cast<size_t>(r);
  }
  uint8_t probe;
  const ssize_t r = PreadFull(fd, &probe, 1, static_cast<off_t>(size));
  if (r < 0) {
    *err = errno;
    return ReadOutcome::kError;
  }
  return r > 0 ? ReadOutcome::kChanged : ReadOutcome::kOk;  // grew under us
}

template <typename ListFn, typename GetFn>
int CollectXattrs(ListFn list, GetFn get, bool user_only, bool with_values,
                  std::vector<Xattr>* out) {
  std::vector<char> names;
  for (int attempt = 0;; attempt++) {
    ssize_t n = list(nullptr, 0);
    if (n < 0) return (errno == ENOTSUP || errno == ENODATA) ? 0 : errno;
    if (n == 0) return 0;
    names.resize(static_cast<size_t>(n));
    n = list(names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno != ERANGE || attempt > 8) return errno;
  }
  for (size_t i = 0; i < names.size();) {
    const char* name = names.data() + i;
    const size_t len = strnlen(name, names.size() - i);
    i += len + 1;
    if (len == 0) continue;
    // Compare within the entry: the last one need not be NUL-terminated, and strncmp would read
    // past the buffer for a shorter name (found by fuzz/xattr_list.cc).
    if (user_only && (len < 5 || memcmp(name, "user.", 5) != 0)) continue;
    Xattr x;
    x.name.assign(name, len);
    if (with_values) {
      bool gone = false;
      for (int attempt = 0;; attempt++) {
        ssize_t n = get(x.name.c_str(), nullptr, 0);
        if (n < 0) {
          if (errno == ENODATA) {
            gone = true;  // removed since the listing
            break;
          }
          return errno;
        }
        x.value.resize(static_cast<size_t>(n));
        if (n == 0) break;
        n = get(x.name.c_str(), x.value.data(), x.value.size());
        if (n >= 0) {
          x.value.resize(static_cast<size_t>(n));
          break;
        }
        if (errno != ERANGE || attempt > 8) return errno;
      }
      if (gone) continue;
    }
    out->push_back(std::move(x));
  }
  return 0;
}

int PathXattrs(const char* path, bool user_only, bool with_values, std::vector<Xattr>* out) {
  return CollectXattrs(
      [path](char* b, size_t n) { return llistxattr(path, b, n); },
      [path](const char* name, void* b, size_t n) { return lgetxattr(path, name, b, n); },
      user_only, with_values, out);
}

int FdXattrs(int fd, std::vector<Xattr>* out) {
  return CollectXattrs([fd](char* b, size_t n) { return flistxattr(fd, b, n); },
                       [fd](const char* name, void* b, size_t n) {
                         return fgetxattr(fd, name, b, n);
                       },
                       true, true, out);
}

int ReadLink(const char* path, size_t hint, std::string* out) {
  size_t cap = hint > 0 ? hint + 1 : 256;
  for (;;) {
    out->resize(cap);
    const ssize_t r = readlink(path, &(*out)[0], cap);
    if (r < 0) return errno;
    if (static_cast<size_t>(r) < cap) {
      out->resize(static_cast<size_t>(r));
      return 0;
    }
    cap *= 2;  // the link was replaced by a longer one, or st_size was 0 (procfs)
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// A share of the batch's data budget, given back unless the bytes end up in the result.
class Reservation {
 public:
  Reservation(std::atomic<uint64_t>* pool, uint64_t limit, uint64_t n) {
    if (limit == UINT64_MAX || !pool) {
      ok_ = true;
      return;
    }
    const uint64_t before = pool->fetch_add(n, std::memory_order_relaxed);
    if (before + n <= limit && before + n >= before) {
      ok_ = true;
      pool_ = pool;
      n_ = n;
    } else {
      pool->fetch_sub(n, std::memory_order_relaxed);
    }
  }
  ~Reservation() {
    if (pool_) pool_->fetch_sub(n_, std::memory_order_relaxed);
  }
  bool ok() const { return ok_; }
  void Commit() { pool_ = nullptr; }

 private:
  bool ok_ = false;
  std::atomic<uint64_t>* pool_ = nullptr;
  uint64_t n_ = 0;
};

// Arena mode: claims `n` bytes of the arena for good (a failed attempt leaves a hole rather than
// hand back a range another worker may be writing after). Returns false if they do not fit.
bool ClaimArena(std::atomic<uint64_t>* fill, size_t arena_size, size_t n, size_t* offset) {
  uint64_t cur = fill->load(std::memory_order_relaxed);
  do {
    if (n > arena_size || cur > arena_size - n) return false;
  } while (!fill->compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  *offset = static_cast<size_t>(cur);
  return true;
}

// Opens the file lstat described and fstats it. Returns the fd, or -1 with *failed saying whether
// `out` records an error (true) or the file changed since lstat and should be retried (false).
int OpenRegular(const std::string& path, const struct stat& lst, struct stat* st, ScanResult* out,
                bool* failed) {
  *failed = true;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    // ELOOP: replaced by a symlink since lstat; ENOENT: removed since lstat. Both are a change.
    if (errno == ELOOP || errno == ENOENT) {
      *failed = false;
    } else {
      Fail(out, "open", errno);
    }
    return -1;
  }
  if (fstat(fd, st) != 0) {
    Fail(out, "fstat", errno);
    close(fd);
    return -1;
  }
  if (!S_ISREG(st->st_mode) || st->st_dev != lst.st_dev || st->st_ino != lst.st_ino) {
    *failed = false;
    close(fd);
    return -1;
  }
  return fd;
}

// Xattrs come from the open fd so they belong to the same file as the stat. Returns false if
// `out` now records an error.
bool RecordMetadata(int fd, const struct stat& st, const ScanOptions& opts, ScanResult* out) {
  if (opts.xattrs) {
    const int xe = FdXattrs(fd, &out->xattrs);
    if (xe != 0) {
      Fail(out, "flistxattr", xe);
      return false;
    }
  }
  out->st = st;
  return true;
}

// Reads the whole file into `dst`; hashing waits until the read is known to be stable.
ReadOutcome ReadWhole(int fd, size_t size, uint8_t* dst, const std::atomic<bool>* cancel,
                      int* err) {
  return ReadFile(fd, size, kPiece, dst, true, cancel, err, [](const uint8_t*, size_t) {});
}

// Digests the file without keeping its bytes, through a per-thread buffer of kStreamPiece.
ReadOutcome StreamDigestFile(int fd, size_t size, const DigestOptions& options, bool chunked,
                             const std::atomic<bool>* cancel, int* err, Digest* digest) {
  static thread_local std::vector<uint8_t> piece;
  if (piece.size() < kStreamPiece) piece.resize(kStreamPiece);
  StreamDigest sd(options, chunked);
  const ReadOutcome outcome =
      ReadFile(fd, size, kStreamPiece, piece.data(), false, cancel, err,
               [&sd](const uint8_t* p, size_t n) { sd.Update(p, n); });
  if (outcome == ReadOutcome::kOk) sd.Finish(digest);
  return outcome;
}

// A read only counts if the file still matches the stat taken before it.
ReadOutcome CheckStable(int fd, const struct stat& before, ReadOutcome outcome, int* err) {
  if (outcome != ReadOutcome::kOk) return outcome;
  struct stat after;
  if (fstat(fd, &after) != 0) {
    *err = errno;
    return ReadOutcome::kError;
  }
  return Unchanged(before, after) ? ReadOutcome::kOk : ReadOutcome::kChanged;
}

// Returns false for a change (retry), true once the failure is recorded in `out`.
bool RecordFailedRead(ReadOutcome outcome, int err, ScanResult* out) {
  if (outcome == ReadOutcome::kChanged) return false;
  if (outcome == ReadOutcome::kCancelled) {
    out->error_code = "ERR_NATIVE";
    out->error_message = "cancelled";
  } else {
    Fail(out, "read", err);
  }
  return true;
}

// One attempt at a regular file. Returns false if it changed and should be retried.
bool ScanRegular(const std::string& path, const struct stat& lst, const ScanOptions& opts,
                 const std::atomic<bool>* cancel, std::atomic<uint64_t>* batch_data,
                 ScanResult* out) {
  struct stat st1;
  bool failed = false;
  Fd fd(OpenRegular(path, lst, &st1, out, &failed));
  if (fd.get() < 0) return failed;

  const size_t size = static_cast<size_t>(st1.st_size);
  const bool chunked = size >= opts.digest.small_threshold;
  const bool fits = opts.read_data && size <= opts.max_data_size;
  const bool arena = opts.arena != nullptr;
  Reservation budget(arena ? nullptr : batch_data, opts.max_batch_data, fits && !arena ? size : 0);
  size_t arena_offset = 0;
  const bool keep = fits && (arena ? ClaimArena(batch_data, opts.arena_size, size, &arena_offset) : budget.ok());
  if (opts.read_data && !keep && !opts.digest_oversize) {
    // Metadata only: the caller reads this file itself (e.g. with readChunks, which checks that it
    // is still the file described here).
    RecordMetadata(fd.get(), st1, opts, out);
    return true;
  }
  if (keep && size > kMaxDataLen) {
    // A JS Buffer cannot hold it; failing this entry beats failing the whole batch later.
    Fail(out, "read", EFBIG);
    out->error_message += " (larger than a Buffer can hold; scan it with readData: false or maxDataSize)";
    return true;
  }
  int err = 0;
  ReadOutcome outcome;
  uint8_t* data = nullptr;
  Digest digest;
  if (keep && arena) {
    outcome = ReadWhole(fd.get(), size, opts.arena + arena_offset, cancel, &err);
  } else if (keep) {
    data = static_cast<uint8_t*>(std::malloc(size > 0 ? size : 1));
    if (!data) {
      Fail(out, "malloc", ENOMEM);
      return true;
    }
    outcome = ReadWhole(fd.get(), size, data, cancel, &err);
  } else {
    outcome = StreamDigestFile(fd.get(), size, opts.digest, chunked, cancel, &err, &digest);
  }
  outcome = CheckStable(fd.get(), st1, outcome, &err);
  if (outcome != ReadOutcome::kOk) {
    std::free(data);
    return RecordFailedRead(outcome, err, out);
  }
  if (keep) {
    // Hash only a stable read: a retry would throw the work away.
    DigestBuffer(opts.digest, arena ? opts.arena + arena_offset : data, size, &digest);
    out->has_data = true;
    out->data = data;
    out->data_len = size;
    out->arena_offset = arena_offset;
    budget.Commit();
  }
  if (!RecordMetadata(fd.get(), st1, opts, out)) return true;
  out->digest = std::move(digest);
  out->has_digest = true;
  return true;
}

}  // namespace

ScanResult::~ScanResult() { std::free(data); }

std::string ErrnoName(int err) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* n = strerrorname_np(err)) return n;
#endif
  return "E" + std::to_string(err);
}

int ListUserXattrs(const char* path, std::vector<Xattr>* out, bool with_values) {
  return PathXattrs(path, true, with_values, out);
}

int ListAllXattrNames(const char* path, std::vector<std::string>* out) {
  std::vector<Xattr> xs;
  const int e = PathXattrs(path, false, false, &xs);
  for (auto& x : xs) out->push_back(std::move(x.name));
  return e;
}

void ScanPath(const std::string& path, const ScanOptions& opts, const std::atomic<bool>* cancel,
              std::atomic<uint64_t>* batch_data, ScanResult* out) {
  for (int attempt = 0; attempt <= opts.retries; attempt++) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      out->error_code = "ERR_NATIVE";
      out->error_message = "cancelled";
      return;
    }
    struct stat lst;
    if (lstat(path.c_str(), &lst) != 0) {
      Fail(out, "lstat", errno);
      return;
    }
    if (S_ISREG(lst.st_mode)) {
      if (ScanRegular(path, lst, opts, cancel, batch_data, out)) return;
      out->xattrs.clear();
      continue;
    }
    out->st = lst;
    if (S_ISLNK(lst.st_mode)) {
      const int e = ReadLink(path.c_str(), static_cast<size_t>(lst.st_size), &out->link_target);
      if (e == EINVAL || e == ENOENT) continue;  // no longer a symlink
      if (e != 0) {
        Fail(out, "readlink", e);
        return;
      }
      out->has_link = true;
    }
    if (opts.xattrs) {
      const int e = PathXattrs(path.c_str(), true, true, &out->xattrs);
      if (e != 0) {
        Fail(out, "llistxattr", e);
        return;
      }
    }
    return;
  }
  out->error_code = "ERR_FILE_CHANGED";
  out->error_errno = 0;
  out->error_message = "file kept changing while it was read (" +
                       std::to_string(opts.retries + 1) + " attempts)";
}

}  // namespace layerfs
