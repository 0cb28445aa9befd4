// Memory blocks of a ChunkStream (napi_stream.cc): recycled between the pool thread that fills
// them and the JS Buffers that show them, so streaming a file allocates a few blocks, not one
// per piece. Shared (shared_ptr) with the Buffers' finalizers, which may run after the stream
// is gone. No Node-API here.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace layerfs {

class BlockPool;

// One block visible to JS as a Buffer; the Buffer's finalizer hint.
struct Handout {
  std::shared_ptr<BlockPool> pool;
  uint8_t* block;
  size_t len;
  bool returned = false;  // given back by release() before the Buffer was finalized
};

class BlockPool {
 public:
  BlockPool(size_t block_size, size_t keep) : block_size_(block_size), keep_(keep) {}
  ~BlockPool() {
    for (uint8_t* b : free_) std::free(b);
  }
  uint8_t* Get() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        uint8_t* b = free_.back();
        free_.pop_back();
        return b;
      }
    }
    allocated_.fetch_add(1, std::memory_order_relaxed);
    return static_cast<uint8_t*>(std::malloc(block_size_));
  }
  void Put(uint8_t* b) {
    std::lock_guard<std::mutex> lock(mu_);
    PutLocked(b);
  }
  void Handed(Handout* h) {
    std::lock_guard<std::mutex> lock(mu_);
    handed_[h->block] = h;
  }
  // Whether `b`/`len` is a live Buffer of this pool.
  bool IsHanded(uint8_t* b, size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handed_.find(b);
    return it != handed_.end() && it->second->len == len;
  }
  // release(), once the Buffer is detached: takes the block back at once (its finalizer, which
  // may run later, then leaves it alone). False if the finalizer already took it back.
  bool Release(uint8_t* b, size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handed_.find(b);
    if (it == handed_.end() || it->second->len != len) return false;
    it->second->returned = true;
    handed_.erase(it);
    PutLocked(b);
    return true;
  }
  // The Buffer's finalizer (JS thread), after a detach or a collection.
  static void Finalized(Handout* h) {
    BlockPool& pool = *h->pool;
    {
      std::lock_guard<std::mutex> lock(pool.mu_);
      if (!h->returned) {
        pool.handed_.erase(h->block);
        pool.PutLocked(h->block);
      }
    }
    delete h;
  }
  size_t Allocated() const { return allocated_.load(std::memory_order_relaxed); }
  // The stream is done: its free blocks are freed now, and blocks coming back later (a piece the
  // producer was filling, a Buffer released or collected) are freed as they come. Without this the
  // free list lived until the stream's JS wrapper was collected: a few MiB per streamed file that
  // V8 does not see (malloc, not external memory), so nothing hurried that collection along.
  void Close() {
    std::vector<uint8_t*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      drop.swap(free_);
    }
    for (uint8_t* b : drop) std::free(b);
  }

 private:
  void PutLocked(uint8_t* b) {
    if (!closed_ && free_.size() < keep_) {
      free_.push_back(b);
      return;
    }
    std::free(b);
  }

  std::mutex mu_;
  std::vector<uint8_t*> free_;
  std::unordered_map<uint8_t*, Handout*> handed_;
  const size_t block_size_;
  const size_t keep_;
  bool closed_ = false;
  std::atomic<size_t> allocated_{0};
};

}  // namespace layerfs
