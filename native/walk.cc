#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace layerfs {

uint8_t WalkKindOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return kWalkFile;
    case S_IFDIR: return kWalkDir;
    case S_IFLNK: return kWalkSymlink;
    case S_IFIFO: return kWalkFifo;
    case S_IFCHR: return kWalkCharDev;
    case S_IFBLK: return kWalkBlockDev;
    case S_IFSOCK: return kWalkSocket;
    default: return kWalkUnknown;
  }
}

namespace {

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

// A directory that disappeared or was replaced (by a file or a symlink) after its parent listed
// it: it is simply absent from this walk.
bool VanishedDir(int err) { return err == ENOENT || err == ENOTDIR || err == ELOOP; }

}  // namespace

struct TreeWalk::Stat {
  uint64_t ino;
  int64_t size;
  int64_t mtime_ns;
  int64_t ctime_ns;
  uint32_t mode;  // the whole st_mode

  void Set(const struct stat& st) {
    ino = static_cast<uint64_t>(st.st_ino);
    size = static_cast<int64_t>(st.st_size);
    mtime_ns = Nanos(st.st_mtim);
    ctime_ns = Nanos(st.st_ctim);
    mode = static_cast<uint32_t>(st.st_mode);
  }
};

struct TreeWalk::Child {
  uint32_t name_off;
  uint32_t name_len;
  int32_t listing;  // the child's own listing (directories, once read); -1 otherwise
  bool gone;        // a directory that vanished before it could be opened
  Stat st;
};

struct TreeWalk::Listing {
  std::string names;            // each name followed by a NUL, so it can be passed to fstatat
  std::vector<Child> children;  // sorted by name bytes
  Stat self;                    // the root's own stat (fstat of the opened directory)
};

TreeWalk::TreeWalk(std::string root, const std::atomic<bool>* cancel)
    : root_(std::move(root)), cancel_(cancel) {
  stack_.push_back(Task{-1, 0, root_});
}

TreeWalk::~TreeWalk() = default;

TreeWalk::Outcome TreeWalk::Process(const Task& t, Listing* out, WalkError* err) const {
  const bool is_root = t.listing < 0;
  auto fail = [&](const char* syscall, int e, const std::string& path) {
    err->err = e;
    err->syscall = syscall;
    err->path = path;
    return Outcome::kFailed;
  };
  int fd;
  do {
    fd = open(t.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int e = errno;
    if (is_root) return fail("open", e == ELOOP ? ENOTDIR : e, t.path);
    if (VanishedDir(e)) return Outcome::kGone;
    return fail("open", e, t.path);
  }
  if (is_root) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      const int e = errno;
      close(fd);
      return fail("fstat", e, t.path);
    }
    out->self.Set(st);
  }
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    close(fd);
    return fail("opendir", e, t.path);
  }
  // Names first, then sort, then lstat in name order.
  for (;;) {
    errno = 0;
    struct dirent* de = readdir(d);
    if (de == nullptr) {
      if (errno != 0) {
        const int e = errno;
        closedir(d);
        return fail("readdir", e, t.path);
      }
      break;
    }
    const char* n = de->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    Child c;
    c.name_off = static_cast<uint32_t>(out->names.size());
    c.name_len = static_cast<uint32_t>(strlen(n));
    c.listing = -1;
    c.gone = false;
    out->names.append(n, c.name_len + 1);
    out->children.push_back(c);
  }
  const char* base = out->names.data();
  std::sort(out->children.begin(), out->children.end(), [base](const Child& a, const Child& b) {
    const int r = std::memcmp(base + a.name_off, base + b.name_off, std::min(a.name_len, b.name_len));
    return r != 0 ? r < 0 : a.name_len < b.name_len;
  });
  size_t kept = 0;
  struct stat st;
  for (size_t i = 0; i < out->children.size(); i++) {
    Child& c = out->children[i];
    if (fstatat(fd, base + c.name_off, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      const int e = errno;
      if (e == ENOENT) continue;  // deleted since readdir: absent
      closedir(d);
      std::string p = t.path;
      if (p.empty() || p.back() != '/') p.push_back('/');
      return fail("lstat", e, p.append(base + c.name_off, c.name_len));
    }
    c.st.Set(st);
    if (kept != i) out->children[kept] = c;
    kept++;
  }
  out->children.resize(kept);
  closedir(d);
  return Outcome::kListed;
}

