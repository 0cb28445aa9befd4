// libFuzzer harness: the copy-on-write core (native/cow.cc).
//
// Each input is a stored file and a script of operations on it. The harness plays the caller
// of CowPages (a spool that keeps written bytes at their offsets, a stored base with its chunk
// list) next to a plain byte vector, and checks that
//   1. every read plan covers exactly the bytes asked for (clipped at the size), in order, with
//      base segments only inside the still-valid stored prefix, and that reading by the plan gives
//      the model's bytes;
//   2. write plans copy only not-yet-dirty edge pages and only stored bytes; the dirty-page count
//      equals a page-by-page count; the size follows the model;
//   3. a commit's re-chunk emits chunks that hold the file's bytes at their offsets, replaces runs
//      that start and end on old cuts, and the edited chunk list equals chunking the whole file.
//
// Input layout (missing bytes read as 0):
//   [0]      params: 0..3 small derived sets, else the defaults; [1] read piece selector
//   [2..3]   base size / 8 (default parameters) or / 2 (u16); [4] base pattern seed
//   [5..]    operations, 6 bytes each: kind, then two u16 (position / 4, length), one seed byte
#include <algorithm>
#include <cstring>
#include <vector>

#include "cow.h"
#include "fastcdc.h"
#include "fuzz_util.h"

using layerfs::CowCopy;
using layerfs::CowPages;
using layerfs::CowRange;
using layerfs::CowSegment;
using layerfs::CowSource;
using layerfs::kCowPage;
using namespace layerfs_fuzz;

namespace {

using Bytes = std::vector<uint8_t>;

FUZZ_NO_COVERAGE std::vector<uint64_t> ChunkAll(const layerfs::CdcParams& p, const Bytes& d) {
  std::vector<uint64_t> out;
  layerfs::CdcChunkAll(p, d.data(), d.size(), [&](size_t l) { out.push_back(l); });
  return out;
}

struct File {
  layerfs::CdcParams params;
  Bytes base;                    // stored bytes (empty: no base)
  std::vector<uint64_t> chunks;  // their chunk lengths
  Bytes spool;                   // written bytes at their offsets; past its end: zeros
  Bytes model;                   // what the file must read as
  CowPages pages;

  void SpoolWrite(const uint8_t* p, size_t n, uint64_t pos) {
    if (pos + n > spool.size()) spool.resize(pos + n, 0);
    std::memcpy(spool.data() + pos, p, n);
  }

  void Write(uint64_t pos, const Bytes& data) {
    std::vector<CowCopy> copies;
    pages.PlanWrite(pos, data.size(), &copies);
    FUZZ_CHECK(copies.size() <= 2);
    for (const CowCopy& c : copies) {
      FUZZ_CHECK(c.start % kCowPage == 0 && c.len > 0 && c.len <= kCowPage);
      FUZZ_CHECK(!pages.IsDirty(c.start / kCowPage));
      FUZZ_CHECK(c.start + c.len <= pages.valid_base() && c.start + c.len <= base.size());
      // Partly covered: the write does not span the whole page.
      FUZZ_CHECK(!(pos <= c.start && pos + data.size() >= c.start + kCowPage));
      SpoolWrite(base.data() + c.start, c.len, c.start);
    }
    pages.CommitWrite(pos, data.size());
    SpoolWrite(data.data(), data.size(), pos);
    if (pos + data.size() > model.size()) model.resize(pos + data.size(), 0);
    std::memcpy(model.data() + pos, data.data(), data.size());
  }

  void Truncate(uint64_t size) {
    if (size == pages.size()) return;
    if (size == 0) base.clear(), chunks.clear();
    if (size < pages.size() && size < spool.size()) spool.resize(size);
    pages.Truncate(size);
    model.resize(size, 0);
  }

  void ReadInto(uint64_t pos, uint64_t len, uint8_t* dst) {
    std::vector<CowSegment> segs;
    pages.PlanRead(pos, len, &segs);
    uint64_t at = pos;
    for (const CowSegment& s : segs) {
      FUZZ_CHECK(s.pos == at && s.len > 0);
      uint8_t* o = dst + (s.pos - pos);
      switch (s.source) {
        case CowSource::kBase:
          FUZZ_CHECK(pages.has_base() && s.pos + s.len <= pages.valid_base() && s.pos + s.len <= base.size());
          std::memcpy(o, base.data() + s.pos, s.len);
          break;
        case CowSource::kSpool: {
          std::memset(o, 0, s.len);
          if (s.pos < spool.size()) std::memcpy(o, spool.data() + s.pos, std::min<uint64_t>(s.len, spool.size() - s.pos));
          break;
        }
        default:
          std::memset(o, 0, s.len);
      }
      at += s.len;
    }
    const uint64_t want = pos >= pages.size() ? 0 : std::min(len, pages.size() - pos);
    FUZZ_CHECK(at - pos == want);
  }

  void Read(uint64_t pos, uint64_t len) {
    const uint64_t n = pos >= model.size() ? 0 : std::min<uint64_t>(len, model.size() - pos);
    Bytes got(n);
    ReadInto(pos, len, got.data());
    FUZZ_CHECK(n == 0 || std::memcmp(got.data(), model.data() + pos, n) == 0);
  }

  void CheckCounts() {
    FUZZ_CHECK(pages.size() == model.size());
    uint64_t dirty = 0;
    const uint64_t last = (std::max(model.size(), base.size()) + kCowPage) / kCowPage + 2;
    for (uint64_t p = 0; p < last; p++) dirty += pages.IsDirty(p);
    FUZZ_CHECK(dirty == pages.dirty_pages());
  }

