// One regular file read in pieces, each cut at FastCDC boundaries with its chunks hashed: the
// work behind readChunks (napi_stream.cc), run on a pool thread. No Node-API here.
//
// A piece holds whole chunks only. The bytes of the chunk still open at the end of a read are
// carried to the front of the next piece and the chunker state goes with them, so the cut points
// are exactly those of CdcChunkAll over the whole file (the Chunker's split invariance).
#pragma once
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastcdc.h"
#include "multihash.h"

namespace layerfs {

class DirectReadAhead;

// What a caller saw of the file earlier (a scan): the opened file must match it exactly.
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
};

struct Piece {
  uint8_t* data = nullptr;  // the block passed to Next(); `len` bytes of whole chunks
  size_t len = 0;
  uint64_t offset = 0;  // of data[0] in the file
  std::vector<uint32_t> lengths;
  std::vector<uint8_t> ids;  // 32 bytes per chunk: objectId(chunk domain, chunk bytes)
};

enum class ReadStatus {
  kPiece,    // *out holds a piece
  kEnd,      // every byte was delivered and the file did not change while read
  kChanged,  // the file changed under us (size, times, or it is another file)
  kError,    // a syscall failed; *err holds errno
};

class ChunkReader {
 public:
  // piece_size: bytes read per piece; must be >= params.max_size so every piece holds a cut.
  ChunkReader(const CdcParams& params, size_t piece_size);
  ~ChunkReader();
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // Opens without following a symlink and checks it is a regular file and, when `expect` is
  // given, the same file (dev, ino) with the same size and times. kPiece means opened.
  ReadStatus Open(const std::string& path, const FileIdentity* expect, int* err);
  const struct stat& Stat() const { return st_; }

  // Capacity every block passed to Next() must have.
  size_t BlockSize() const { return piece_size_ + params_.max_size; }
  // Reads, cuts and hashes the next piece into `block`. After kEnd, kChanged or kError it
  // returns the same status again.
  ReadStatus Next(uint8_t* block, Piece* out, int* err);
  // Closes the file and frees what reading it holds (the read-ahead thread and its slots, the
  // carried bytes, the hasher's scratch); Next() then returns kError (EBADF). Not while a Next()
  // runs.
  void Close();

 private:
  ReadStatus Finish(int* err);
  void OpenDirect();

  const CdcParams params_;
  const size_t piece_size_;
  int fd_ = -1;
  // For a file this process wrote with O_DIRECT (direct_files.h): the same file read with
  // O_DIRECT a few MiB ahead on a thread (direct_read_ahead.h), until a read comes back short.
  std::unique_ptr<DirectReadAhead> direct_;
  struct stat st_ {};
  uint64_t read_ = 0;     // file bytes read so far
  uint64_t emitted_ = 0;  // file bytes delivered in pieces so far
  CdcState state_;        // chunker state after the carried bytes
  std::vector<uint8_t> carry_;
  ReadStatus final_ = ReadStatus::kPiece;  // sticky once not kPiece
  int final_err_ = 0;
  MultiHasher hasher_;
};

}  // namespace layerfs
