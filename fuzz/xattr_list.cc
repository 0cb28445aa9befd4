// libFuzzer harness for the xattr listing parser (CollectXattrs in native/scan.cc): it splits the
// NUL-separated name list that llistxattr/flistxattr return and reads each value, while another
// process may be adding, removing or resizing attributes between the calls. Names and values are
// untrusted bytes from the scanned file.
//
// The list and get functions here follow the kernel's contract (size 0 asks for the size; a
// buffer too small is ERANGE; a vanished name is ENODATA) but serve input-chosen contents that
// change from call to call, so every race the scan can meet is reachable.
//
// Input: [0] flags (user_only, with_values), then a script of "versions": each version is
// [len u16][list bytes]; get answers come from the remaining bytes.
//
// Properties: no out-of-bounds access (ASan), termination; every name returned is non-empty,
// has no NUL, appears as a complete entry in one of the lists served, starts with "user." when
// user_only; each value is bytes a successful get returned for that name.
#include <errno.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "scan.cc"  // CollectXattrs is internal to scan.cc

using layerfs_fuzz::Reader;
using layerfs_fuzz::Rng;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* in, size_t n) {
  Reader r(in, n);
  const uint8_t flags = r.U8();
  const bool user_only = flags & 1;
  const bool with_values = flags & 2;
  std::vector<std::vector<char>> versions;
  for (int v = 0; v < 4; v++) {
    const size_t len = r.U16() % 512;
    std::vector<char> list;
    for (size_t i = 0; i < len && r.RestSize() > 0; i++) list.push_back(static_cast<char>(r.U8()));
    // Sometimes make entries well-formed user.* names, so the value path is reached often.
    if (flags & 4 && v == 0) {
      const char* extra = "user.a\0user.bb\0trusted.x\0\0user.\0";
      list.insert(list.end(), extra, extra + 31);
    }
    versions.push_back(std::move(list));
    if (r.RestSize() == 0) break;
  }
  Rng rng(layerfs_fuzz::SeedFrom(in, n));
  std::set<std::string> served;  // every complete entry of every list served
  for (const auto& l : versions) {
    for (size_t i = 0; i < l.size();) {
      const size_t e = strnlen(l.data() + i, l.size() - i);
      served.insert(std::string(l.data() + i, e));
      i += e + 1;
    }
  }

  size_t list_calls = 0;
  auto list = [&](char* buf, size_t size) -> ssize_t {
    // The list changes between calls with input-chosen probability.
    const auto& cur = versions[(list_calls++ + (rng.Below(3) == 0 ? 1 : 0)) % versions.size()];
    if (list_calls > 64) FUZZ_CHECK(false && "CollectXattrs keeps listing");
    if (size == 0) return static_cast<ssize_t>(cur.size());
    if (cur.size() > size) {
      errno = ERANGE;
      return -1;
    }
    if (!cur.empty()) std::memcpy(buf, cur.data(), cur.size());
    return static_cast<ssize_t>(cur.size());
  };
  std::map<std::string, std::set<std::vector<uint8_t>>> values;  // every value a get returned
  size_t get_calls = 0;
  auto get = [&](const char* name, void* buf, size_t size) -> ssize_t {
    FUZZ_CHECK(++get_calls < 100000);
    const std::string nm(name);
    FUZZ_CHECK(served.count(nm) == 1);
    const uint64_t pick = rng.Below(16);
    if (pick == 0) {
      errno = ENODATA;  // removed since the listing
      return -1;
    }
    if (pick == 1) {
      errno = EACCES;
      return -1;
    }
    // A value whose length may change from call to call (a concurrent setxattr).
    const size_t len = rng.Below(pick < 4 ? 300 : 40);
    std::vector<uint8_t> value(len);
    for (auto& b : value) b = static_cast<uint8_t>(rng.Next());
    if (size == 0) return static_cast<ssize_t>(len);
    if (len > size) {
      errno = ERANGE;
      return -1;
    }
    if (len > 0) std::memcpy(buf, value.data(), len);
    values[nm].insert(value);
    return static_cast<ssize_t>(len);
  };

  std::vector<layerfs::Xattr> out;
  const int err = layerfs::CollectXattrs(list, get, user_only, with_values, &out);
  if (err != 0) return 0;  // a typed failure (errno) is an allowed outcome
  for (const auto& x : out) {
    FUZZ_CHECK(!x.name.empty());
    FUZZ_CHECK(x.name.find('\0') == std::string::npos);
    FUZZ_CHECK(served.count(x.name) == 1);
    if (user_only) FUZZ_CHECK(x.name.compare(0, 5, "user.") == 0);
    if (with_values) {
      // Empty when the size probe said 0; otherwise bytes some get returned for this name.
      if (!x.value.empty()) FUZZ_CHECK(values.count(x.name) == 1 && values[x.name].count(x.value) == 1);
    } else {
      FUZZ_CHECK(x.value.empty());
    }
  }
  return 0;
}