  void Commit(size_t piece);
};

class Io : public layerfs::RechunkIo {
 public:
  explicit Io(File& f) : f_(f) {
    uint64_t x = 0;
    for (uint64_t l : f.chunks) starts_.push_back(x), x += l;
  }
  uint64_t OldChunkStart(uint64_t x) override {
    FUZZ_CHECK(!starts_.empty() && x < f_.base.size());
    return *(std::upper_bound(starts_.begin(), starts_.end(), x) - 1);
  }
  void Read(uint64_t pos, uint8_t* dst, size_t len) override {
    FUZZ_CHECK(pos + len <= f_.pages.size());
    f_.ReadInto(pos, len, dst);
  }
  void Emit(uint64_t offset, const uint8_t* data, size_t len) override {
    FUZZ_CHECK(len > 0 && offset + len <= f_.model.size());
    FUZZ_CHECK(std::memcmp(data, f_.model.data() + offset, len) == 0);
    FUZZ_CHECK(run_.empty() || offset == next_);
    next_ = offset + len;
    run_.push_back(len);
  }
  void Replace(uint64_t from, uint64_t to, size_t chunks) override {
    FUZZ_CHECK(chunks == run_.size() && from <= to);
    FUZZ_CHECK(replaced_.empty() || replaced_.back().to <= from);
    replaced_.push_back(Rep{from, to, run_});
    run_.clear();
  }

  struct Rep {
    uint64_t from, to;
    std::vector<uint64_t> lengths;
  };
  File& f_;
  std::vector<uint64_t> starts_, run_;
  uint64_t next_ = 0;
  std::vector<Rep> replaced_;
};

void File::Commit(size_t piece) {
  std::vector<CowRange> ranges;
  const bool extents = !base.empty();
  pages.ChangedRanges(extents, &ranges);
  Io io(*this);
  const uint64_t old_size = extents ? base.size() : 0;
  layerfs::CowRechunk(params, ranges, old_size, pages.size(), piece, io);
  std::vector<uint64_t> list;
  if (extents) {
    uint64_t at = 0;
    size_t i = 0;
    for (const Io::Rep& r : io.replaced_) {
      while (at < r.from) list.push_back(chunks[i]), at += chunks[i++];
      FUZZ_CHECK(at == r.from);
      while (at < r.to) at += chunks[i++];
      FUZZ_CHECK(at == r.to);
      list.insert(list.end(), r.lengths.begin(), r.lengths.end());
    }
    list.insert(list.end(), chunks.begin() + i, chunks.end());
  } else {
    FUZZ_CHECK(io.replaced_.empty());
    list = io.run_;
  }
  FUZZ_CHECK(list == ChunkAll(params, model));
  base = model;
  chunks = list;
  spool.clear();
  pages.Rebase(model.size());
}

layerfs::CdcParams Params(uint8_t sel) {
  layerfs::CdcParams p{};
  static constexpr uint32_t kSets[4][3] = {{64, 128, 512}, {64, 256, 1024}, {100, 512, 2000}, {1000, 4096, 9000}};
  if (sel >= 4) return layerfs::CdcDefaultParams();
  FUZZ_CHECK(layerfs::CdcMakeParams(kSets[sel][0], kSets[sel][1], kSets[sel][2], sel & 3, &p) == nullptr);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  File f{Params(r.U8() % 6), {}, {}, {}, {}, CowPages(0)};
  static constexpr size_t kPieces[] = {7, 64, 1000, 4096, 65536};
  const size_t piece = kPieces[r.U8() % 5];
  // Small parameters get small files (many chunks all the same); the defaults up to 512 KiB.
  const uint64_t base_size = uint64_t{r.U16()} * (f.params.avg_size > 4096 ? 8 : 2);
  Rng brng(r.U8() + 1);
  f.base.resize(base_size);
  for (auto& b : f.base) b = static_cast<uint8_t>(brng.Next());
  f.chunks = ChunkAll(f.params, f.base);
  f.model = f.base;
  f.pages.Rebase(base_size);
  int commits = 0;
  while (r.RestSize() > 0) {
    const uint8_t kind = r.U8();
    const uint64_t a = uint64_t{r.U16()} * 4, b = r.U16();
    Rng drng(r.U8() + 7);
    switch (kind % 8) {
      case 0:
      case 1:
      case 2: {
        Bytes d(b % 20000 + 1);
        for (auto& x : d) x = static_cast<uint8_t>(drng.Next());
        f.Write(a % (f.model.size() + 9000), d);
        break;
      }
      case 3:
        f.Truncate(kind & 0x10 ? 0 : b * static_cast<uint64_t>((kind >> 5) + 1) % (f.model.size() + 5000));
        break;
      case 4:
      case 5:
        f.Read(a % (f.model.size() + 100), b);
        break;
      case 6:
        if (commits++ < 8) f.Commit(piece);
        break;
      default:  // page-aligned whole pages
        {
          Bytes d(kCowPage * (b % 3 + 1));
          for (auto& x : d) x = static_cast<uint8_t>(drng.Next());
          f.Write((a % (f.model.size() + 9000)) / kCowPage * kCowPage, d);
        }
    }
    f.CheckCounts();
  }
  f.Read(0, f.model.size());
  f.Commit(piece);
  return 0;
}