bool TreeWalk::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (finished_) return false;
    const bool stop = error_.err != 0 || cancelled_ || (cancel_ && cancel_->load(std::memory_order_relaxed));
    if (stop && error_.err == 0) cancelled_ = true;
    if (!stop && !stack_.empty()) {
      Task t = std::move(stack_.back());
      stack_.pop_back();
      busy_++;
      lock.unlock();
      auto listing = std::make_unique<Listing>();
      WalkError err;
      const Outcome o = Process(t, listing.get(), &err);
      lock.lock();
      busy_--;
      if (o == Outcome::kFailed) {
        if (error_.err == 0) error_ = std::move(err);
      } else if (o == Outcome::kGone) {
        listings_[t.listing]->children[t.child].gone = true;
      } else {
        const int32_t id = static_cast<int32_t>(listings_.size());
        // The root is read first, alone, so it is listing 0.
        if (t.listing >= 0) listings_[t.listing]->children[t.child].listing = id;
        // Pushed in reverse so the first subdirectory is read next (depth-first keeps the
        // stack short); the result order does not depend on which thread reads what.
        const std::vector<Child>& ch = listing->children;
        for (size_t k = ch.size(); k-- > 0;) {
          if (!S_ISDIR(ch[k].st.mode)) continue;
          std::string p = t.path;
          if (p.empty() || p.back() != '/') p.push_back('/');
          p.append(listing->names, ch[k].name_off, ch[k].name_len);
          stack_.push_back(Task{id, static_cast<uint32_t>(k), std::move(p)});
        }
        listings_.push_back(std::move(listing));
      }
      cv_.notify_all();
      continue;
    }
    if (busy_ == 0) {
      finished_ = true;
      cv_.notify_all();
      return true;
    }
    cv_.wait(lock);
  }
}

void TreeWalk::Assemble(WalkResult* out) const {
  size_t total = 1, name_bytes = 0;
  for (const auto& l : listings_) {
    total += l->children.size();
    name_bytes += l->names.size();
  }
  out->names.clear();
  out->names.reserve(name_bytes);
  out->name_offsets.clear();
  out->name_offsets.reserve(total + 1);
  out->parent.clear();
  out->parent.reserve(total);
  out->kind.clear();
  out->kind.reserve(total);
  out->mode.clear();
  out->mode.reserve(total);
  out->ino.clear();
  out->ino.reserve(total);
  out->size.clear();
  out->size.reserve(total);
  out->mtime_ns.clear();
  out->mtime_ns.reserve(total);
  out->ctime_ns.clear();
  out->ctime_ns.reserve(total);
  auto push = [out](const Stat& st, int32_t parent) {
    out->parent.push_back(parent);
    out->kind.push_back(WalkKindOf(st.mode));
    out->mode.push_back(st.mode & 07777);
    out->ino.push_back(st.ino);
    out->size.push_back(st.size);
    out->mtime_ns.push_back(st.mtime_ns);
    out->ctime_ns.push_back(st.ctime_ns);
  };
  if (listings_.empty()) return;  // failed or cancelled before the root was read
  out->name_offsets.push_back(0);
  push(listings_[0]->self, -1);
  out->name_offsets.push_back(0);
  // Listing 0 is the root's. Visit as lib/store/import/walk.ts does: pop a directory, append all
  // its children, then push its subdirectories so the first one is visited next.
  std::vector<std::pair<int32_t, int32_t>> stack;  // (listing, index of its directory entry)
  stack.emplace_back(0, 0);
  std::vector<std::pair<int32_t, int32_t>> dirs;
  while (!stack.empty()) {
    const auto [lid, self] = stack.back();
    stack.pop_back();
    const Listing& l = *listings_[lid];
    dirs.clear();
    for (const Child& c : l.children) {
      if (c.gone) continue;
      const int32_t index = static_cast<int32_t>(out->parent.size());
      out->names.append(l.names, c.name_off, c.name_len);
      out->name_offsets.push_back(static_cast<uint32_t>(out->names.size()));
      push(c.st, self);
      if (c.listing >= 0) dirs.emplace_back(c.listing, index);
    }
    for (size_t k = dirs.size(); k-- > 0;) stack.push_back(dirs[k]);
  }
}

WalkMatch CompareWalk(const WalkResult& now, const WalkView& old, std::vector<uint32_t>* changed) {
  const size_t n = now.count();
  changed->clear();
  if (n != old.count || now.names.size() != old.names_size) return WalkMatch::kDifferent;
  auto same = [](const void* a, const void* b, size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; };
  if (!same(now.names.data(), old.names, old.names_size) ||
      !same(now.name_offsets.data(), old.name_offsets, (n + 1) * sizeof(uint32_t)) ||
      !same(now.parent.data(), old.parent, n * sizeof(int32_t)) ||
      !same(now.kind.data(), old.kind, n) || !same(now.ino.data(), old.ino, n * sizeof(uint64_t))) {
    return WalkMatch::kDifferent;
  }
  for (size_t i = 0; i < n; i++) {
    if (now.mode[i] != old.mode[i] || now.size[i] != old.size[i] || now.mtime_ns[i] != old.mtime_ns[i] ||
        now.ctime_ns[i] != old.ctime_ns[i]) {
      changed->push_back(static_cast<uint32_t>(i));
    }
  }
  return changed->empty() ? WalkMatch::kSame : WalkMatch::kStats;
}

}  // namespace layerfs
