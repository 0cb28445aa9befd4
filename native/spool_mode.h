// How the write-behind thread writes a large aligned spool piece: through the page cache, or with
// O_DIRECT. Neither is best everywhere. Through the page cache a piece costs a memory copy where
// the kernel hands out recycled pages, and the file reads back from memory; but on a VM whose
// host takes back free guest memory (virtio-balloon free page reporting) every page free for a
// couple of seconds must be faulted in again by the host, and the same copy costs 5-10x. O_DIRECT
// costs the disk's rate, whatever the memory. So in the automatic mode (the default) the thread
// times its pieces: it writes through the page cache while that stays faster than kSlowNsPerMiB
// (a moving average), switches to O_DIRECT when it does not, and from there sends every
// kProbeEvery-th piece through the page cache again to see whether pages are cheap again.
// Pieces through the page cache never start O_DIRECT reads of their file (one O_DIRECT piece
// does: direct_files.h), so the automatic mode never probes O_DIRECT while the page cache is fast.
// Used by one thread only (the write-behind thread); the counters are read by others.
#ifndef LAYERFS_SPOOL_MODE_H_
#define LAYERFS_SPOOL_MODE_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace layerfs {

class SpoolMode {
 public:
  enum class Setting { kBuffered, kDirect, kAuto };

  // $LAYERFS_SPOOL_DIRECT: 0 always through the page cache, 1 always O_DIRECT, unset (or
  // anything else) automatic. $LAYERFS_SPOOL_SLOW_NS_PER_MIB moves the automatic mode's
  // threshold (tests force either side with it).
  static SpoolMode FromEnv() {
    const char* v = getenv("LAYERFS_SPOOL_DIRECT");
    Setting s = Setting::kAuto;
    if (v != nullptr && std::strcmp(v, "0") == 0) s = Setting::kBuffered;
    if (v != nullptr && std::strcmp(v, "1") == 0) s = Setting::kDirect;
    const char* t = getenv("LAYERFS_SPOOL_SLOW_NS_PER_MIB");
    const double slow = t != nullptr ? strtod(t, nullptr) : kSlowNsPerMiB;
    return SpoolMode(s, slow > 0 ? slow : kSlowNsPerMiB);
  }

  SpoolMode(Setting s, double slow) : setting_(s), slow_(slow) {}

  // Whether O_DIRECT may be used at all (reads of directly written files depend on it).
  bool MayDirect() const { return setting_ != Setting::kBuffered; }

  // For the next large aligned piece: O_DIRECT or not.
  bool Direct() {
    if (setting_ != Setting::kAuto) return setting_ == Setting::kDirect;
    if (!direct_) return false;
    return ++since_probe_ % kProbeEvery != 0;
  }

  // A large aligned piece of `len` bytes took `ns` to write, directly or not.
  void Took(bool direct, size_t len, uint64_t ns) {
    (direct ? direct_pieces_ : buffered_pieces_).fetch_add(1, std::memory_order_relaxed);
    if (setting_ != Setting::kAuto || len == 0) return;
    // Only the page cache's cost decides: O_DIRECT's is the disk's, which a concurrent writeback
    // slows as much as it slows the page cache's own (a comparison flapped back to fresh pages).
    if (direct) return;
    const double per_mib = static_cast<double>(ns) * static_cast<double>(1u << 20) / static_cast<double>(len);
    buffered_ns_ = buffered_ns_ == 0 ? per_mib : buffered_ns_ + (per_mib - buffered_ns_) * kWeight;
    const bool to_direct = buffered_ns_ > slow_;
    if (to_direct != direct_) {
      direct_ = to_direct;
      since_probe_ = 0;
      switches_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Pieces written each way, and switches between them, since the start (diagnostics, tests).
  uint64_t direct_pieces() const { return direct_pieces_.load(std::memory_order_relaxed); }
  uint64_t buffered_pieces() const { return buffered_pieces_.load(std::memory_order_relaxed); }
  uint64_t switches() const { return switches_.load(std::memory_order_relaxed); }

 private:
  // 1 MiB per millisecond: a copy into recycled pages takes 0.2-0.4 ms per MiB here, into pages
  // the host took back 1.4-2.3 ms, and the disk writes O_DIRECT at about 1 GB/s.
  static constexpr double kSlowNsPerMiB = 1e6;
  static constexpr unsigned kProbeEvery = 16;
  static constexpr double kWeight = 0.25;

  Setting setting_;
  double slow_;
  bool direct_ = false;
  unsigned since_probe_ = 0;
  double buffered_ns_ = 0;  // moving average, per MiB, of large pieces through the page cache
  std::atomic<uint64_t> direct_pieces_{0};
  std::atomic<uint64_t> buffered_pieces_{0};
  std::atomic<uint64_t> switches_{0};
};

}  // namespace layerfs

#endif  // LAYERFS_SPOOL_MODE_H_
