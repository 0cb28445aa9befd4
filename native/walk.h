// Parallel directory walk with lstat of every entry, run on worker threads. No Node-API here.
//
// Order of the result (the same as lib/store/import/walk.ts): entry 0 is the root; a directory's
// children are listed contiguously, sorted by name bytes, when the directory is visited, and
// directories are visited depth-first in that order (a parent always precedes its children).
// Symlinks are never followed (the root must be a real directory). Entries that vanish between
// readdir and lstat, and directories that vanish before they are opened, are simply absent.
#pragma once
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace layerfs {

// Kind codes: the inode kinds of docs/FORMAT.md, plus socket and unknown.
enum WalkKind : uint8_t {
  kWalkUnknown = 0,
  kWalkFile = 1,
  kWalkDir = 2,
  kWalkSymlink = 3,
  kWalkFifo = 4,
  kWalkCharDev = 5,
  kWalkBlockDev = 6,
  kWalkSocket = 7,
};

uint8_t WalkKindOf(mode_t mode);

// Struct of arrays, one slot per entry.
struct WalkResult {
  std::string names;                  // every name, concatenated (the root's is empty)
  std::vector<uint32_t> name_offsets;  // count + 1: name i is names[off[i], off[i + 1])
  std::vector<int32_t> parent;        // index of the parent directory; -1 for the root
  std::vector<uint8_t> kind;          // WalkKind
  std::vector<uint32_t> mode;         // st_mode & 07777
  std::vector<uint64_t> ino;
  std::vector<int64_t> size;
  std::vector<int64_t> mtime_ns;
  std::vector<int64_t> ctime_ns;

  size_t count() const { return parent.size(); }
};

// A walk held elsewhere (the stat cache of a Workspace, lib/workspace/cache.ts): the same arrays
// as a WalkResult, borrowed.
struct WalkView {
  const char* names;
  size_t names_size;
  const uint32_t* name_offsets;  // count + 1
  const int32_t* parent;
  const uint8_t* kind;
  const uint32_t* mode;
  const uint64_t* ino;
  const int64_t* size;
  const int64_t* mtime_ns;
  const int64_t* ctime_ns;
  size_t count;
};

enum class WalkMatch {
  kSame,       // every entry and field equal: nothing changed
  kStats,      // same paths, parents, kinds and inodes; some mode/size/times differ (*changed)
  kDifferent,  // paths, kinds or inodes moved: the caller needs the whole walk
};

// Compares a finished walk with `old`, entry by entry (both are in walk order, so equal trees
// give equal arrays). With kStats, *changed lists the entries whose mode, size or times differ.
WalkMatch CompareWalk(const WalkResult& now, const WalkView& old, std::vector<uint32_t>* changed);

struct WalkError {
  int err = 0;  // errno; 0 = no error
  std::string syscall;
  std::string path;
};

class TreeWalk {
 public:
  // cancel may be null; when it becomes true, workers stop taking directories.
  TreeWalk(std::string root, const std::atomic<bool>* cancel);
  TreeWalk(const TreeWalk&) = delete;
  TreeWalk& operator=(const TreeWalk&) = delete;
  ~TreeWalk();

  // Called by any number of threads at once; each returns when no directory is left. Exactly one
  // call returns true: the one that saw the walk finish (the others may return before or after).
  bool Work();

  // Once any Work() returned: the first error (err == 0 when none), and whether it was cancelled.
  const WalkError& error() const { return error_; }
  bool cancelled() const { return cancelled_; }

  // Once any Work() returned and there is no error: the entries in walk order.
  void Assemble(WalkResult* out) const;

 private:
  struct Stat;
  struct Child;
  struct Listing;
  struct Task {
    int32_t listing;  // parent listing; -1 for the root
    uint32_t child;   // index in the parent listing
    std::string path;
  };
  enum class Outcome { kListed, kGone, kFailed };

  Outcome Process(const Task& t, Listing* out, WalkError* err) const;

  const std::string root_;
  const std::atomic<bool>* cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Task> stack_;
  std::vector<std::unique_ptr<Listing>> listings_;
  size_t busy_ = 0;
  bool finished_ = false;
  bool cancelled_ = false;
  WalkError error_;
};

}  // namespace layerfs
