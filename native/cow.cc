#include "cow.h"

#include <algorithm>
#include <iterator>

namespace layerfs {

bool CowPages::IsDirty(uint64_t page) const {
  auto it = runs_.upper_bound(page);
  if (it == runs_.begin()) return false;
  return page < std::prev(it)->second;
}

void CowPages::MarkDirty(uint64_t first, uint64_t end) {
  auto it = runs_.upper_bound(first);
  if (it != runs_.begin()) {
    auto before = std::prev(it);
    if (before->second >= first) {  // overlaps or touches: absorb it
      first = before->first;
      end = std::max(end, before->second);
      dirty_count_ -= before->second - before->first;
      runs_.erase(before);
    }
  }
  while (it != runs_.end() && it->first <= end) {
    end = std::max(end, it->second);
    dirty_count_ -= it->second - it->first;
    it = runs_.erase(it);
  }
  runs_.emplace(first, end);
  dirty_count_ += end - first;
}

void CowPages::DropFrom(uint64_t page) {
  auto it = runs_.lower_bound(page);
  while (it != runs_.end()) {
    dirty_count_ -= it->second - it->first;
    it = runs_.erase(it);
  }
  if (runs_.empty()) return;
  auto last = std::prev(runs_.end());
  if (last->second > page) {
    dirty_count_ -= last->second - page;
    last->second = page;
  }
}

void CowPages::PlanWrite(uint64_t pos, uint64_t len, std::vector<CowCopy>* out) const {
  if (len == 0 || !has_base()) return;
  const uint64_t end = pos + len;
  const uint64_t first = pos / kCowPage, last = (end - 1) / kCowPage;
  // Only the edge pages can be covered in part.
  const uint64_t edges[2] = {first, last};
  for (int i = 0; i < (first == last ? 1 : 2); i++) {
    const uint64_t page = edges[i];
    const uint64_t start = page * kCowPage;
    if (pos <= start && end >= start + kCowPage) continue;
    if (IsDirty(page) || start >= size_ || start >= valid_base_) continue;
    const uint64_t have = std::min(kCowPage, size_ - start);
    const uint64_t stored = std::min(have, valid_base_ - start);
    out->push_back(CowCopy{start, stored});
  }
}

void CowPages::CommitWrite(uint64_t pos, uint64_t len) {
  if (len == 0) return;
  const uint64_t end = pos + len;
  if (has_base()) MarkDirty(pos / kCowPage, (end - 1) / kCowPage + 1);
  size_ = std::max(size_, end);
}

namespace {

void Push(std::vector<CowSegment>* out, CowSource source, uint64_t pos, uint64_t len) {
  if (len == 0) return;
  if (!out->empty() && out->back().source == source && out->back().pos + out->back().len == pos) {
    out->back().len += len;
    return;
  }
  out->push_back(CowSegment{source, pos, len});
}

}  // namespace

void CowPages::PlanRead(uint64_t pos, uint64_t len, std::vector<CowSegment>* out) const {
  if (pos >= size_ || len == 0) return;
  const uint64_t end = pos + std::min(len, size_ - pos);
  if (!has_base()) {
    Push(out, CowSource::kSpool, pos, end - pos);
    return;
  }
  uint64_t p = pos;
  while (p < end) {
    const uint64_t page = p / kCowPage;
    auto next = runs_.upper_bound(page);
    if (next != runs_.begin() && page < std::prev(next)->second) {
      const uint64_t q = std::min(end, std::prev(next)->second * kCowPage);
      Push(out, CowSource::kSpool, p, q - p);
      p = q;
      continue;
    }
    const uint64_t q = next == runs_.end() ? end : std::min(end, next->first * kCowPage);
    const uint64_t stored = valid_base_ > p ? std::min(q, valid_base_) : p;
    Push(out, CowSource::kBase, p, stored - p);
    Push(out, CowSource::kZero, stored, q - stored);
    p = q;
  }
}

void CowPages::Truncate(uint64_t size) {
  if (size == size_) return;
  if (size == 0) {
    base_size_ = 0;
    valid_base_ = 0;
    runs_.clear();
    dirty_count_ = 0;
  } else if (size < size_) {
    DropFrom((size + kCowPage - 1) / kCowPage);
    valid_base_ = std::min(valid_base_, size);
  }
  size_ = size;
}

void CowPages::Rebase(uint64_t size) {
  base_size_ = size;
  valid_base_ = size;
  size_ = size;
  runs_.clear();
  dirty_count_ = 0;
}

void CowPages::ChangedRanges(bool base_is_extents, std::vector<CowRange>* out) const {
  if (!base_is_extents || !has_base()) {
    out->push_back(CowRange{0, kCowToEnd});
    return;
  }
  const uint64_t s = size_, old = base_size_;
  for (const auto& run : runs_) {
    const uint64_t a = run.first * kCowPage;
    if (a >= s) break;
    const uint64_t b = std::min(run.second * kCowPage, s);
    if (!out->empty() && out->back().end >= a) {
      out->back().end = std::max(out->back().end, b);
    } else {
      out->push_back(CowRange{a, b});
    }
  }
  const uint64_t valid = std::min(valid_base_, old);
  if (valid < old || s != old) {
    // Everything from the first byte that no longer shows the old content to the end.
    const uint64_t t = std::min({valid, s, old});
    while (!out->empty() && out->back().begin >= t) out->pop_back();
    if (!out->empty() && out->back().end >= t) {
      out->back().end = kCowToEnd;
    } else {
      out->push_back(CowRange{t, kCowToEnd});
    }
  }
}

namespace {

// One run of the re-chunk: from `start` until an old cut past every change it covered, or the
// end of the file. Returns the old cut it re-synchronized on, or kCowToEnd.
class RechunkRun {
 public:
  RechunkRun(const CdcParams& params, const std::vector<CowRange>& ranges, uint64_t old_size,
             uint64_t size, std::vector<uint8_t>& buf, RechunkIo& io, RechunkStats& stats)
      : params_(params), ranges_(ranges), old_size_(old_size), size_(size), buf_(buf), io_(io),
        stats_(stats) {}

