// Buffers that FUSE requests are read into, so that a large WRITE's payload can go to the
// write-behind thread as it lies (napi_write_behind.cc) rather than be copied into its queue.
//
// Each slot is read into at kLead bytes past a page boundary: a WRITE request is its 40-byte
// header, the 40-byte fuse_write_in and the payload, so the payload starts page-aligned and can be
// written to the spool file with O_DIRECT straight from the slot. A slot is held by the thread
// that read into it until that thread reads the next request, and by the write-behind job that
// took its payload until that job is written; it is reused once neither holds it. A request read
// with ReadReady (between the steps of a commit) keeps its slot until its reader releases it, so a
// request held until the commit ends is answered from where it was read. Slots are made on demand
// and kept for the life of the process (the addon is loaded once): at most one per reading thread,
// plus the requests its caller holds (the serving thread bounds those, budget.ts), plus
// kMaxTaken, as the write-behind takes a slot only while fewer than kMaxTaken are taken (else it
// copies, as before). Trim() gives the pages of the slots nobody holds back to
// the system (the write-behind calls it when a drain finds its queue empty: a commit or a read of
// a spool file), so a daemon that wrote a large file does not keep the pool's memory meanwhile.
#pragma once

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "clock.h"

namespace layerfs {

class RequestPool {
 public:
  static constexpr size_t kPage = 4096;
  // fuse_in_header (40) + fuse_write_in (40) before a WRITE's payload.
  static constexpr size_t kWriteHeader = 80;
  static constexpr size_t kLead = kPage - kWriteHeader;
  // The largest request: max_write (1 MiB, max_pages 256) and its headers; what /dev/fuse wants
  // a read buffer to hold at least.
  static constexpr size_t kRequestMax = (1u << 20) + 8192;
  static constexpr size_t kSlotBytes = (kLead + kRequestMax + kPage - 1) / kPage * kPage;

  static RequestPool& Get() {
    static RequestPool* pool = new RequestPool();  // never destroyed (see above)
    return *pool;
  }

  // Reads one request from fd into a free slot (the calling thread's previous slot released
  // first): bytes read, or -errno; *slot says which slot. With poll, fd is polled for the spin
  // time first (SpinUntilReady).
  ssize_t Read(int fd, int* slot, bool poll = true) {
    thread_local Held held;
    if (held.slot >= 0) Release(held.slot);
    uint8_t* base = nullptr;
    held.slot = Acquire(&base);
    *slot = held.slot;
    if (poll) SpinUntilReady(fd);
    const ssize_t n = read(fd, base + kLead, kRequestMax);
    return n < 0 ? -errno : n;
  }

  // How long a reading thread polls fd before it blocks in read(2), in ns (0: never). The serving
  // threads' gate (lib/fuse/kernel-spin.ts) sets it: on while the machine has an idle CPU.
  void SetSpin(int64_t ns) { spin_ns_.store(ns < 0 ? 0 : ns, std::memory_order_relaxed); }

  struct SpinStats {
    int64_t spin_ns, spins, caught, spun_ns;
  };
  SpinStats Spins() const {
    return {spin_ns_.load(std::memory_order_relaxed), spins_.load(std::memory_order_relaxed), caught_.load(std::memory_order_relaxed), spun_ns_.load(std::memory_order_relaxed)};
  }

  // Reads one request from fd into a free slot of the caller's own if one is waiting (poll(2)
  // with no timeout first), -EAGAIN at once otherwise: bytes read, or -errno. The slot (*slot)
  // stays held, whatever the calling thread reads next, until ReleaseHeld. Only one thread reads
  // the descriptor, so what poll reports is still there for the read.
  ssize_t ReadReady(int fd, int* slot) {
    struct pollfd p = {fd, POLLIN, 0};
    const int r = poll(&p, 1, 0);
    if (r < 0) return -errno;
    if (r == 0) return -EAGAIN;
    if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && (p.revents & POLLIN) == 0) return -ENODEV;
    uint8_t* base = nullptr;
    const int s = Acquire(&base);
    const ssize_t n = read(fd, base + kLead, kRequestMax);
    if (n <= 0) {
      const int e = errno;
      Release(s);
      return n < 0 ? -e : 0;
    }
    *slot = s;
    return n;
  }

