// libFuzzer harness for ChunkReader (native/chunk_reader.cc): the reader behind the streamed
// import of large files. It reads a file in pieces, cuts them at FastCDC boundaries and hashes
// the chunks; the bytes of a file are untrusted input, and the file may change while it is read.
//
// Input: an 8-byte header, then data (optionally expanded to up to ~1 MiB).
//   [0] parameter choice (bits 0-1: defaults or a small derived set) and level (bits 2-3)
//   [1] average size code for derived sets        [2] piece size selector
//   [3] event: none, append / truncate / same-size rewrite after piece k, an open with a
//       mismatched identity, or the path being a FIFO, a symlink or a directory
//   [4] k                                         [5..6] expansion length / 16   [7] pattern
//
// Properties:
//   - Open of a FIFO never blocks; a FIFO, symlink or directory is kError (kChanged when an
//     identity was expected); a mismatched identity is kChanged.
//   - Pieces are contiguous (offset = bytes delivered so far), hold whole chunks, and their
//     lengths sum to the piece length; every chunk id is the one-at-a-time chunk id.
//   - An unchanged file ends with kEnd after exactly its bytes, cut exactly like CdcChunkAll on
//     the whole file; the status then stays kEnd.
//   - A file changed while read ends with kChanged, or with kEnd only if every delivered byte
//     equals the original file (a change after the last read is not part of the read). Never
//     wrong bytes with kEnd.
//   - Close() after the end keeps the final status (and may be repeated).
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "chunk_reader.h"
#include "fastcdc.h"
#include "fuzz_util.h"
#include "objectid.h"

using layerfs::ChunkReader;
using layerfs::FileIdentity;
using layerfs::Piece;
using layerfs::ReadStatus;
using layerfs_fuzz::Reader;
using layerfs_fuzz::Rng;

namespace {

std::string g_dir;

enum Event { kNone = 0, kAppend, kTruncate, kRewrite, kMismatch, kFifo, kSymlink, kDirectory, kEvents };

void WriteAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t r = write(fd, p, n);
    FUZZ_CHECK(r > 0);
    p += r;
    n -= static_cast<size_t>(r);
  }
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& data) {
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0);
  WriteAll(fd, data.data(), data.size());
  close(fd);
}

FUZZ_NO_COVERAGE std::vector<uint8_t> Expand(const uint8_t* p, size_t n, size_t want, uint8_t pattern) {
  std::vector<uint8_t> out(p, p + n);
  if (want <= n) return out;
  Rng rng(layerfs_fuzz::SeedFrom(p, n) ^ pattern);
  out.reserve(want);
  while (out.size() < want) {
    const size_t i = out.size();
    const uint8_t base = n ? p[i % n] : 0;
    out.push_back(pattern & 1 ? static_cast<uint8_t>(base ^ rng.Next()) : base);
  }
  return out;
}

FUZZ_NO_COVERAGE void ChunkId(const uint8_t* p, size_t n, uint8_t out[32]) {
  static const layerfs::DomainHasher hasher{std::string(layerfs::kDomainChunk)};
  hasher.Hash(p, n, out);
}

layerfs::CdcParams ChooseParams(uint8_t choice, uint8_t avg_code) {
  if ((choice & 3) == 0) return layerfs::CdcDefaultParams();
  const uint32_t avg = 128u << (avg_code % 7);  // 128 .. 8192
  const uint32_t min = (choice & 3) == 1 ? avg / 2 : avg / 4 < 64 ? 64 : avg / 4;
  const uint32_t max = avg * (2u << ((avg_code >> 3) % 3));  // 2, 4 or 8 × avg
  layerfs::CdcParams p{};
  const char* err = layerfs::CdcMakeParams(min, avg, max, (choice >> 2) & 3, &p);
  FUZZ_CHECK(err == nullptr);
  return p;
}

FileIdentity IdentityOf(const struct stat& st) {
  FileIdentity id;
  id.dev = static_cast<uint64_t>(st.st_dev);
  id.ino = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return id;
}

