// Files this process writes with O_DIRECT (the write-behind of spool files,
// napi_write_behind.cc), by (dev, ino). Their bytes are on disk, not in the page cache, and
// nothing else reads them, so the ChunkReader reads them with O_DIRECT too (chunk_reader.cc):
// filling the page cache with them would cost, at a commit, what writing around it saved
// (docs/BENCHMARKS.md). Header-only, so the fuzz harnesses link the reader without the addon.
#pragma once
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

namespace layerfs {

class DirectFiles {
 public:
  static DirectFiles& Get() {
    static DirectFiles* d = new DirectFiles();  // never destroyed: threads may use it at exit
    return *d;
  }
  void Add(uint64_t dev, uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.emplace(dev, ino);
  }
  void Remove(uint64_t dev, uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase({dev, ino});
  }
  bool Has(uint64_t dev, uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    return files_.count({dev, ino}) != 0;
  }

 private:
  std::mutex mu_;
  std::set<std::pair<uint64_t, uint64_t>> files_;
};

}  // namespace layerfs
