// Copy-on-write over stored file content (docs/FUSE.md "The overlay"). Pure C++, no Node-API:
// the page map a live file keeps over its stored base, the plan that merges dirty pages into
// reads, and the commit-time re-chunk that starts at the chunk before each change and stops
// where new FastCDC cut points land on old ones again. Stored and spooled bytes themselves stay
// with the caller (Store reads, spool files): this core decides where every byte comes from.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "fastcdc.h"

namespace layerfs {

// Copy-on-write granularity over stored content.
constexpr uint64_t kCowPage = 4096;
// Marks a changed range that runs to the end of the file.
constexpr uint64_t kCowToEnd = UINT64_MAX;

enum class CowSource : uint8_t { kZero = 0, kSpool = 1, kBase = 2 };

// Bytes [pos, pos + len) of the file come from `source` at the same offset.
struct CowSegment {
  CowSource source;
  uint64_t pos;
  uint64_t len;
};

// Stored bytes [start, start + len) a write must copy into the spool before it lands.
struct CowCopy {
  uint64_t start;
  uint64_t len;
};

struct CowRange {
  uint64_t begin;
  uint64_t end;  // kCowToEnd: to the end of the file
};

// A file's bytes at offset o < size:
//   - no base (new file, or truncated to 0): the spool;
//   - page o / kCowPage dirty: the spool (the page was copied there on its first write);
//   - o < valid_base: the stored base;
//   - otherwise zero (truncated below o and extended again).
class CowPages {
 public:
  explicit CowPages(uint64_t base_size = 0) { Rebase(base_size); }

  uint64_t size() const { return size_; }
  uint64_t base_size() const { return base_size_; }
  uint64_t valid_base() const { return valid_base_; }
  bool has_base() const { return base_size_ > 0; }
  uint64_t dirty_pages() const { return dirty_count_; }
  bool IsDirty(uint64_t page) const;

  // Stored bytes a write of [pos, pos + len) needs copied first: only the edge pages it covers
  // partially that are not dirty yet (pages it covers whole are replaced, never read). Changes
  // nothing, so a failed copy leaves the map as it was.
  void PlanWrite(uint64_t pos, uint64_t len, std::vector<CowCopy>* out) const;
  // Records a write once its copies are in the spool: marks its pages dirty, extends the size.
  void CommitWrite(uint64_t pos, uint64_t len);
  // Where bytes [pos, min(pos + len, size)) come from, merged into the fewest segments.
  void PlanRead(uint64_t pos, uint64_t len, std::vector<CowSegment>* out) const;
  void Truncate(uint64_t size);
  // After a commit stored the content: it is the new base, nothing is dirty.
  void Rebase(uint64_t size);
  // What differs from a stored extent tree of base_size() bytes, ascending and disjoint; the
  // last may run to kCowToEnd. With no such tree (new file, whole blob) everything is changed.
  void ChangedRanges(bool base_is_extents, std::vector<CowRange>* out) const;

 private:
  void MarkDirty(uint64_t first, uint64_t end);
  void DropFrom(uint64_t page);

  uint64_t base_size_ = 0;
  uint64_t valid_base_ = 0;
  uint64_t size_ = 0;
  uint64_t dirty_count_ = 0;
  // Dirty pages as runs: first page -> one past the last; disjoint and never adjacent.
  std::map<uint64_t, uint64_t> runs_;
};

// What the re-chunk needs from its caller.
class RechunkIo {
 public:
  virtual ~RechunkIo() = default;
  // Start of the old chunk holding offset x (x < old size).
  virtual uint64_t OldChunkStart(uint64_t x) = 0;
  // The new content's bytes [pos, pos + len).
  virtual void Read(uint64_t pos, uint8_t* dst, size_t len) = 0;
  // The next new chunk, which starts at `offset`.
  virtual void Emit(uint64_t offset, const uint8_t* data, size_t len) = 0;
  // Old chunks covering [from, to) are replaced by the last `chunks` emitted.
  virtual void Replace(uint64_t from, uint64_t to, size_t chunks) = 0;
};

struct RechunkStats {
  uint64_t bytes_read = 0;
  uint64_t chunks = 0;
};

// Re-chunks the changed ranges of a file of `size` bytes whose old content (when
// `old_size` > 0) is a chunk list of old_size bytes. Edits never shift bytes, and the chunker's
// state resets at every cut, so every old cut up to the first changed byte stands, and from any
// old cut onwards the chunker reproduces the old cuts until the next change. A run starts at the
// old chunk holding its range's first byte and stops at the first new cut, past every change it
// covers, that is an old cut. The result equals chunking the whole file. With old_size == 0 it
// emits every chunk and replaces nothing. `piece` bytes are read at a time.
RechunkStats CowRechunk(const CdcParams& params, const std::vector<CowRange>& ranges,
                        uint64_t old_size, uint64_t size, size_t piece, RechunkIo& io);

}  // namespace layerfs