// Special files in place of the regular file: Open must answer at once, typed.
void CheckSpecial(Event ev, const layerfs::CdcParams& params, bool with_expect) {
  const std::string path = g_dir + "/special";
  unlink(path.c_str());
  rmdir(path.c_str());
  if (ev == kFifo) FUZZ_CHECK(mkfifo(path.c_str(), 0600) == 0);
  if (ev == kSymlink) FUZZ_CHECK(symlink("data", path.c_str()) == 0);
  if (ev == kDirectory) FUZZ_CHECK(mkdir(path.c_str(), 0700) == 0);
  ChunkReader reader(params, params.max_size);
  FileIdentity expect;
  int err = -1;
  const ReadStatus s = reader.Open(path, with_expect ? &expect : nullptr, &err);
  if (with_expect) {
    FUZZ_CHECK(s == ReadStatus::kChanged);
  } else {
    FUZZ_CHECK(s == ReadStatus::kError);
    FUZZ_CHECK(err == (ev == kSymlink ? ELOOP : EINVAL));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // /dev/shm keeps the per-input file writes off the disk.
  char shm[] = "/dev/shm/layerfs-fuzz-XXXXXX";
  char tmp[] = "/tmp/layerfs-fuzz-XXXXXX";
  const char* d = mkdtemp(shm);
  if (!d) d = mkdtemp(tmp);
  FUZZ_CHECK(d != nullptr);
  g_dir = d;
  // libFuzzer ends with exit(): leave no scratch directory behind.
  std::atexit([] {
    unlink((g_dir + "/data").c_str());
    unlink((g_dir + "/special").c_str());
    rmdir((g_dir + "/special").c_str());
    rmdir(g_dir.c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* in, size_t n) {
  Reader r(in, n);
  const uint8_t choice = r.U8();
  const uint8_t avg_code = r.U8();
  const uint8_t piece_sel = r.U8();
  const uint8_t ev_byte = r.U8();
  const uint8_t k = r.U8();
  const size_t expand = static_cast<size_t>(r.U16()) * 16;
  const uint8_t pattern = r.U8();
  const Event ev = static_cast<Event>(ev_byte % kEvents);
  const bool with_expect = (ev_byte & 0x80) != 0;
  const layerfs::CdcParams params = ChooseParams(choice, avg_code);

  if (ev == kFifo || ev == kSymlink || ev == kDirectory) {
    CheckSpecial(ev, params, with_expect);
    return 0;
  }

  const std::vector<uint8_t> data = Expand(r.Rest(), r.RestSize(), expand, pattern);
  const std::string path = g_dir + "/data";
  WriteFile(path, data);
  struct stat st;
  FUZZ_CHECK(stat(path.c_str(), &st) == 0);
  FileIdentity expect = IdentityOf(st);
  if (ev == kMismatch) {
    switch (k % 3) {
      case 0: expect.size++; break;
      case 1: expect.mtime_ns++; break;
      default: expect.ino++; break;
    }
  }

  // Piece sizes from max_size (the smallest allowed: one forced cut per piece) up.
  const size_t piece = params.max_size * (1 + piece_sel % 4) + (piece_sel >> 2) * 61;
  ChunkReader reader(params, piece);
  int err = -1;
  const ReadStatus opened = reader.Open(path, (with_expect || ev == kMismatch) ? &expect : nullptr, &err);
  if (ev == kMismatch) {
    FUZZ_CHECK(opened == ReadStatus::kChanged);
    return 0;
  }
  FUZZ_CHECK(opened == ReadStatus::kPiece);
  FUZZ_CHECK(err == 0);

  // The reference cut points of the whole (original) file.
  std::vector<size_t> want;
  layerfs::CdcChunkAll(params, data.data(), data.size(), [&](size_t len) { want.push_back(len); });

  // Exact-size block, so ASan sees any write past BlockSize().
  std::vector<uint8_t> block(reader.BlockSize());
  std::vector<size_t> got;
  bool same_bytes = true;  // every delivered byte equals the original file
  uint64_t delivered = 0;
  size_t pieces = 0;
  bool changed = false;
  ReadStatus s;
  for (;;) {
    Piece p;
    s = reader.Next(block.data(), &p, &err);
    if (s != ReadStatus::kPiece) break;
    FUZZ_CHECK(p.data == block.data());
    FUZZ_CHECK(p.offset == delivered);
    FUZZ_CHECK(p.len > 0 && p.len <= block.size());
    FUZZ_CHECK(p.ids.size() == p.lengths.size() * 32);
    size_t sum = 0;
    for (size_t i = 0; i < p.lengths.size(); i++) {
      const size_t len = p.lengths[i];
      FUZZ_CHECK(len > 0 && len <= params.max_size);
      uint8_t id[32];
      ChunkId(p.data + sum, len, id);
      FUZZ_CHECK(std::memcmp(id, p.ids.data() + i * 32, 32) == 0);
      got.push_back(len);
      sum += len;
    }
    FUZZ_CHECK(sum == p.len);
    if (delivered + p.len > data.size() || std::memcmp(p.data, data.data() + delivered, p.len) != 0) same_bytes = false;
    delivered += p.len;
    pieces++;
    FUZZ_CHECK(pieces <= data.size() + 1);

    if (!changed && ev != kNone && pieces == 1u + k % 4) {
      changed = true;
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      FUZZ_CHECK(fd >= 0);
      if (ev == kAppend) {
        const uint8_t extra[3] = {1, 2, 3};
        FUZZ_CHECK(pwrite(fd, extra, 1 + k % 3, static_cast<off_t>(data.size())) > 0);
      } else if (ev == kTruncate) {
        FUZZ_CHECK(ftruncate(fd, static_cast<off_t>(data.size() / 2)) == 0);
      } else if (ev == kRewrite && !data.empty()) {
        std::vector<uint8_t> other(data.size());
        for (size_t i = 0; i < other.size(); i++) other[i] = static_cast<uint8_t>(data[i] ^ 0x5a);
        FUZZ_CHECK(pwrite(fd, other.data(), other.size(), 0) == static_cast<ssize_t>(other.size()));
        // A rewrite within the same clock tick could keep the times: move mtime by hand, as any
        // real writer's clock would (what the reader can detect is size and times only).
        struct timespec ts[2];
        ts[0].tv_nsec = UTIME_OMIT;
        ts[1] = st.st_mtim;
        ts[1].tv_nsec = (ts[1].tv_nsec + 1) % 1000000000;
        FUZZ_CHECK(futimens(fd, ts) == 0);
      }
      close(fd);
    }
  }
  // The status is sticky.
  int err2 = -1;
  Piece again;
  FUZZ_CHECK(reader.Next(block.data(), &again, &err2) == s);

  if (s == ReadStatus::kEnd) {
    // Never wrong bytes: an ended read delivered exactly the original file, cut as a whole.
    FUZZ_CHECK(same_bytes);
    FUZZ_CHECK(delivered == data.size());
    FUZZ_CHECK(got == want);
    FUZZ_CHECK(err == 0);
  } else {
    FUZZ_CHECK(s == ReadStatus::kChanged);
    FUZZ_CHECK(changed);
  }
  if (!changed) FUZZ_CHECK(s == ReadStatus::kEnd);
  // Close frees the file and scratch and keeps the status; a second Close is harmless.
  reader.Close();
  reader.Close();
  FUZZ_CHECK(reader.Next(block.data(), &again, &err2) == s);
  return 0;
}