  uint64_t Run(uint64_t start, size_t* c) {
    cut_ = start;
    uint64_t pos = start;
    while (pos < size_) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(buf_.size(), size_ - pos));
      io_.Read(pos, buf_.data(), len);
      stats_.bytes_read += len;
      pos += len;
      const uint8_t* p = buf_.data();
      size_t n = len;
      while (n > 0) {
        bool cut = false;
        const size_t used = CdcFeed(params_, state_, p, n, &cut);
        if (!cut) {
          carry_.insert(carry_.end(), p, p + used);
          break;
        }
        EmitWith(p, used);
        p += used;
        n -= used;
        while (*c < ranges_.size() && ranges_[*c].end <= cut_) ++*c;
        if (old_size_ > 0 && cut_ < old_size_ && (*c == ranges_.size() || ranges_[*c].begin >= cut_) &&
            io_.OldChunkStart(cut_) == cut_) {
          return cut_;
        }
      }
    }
    if (!carry_.empty()) EmitWith(nullptr, 0);
    return kCowToEnd;
  }

  size_t emitted() const { return emitted_; }

 private:
  // Emits the pending bytes followed by p[0, n) as one chunk.
  void EmitWith(const uint8_t* p, size_t n) {
    size_t len = n;
    if (carry_.empty()) {
      io_.Emit(cut_, p, n);
    } else {
      carry_.insert(carry_.end(), p, p + n);
      len = carry_.size();
      io_.Emit(cut_, carry_.data(), len);
      carry_.clear();
    }
    cut_ += len;
    ++emitted_;
    ++stats_.chunks;
  }

  const CdcParams& params_;
  const std::vector<CowRange>& ranges_;
  const uint64_t old_size_, size_;
  std::vector<uint8_t>& buf_;
  RechunkIo& io_;
  RechunkStats& stats_;
  CdcState state_;
  std::vector<uint8_t> carry_;
  uint64_t cut_ = 0;
  size_t emitted_ = 0;
};

}  // namespace

RechunkStats CowRechunk(const CdcParams& params, const std::vector<CowRange>& ranges,
                        uint64_t old_size, uint64_t size, size_t piece, RechunkIo& io) {
  RechunkStats stats;
  std::vector<uint8_t> buf(std::max<size_t>(piece, 1));
  uint64_t resynced = 0;
  size_t c = 0;
  while (c < ranges.size()) {
    uint64_t start = 0;
    if (old_size > 0) {
      // From the start of the old chunk holding the first changed byte: a cut depends only on
      // the bytes between the previous cut and itself, so every cut up to that byte stands. (At
      // an extension the last old chunk is re-chunked: its end was the end of the file, no cut.)
      start = std::max(resynced, io.OldChunkStart(std::min(ranges[c].begin, old_size - 1)));
    }
    RechunkRun run(params, ranges, old_size, size, buf, io, stats);
    const uint64_t resync = run.Run(start, &c);
    if (resync == kCowToEnd) {
      if (old_size > 0) io.Replace(start, old_size, run.emitted());
      break;
    }
    io.Replace(start, resync, run.emitted());
    resynced = resync;
  }
  return stats;
}

}  // namespace layerfs