  // The caller of ReadReady is done with the request in slot.
  void ReleaseHeld(int slot) {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot < 0 || static_cast<size_t>(slot) >= slots_.size() || slots_[static_cast<size_t>(slot)].refs <= 0) return;
    slots_[static_cast<size_t>(slot)].refs--;
  }

  // Slots made so far.
  int Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(slots_.size());
  }

  // Where a slot's request starts (kRequestMax bytes).
  uint8_t* Request(int slot) {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[static_cast<size_t>(slot)].base + kLead;
  }

  // The write-behind takes [p, p + len) as it lies when it is inside a slot and fewer than
  // kMaxTaken slots are taken: the slot index (kept until Release), or -1 (copy it).
  int Take(const uint8_t* p, size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    if (taken_ >= kMaxTaken) return -1;
    for (size_t i = 0; i < slots_.size(); i++) {
      const uint8_t* b = slots_[i].base;
      if (p >= b && p + len <= b + kSlotBytes) {
        slots_[i].refs++;
        taken_++;
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // The write-behind is done with a slot it took.
  void Untake(int slot) {
    std::lock_guard<std::mutex> lock(mu_);
    taken_--;
    slots_[static_cast<size_t>(slot)].refs--;
  }

  static constexpr int kMaxTaken = 32;

  // Drops the pages of every slot that no thread or job holds (they read as zeros when next
  // used). The addresses stay valid: the Buffers over them (fdReadRequest) are kept.
  void Trim() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& slot : slots_) {
      if (slot.refs != 0 || !slot.used) continue;
      madvise(slot.base, kSlotBytes, MADV_DONTNEED);
      slot.used = false;
    }
  }

 private:
  struct Slot {
    uint8_t* base;
    int refs;   // the reading thread or the holder of a ReadReady request (1) + the write-behind job that took it (1)
    bool used;  // read into since the last Trim
  };
  // The slot a thread read its last request into; released when the thread ends.
  struct Held {
    int slot = -1;
    ~Held() {
      if (slot >= 0) Get().Release(slot);
    }
  };

  // Polls fd without blocking for up to the spin time: a request that comes within it is read
  // without this thread sleeping and being woken for it. On an idle CPU the wake-up is most of a
  // round trip here (a reply and the next request meet a sleeping thread on each side).
  void SpinUntilReady(int fd) {
    const int64_t spin = spin_ns_.load(std::memory_order_relaxed);
    if (spin <= 0) return;
    const int64_t start = MonotonicNs();
    int64_t now = start;
    bool ready = false;
    while (now - start < spin) {
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 0) != 0) {
        ready = true;
        break;
      }
      // Another thread that wants this CPU (the writer the next request comes from) runs first.
      sched_yield();
      now = MonotonicNs();
    }
    spins_.fetch_add(1, std::memory_order_relaxed);
    if (ready) caught_.fetch_add(1, std::memory_order_relaxed);
    spun_ns_.fetch_add(now - start, std::memory_order_relaxed);
  }

  int Acquire(uint8_t** base) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < slots_.size(); i++) {
      if (slots_[i].refs == 0) {
        slots_[i].refs = 1;
        slots_[i].used = true;
        *base = slots_[i].base;
        return static_cast<int>(i);
      }
    }
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kPage, kSlotBytes));
    if (p == nullptr) throw std::bad_alloc();
    slots_.push_back(Slot{p, 1, true});
    *base = p;
    return static_cast<int>(slots_.size() - 1);
  }

  void Release(int slot) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[static_cast<size_t>(slot)].refs--;
  }

  std::mutex mu_;
  std::vector<Slot> slots_;
  int taken_ = 0;
  std::atomic<int64_t> spin_ns_{0};
  std::atomic<int64_t> spins_{0};
  std::atomic<int64_t> caught_{0};
  std::atomic<int64_t> spun_ns_{0};
};

}  // namespace layerfs
