// One path's scan, run on a worker thread: lstat, xattrs, symlink target, and for regular files
// a stable read (re-read while the file changes under us) plus its digest. No Node-API here.
#pragma once
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "digest.h"

namespace layerfs {

struct ScanOptions {
  DigestOptions digest;
  bool read_data = true;
  // With read_data, files larger than this are not returned whole: they are digested by streaming
  // (digest_oversize) or not read at all, so one huge file cannot make a batch huge.
  uint64_t max_data_size = UINT64_MAX;
  // With read_data, the bytes kept by one batch in total; a file that would go over is handled
  // like one over max_data_size. Bounds a batch's memory whatever its files' sizes.
  uint64_t max_batch_data = UINT64_MAX;
  // When set, kept files are read into this caller-owned arena instead of a malloc'd block each:
  // a file that no longer fits is handled like one over max_data_size.
  uint8_t* arena = nullptr;
  size_t arena_size = 0;
  bool digest_oversize = true;
  bool xattrs = true;
  int retries = 2;
};

struct Xattr {
  std::string name;
  std::vector<uint8_t> value;
};

struct ScanResult {
  // Failure: error_code is "ERR_NATIVE_IO" or "ERR_FILE_CHANGED"; error_errno is 0 for the latter.
  const char* error_code = nullptr;
  int error_errno = 0;
  std::string error_message;

  struct stat st {};
  std::vector<Xattr> xattrs;
  bool has_link = false;
  std::string link_target;
  bool has_digest = false;
  Digest digest;
  bool has_data = false;    // the file was read whole (read_data, not over max_data_size)
  uint8_t* data = nullptr;  // malloc'd, handed to JS without a copy; null in arena mode
  size_t data_len = 0;
  size_t arena_offset = 0;  // arena mode: where the bytes are

  ScanResult() = default;
  ScanResult(const ScanResult&) = delete;
  ScanResult& operator=(const ScanResult&) = delete;
  ~ScanResult();
};

// Reads give up between pieces when *cancel becomes true (the env is going away). `batch_data`
// counts the bytes kept by the whole batch (for max_batch_data, or the arena's fill level);
// shared by its workers.
void ScanPath(const std::string& path, const ScanOptions& opts, const std::atomic<bool>* cancel,
              std::atomic<uint64_t>* batch_data, ScanResult* out);

// Linux errno name ("ENOENT"), or "E<number>" when unknown.
std::string ErrnoName(int err);

// xattr helpers shared with the synchronous API; return 0 or an errno.
int ListUserXattrs(const char* path, std::vector<Xattr>* out, bool with_values);
int ListAllXattrNames(const char* path, std::vector<std::string>* out);

}  // namespace layerfs
