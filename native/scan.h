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
  uint8_t* data = nullptr;  // malloc'd, handed to JS without a copy
  size_t data_len = 0;

  ScanResult() = default;
  ScanResult(const ScanResult&) = delete;
  ScanResult& operator=(const ScanResult&) = delete;
  ~ScanResult();
};

// Reads give up between pieces when *cancel becomes true (the env is going away).
void ScanPath(const std::string& path, const ScanOptions& opts, const std::atomic<bool>* cancel,
              ScanResult* out);

// Linux errno name ("ENOENT"), or "E<number>" when unknown.
std::string ErrnoName(int err);

// xattr helpers shared with the synchronous API; return 0 or an errno.
int ListUserXattrs(const char* path, std::vector<Xattr>* out, bool with_values);
int ListAllXattrNames(const char* path, std::vector<std::string>* out);

}  // namespace layerfs
