#include "chunk_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "direct_files.h"
#include "direct_read_ahead.h"
#include "objectid.h"

namespace layerfs {

namespace {

// Chunks hashed per MultiHasher call: enough to keep the 16 SIMD lanes busy while the chunks
// are still in cache from the cut-point search.
constexpr size_t kHashBatch = 32;

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         Nanos(a.st_mtim) == Nanos(b.st_mtim) && Nanos(a.st_ctim) == Nanos(b.st_ctim);
}

ssize_t PreadFull(int fd, uint8_t* p, size_t n, off_t off) {
  for (;;) {
    const ssize_t r = pread(fd, p, n, off);
    if (r >= 0 || errno != EINTR) return r;
  }
}

std::string ChunkPrefix() { return std::string(kDomainChunk, sizeof(kDomainChunk)); }

}  // namespace

ChunkReader::ChunkReader(const CdcParams& params, size_t piece_size)
    : params_(params), piece_size_(piece_size), hasher_(ChunkPrefix()) {}

ChunkReader::~ChunkReader() {
  direct_.reset();
  if (fd_ >= 0) close(fd_);
}

void ChunkReader::Close() {
  direct_.reset();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  std::vector<uint8_t>().swap(carry_);
  hasher_.ReleaseScratch();
  if (final_ == ReadStatus::kPiece) {
    final_ = ReadStatus::kError;
    final_err_ = EBADF;
  }
}

void ChunkReader::OpenDirect() {
  if (!DirectFiles::Get().Has(st_.st_dev, st_.st_ino)) return;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd_);
  const int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return;
  direct_ = std::make_unique<DirectReadAhead>(fd, 0);
  if (!direct_->Start()) direct_.reset();
}

ReadStatus ChunkReader::Open(const std::string& path, const FileIdentity* expect, int* err) {
  *err = 0;
  // O_NONBLOCK: should the path have been swapped for a FIFO, open must not hang.
  fd_ = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0) {
    // ELOOP: the path is now a symlink. With an expected file that is a change, not an error.
    if (expect && (errno == ELOOP || errno == ENOENT)) return ReadStatus::kChanged;
    *err = errno;
    return ReadStatus::kError;
  }
  if (fstat(fd_, &st_) != 0) {
    *err = errno;
    return ReadStatus::kError;
  }
  if (!S_ISREG(st_.st_mode)) {
    if (expect) return ReadStatus::kChanged;
    *err = EINVAL;
    return ReadStatus::kError;
  }
  if (expect && !(static_cast<uint64_t>(st_.st_dev) == expect->dev &&
                  static_cast<uint64_t>(st_.st_ino) == expect->ino &&
                  static_cast<uint64_t>(st_.st_size) == expect->size &&
                  Nanos(st_.st_mtim) == expect->mtime_ns && Nanos(st_.st_ctim) == expect->ctime_ns)) {
    return ReadStatus::kChanged;
  }
  OpenDirect();
  return ReadStatus::kPiece;
}

// After the last byte: nothing may follow it, and size and times must not have moved.
ReadStatus ChunkReader::Finish(int* err) {
  uint8_t probe;
  const ssize_t r = PreadFull(fd_, &probe, 1, static_cast<off_t>(read_));
  if (r < 0) {
    *err = errno;
    return ReadStatus::kError;
  }
  if (r > 0) return ReadStatus::kChanged;  // grew
  struct stat now;
  if (fstat(fd_, &now) != 0) {
    *err = errno;
    return ReadStatus::kError;
  }
  return SameFile(st_, now) ? ReadStatus::kEnd : ReadStatus::kChanged;
}

ReadStatus ChunkReader::Next(uint8_t* block, Piece* out, int* err) {
  *err = 0;
  if (final_ != ReadStatus::kPiece) {
    *err = final_err_;
    return final_;
  }
  const uint64_t size = static_cast<uint64_t>(st_.st_size);
  const size_t carried = carry_.size();
  if (carried > 0) std::memcpy(block, carry_.data(), carried);
  const size_t want = size - read_ < piece_size_ ? static_cast<size_t>(size - read_) : piece_size_;
  size_t got = 0;
  if (direct_) {
    got = direct_->Read(block + carried, want);
    // Short: the end, or a failure the buffered read below reports (or O_DIRECT refused, EINVAL:
    // the rest is read buffered).
    if (got < want) direct_.reset();
  }
  while (got < want) {
    const ssize_t r = PreadFull(fd_, block + carried + got, want - got, static_cast<off_t>(read_ + got));
    if (r < 0) {
      final_err_ = *err = errno;
      return final_ = ReadStatus::kError;
    }
    if (r == 0) return final_ = ReadStatus::kChanged;  // shrank
    got += static_cast<size_t>(r);
  }
  read_ += got;
  const bool last = read_ == size;
  // Every byte is in: the read-ahead's thread, descriptor and slots go now, not with the stream.
  if (last) direct_.reset();
  if (last) {
    const ReadStatus s = Finish(err);
    if (s != ReadStatus::kEnd) {
      final_err_ = *err;
      return final_ = s;
    }
  }

  // Cut: the carried bytes were fed to the chunker already; continue after them.
  const size_t total = carried + got;
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  size_t start = 0;
  size_t pos = carried;
  while (pos < total) {
    bool cut = false;
    pos += CdcFeed(params_, state_, block + pos, total - pos, &cut);
    if (cut) {
      ptrs.push_back(block + start);
      lens.push_back(pos - start);
      start = pos;
    }
  }
  if (last && start < total) {  // the final, partial chunk
    ptrs.push_back(block + start);
    lens.push_back(total - start);
    start = total;
    state_ = CdcState{};
  }
  carry_.assign(block + start, block + total);

  out->data = block;
  out->len = start;
  out->offset = emitted_;
  out->lengths.resize(lens.size());
  out->ids.resize(lens.size() * 32);
  // The chunks are consecutive, in-order slices of one block, as MultiHasher requires.
  for (size_t i = 0; i < lens.size(); i += kHashBatch) {
    const size_t n = lens.size() - i < kHashBatch ? lens.size() - i : kHashBatch;
    hasher_.HashAll(ptrs.data() + i, lens.data() + i, n, out->ids.data() + i * 32);
  }
  for (size_t i = 0; i < lens.size(); i++) out->lengths[i] = static_cast<uint32_t>(lens[i]);
  emitted_ += start;
  if (last) final_ = ReadStatus::kEnd;
  // An empty file ends without a piece; otherwise a piece always holds a chunk, because
  // piece_size >= max_size forces a cut.
  return start > 0 ? ReadStatus::kPiece : ReadStatus::kEnd;
}

}  // namespace layerfs
