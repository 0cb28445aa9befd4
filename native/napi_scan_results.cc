#include "napi_scan_results.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "napi_util.h"

namespace layerfs {

namespace {

// Must match KINDS in lib/native/scan.ts; 0 marks a failed entry.
uint8_t KindCode(mode_t m) {
  switch (m & S_IFMT) {
    case S_IFREG: return 1;
    case S_IFDIR: return 2;
    case S_IFLNK: return 3;
    case S_IFIFO: return 4;
    case S_IFCHR: return 5;
    case S_IFBLK: return 6;
    case S_IFSOCK: return 7;
    default: return 8;
  }
}

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

template <typename T>
Napi::TypedArrayOf<T> Typed(Napi::Env env, const std::vector<T>& v, napi_typedarray_type type) {
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(ab.Data(), v.data(), v.size() * sizeof(T));
  return Napi::TypedArrayOf<T>::New(env, v.size(), ab, 0, type);
}

Napi::Buffer<uint8_t> OwnedBuffer(Napi::Env env, std::vector<uint8_t>&& v) {
  if (v.empty()) return Napi::Buffer<uint8_t>::New(env, 0);
  auto* owned = new std::vector<uint8_t>(std::move(v));
  return Napi::Buffer<uint8_t>::New(
      env, owned->data(), owned->size(), [](Napi::Env, uint8_t*, std::vector<uint8_t>* p) { delete p; },
      owned);
}

}  // namespace

Napi::Value ScanResultsObject(Napi::Env env, std::vector<std::unique_ptr<ScanResult>>& results,
                              bool xattrs) {
  const size_t n = results.size();
  std::vector<uint8_t> kind(n), digest_kind(n);
  std::vector<uint32_t> mode(n), uid(n), gid(n), chunk_counts(n);
  std::vector<double> size(n), nlink(n), rdev(n), arena_offset(n, -1);
  std::vector<int64_t> mtime(n), ctime(n);
  std::vector<uint64_t> ino(n), dev(n);
  std::vector<uint8_t> content_ids(32 * n);
  std::vector<uint32_t> chunk_lengths;
  std::vector<uint8_t> chunk_ids;
  std::vector<uint32_t> xattr_index, xattr_ends, link_index, link_ends;
  std::vector<uint8_t> xattr_values, link_targets;
  Napi::Array errors = Napi::Array::New(env);
  Napi::Array xattr_names = Napi::Array::New(env);
  Napi::Array data = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; i++) {
    ScanResult& r = *results[i];
    if (r.error_code) {
      Napi::Array e = Napi::Array::New(env, 4);
      e.Set(0u, Napi::Number::New(env, static_cast<double>(i)));
      e.Set(1u, r.error_code);
      if (r.error_errno) e.Set(2u, ErrnoName(r.error_errno));
      e.Set(3u, r.error_message);
      errors.Set(errors.Length(), e);
      continue;
    }
    const struct stat& st = r.st;
    kind[i] = KindCode(st.st_mode);
    mode[i] = st.st_mode & 07777;
    uid[i] = st.st_uid;
    gid[i] = st.st_gid;
    size[i] = static_cast<double>(st.st_size);
    nlink[i] = static_cast<double>(st.st_nlink);
    rdev[i] = static_cast<double>(st.st_rdev);
    mtime[i] = Nanos(st.st_mtim);
    ctime[i] = Nanos(st.st_ctim);
    ino[i] = static_cast<uint64_t>(st.st_ino);
    dev[i] = static_cast<uint64_t>(st.st_dev);
    if (xattrs) {
      for (auto& x : r.xattrs) {
        xattr_index.push_back(static_cast<uint32_t>(i));
        xattr_names.Set(xattr_names.Length(), x.name);
        xattr_values.insert(xattr_values.end(), x.value.begin(), x.value.end());
        xattr_ends.push_back(static_cast<uint32_t>(xattr_values.size()));
      }
    }
    if (r.has_link) {
      link_index.push_back(static_cast<uint32_t>(i));
      link_targets.insert(link_targets.end(), r.link_target.begin(), r.link_target.end());
      link_ends.push_back(static_cast<uint32_t>(link_targets.size()));
    }
    if (r.has_digest) {
      digest_kind[i] = r.digest.chunked ? 2 : 1;
      std::memcpy(content_ids.data() + 32 * i, r.digest.content_id, 32);
      chunk_counts[i] = static_cast<uint32_t>(r.digest.lengths.size());
      chunk_lengths.insert(chunk_lengths.end(), r.digest.lengths.begin(), r.digest.lengths.end());
      chunk_ids.insert(chunk_ids.end(), r.digest.ids.begin(), r.digest.ids.end());
    }
    if (r.has_data && !r.data && r.data_len > 0) {
      arena_offset[i] = static_cast<double>(r.arena_offset);
    } else if (r.has_data) {
      if (r.data_len == 0) {
        data.Set(static_cast<uint32_t>(i), Napi::Buffer<uint8_t>::New(env, 0));
      } else {
        Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env, r.data, r.data_len,
                                                             [](Napi::Env, uint8_t* p) { free(p); });
        r.data = nullptr;  // owned by the Buffer now
        data.Set(static_cast<uint32_t>(i), b);
      }
    }
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("kind", Typed(env, kind, napi_uint8_array));
  o.Set("mode", Typed(env, mode, napi_uint32_array));
  o.Set("uid", Typed(env, uid, napi_uint32_array));
  o.Set("gid", Typed(env, gid, napi_uint32_array));
  o.Set("size", Typed(env, size, napi_float64_array));
  o.Set("nlink", Typed(env, nlink, napi_float64_array));
  o.Set("rdev", Typed(env, rdev, napi_float64_array));
  o.Set("mtimeNs", Typed(env, mtime, napi_bigint64_array));
  o.Set("ctimeNs", Typed(env, ctime, napi_bigint64_array));
  o.Set("ino", Typed(env, ino, napi_biguint64_array));
  o.Set("dev", Typed(env, dev, napi_biguint64_array));
  o.Set("errors", errors);
  o.Set("xattrIndex", Typed(env, xattr_index, napi_uint32_array));
  o.Set("xattrNames", xattr_names);
  o.Set("xattrValues", OwnedBuffer(env, std::move(xattr_values)));
  o.Set("xattrEnds", Typed(env, xattr_ends, napi_uint32_array));
  o.Set("linkIndex", Typed(env, link_index, napi_uint32_array));
  o.Set("linkTargets", OwnedBuffer(env, std::move(link_targets)));
  o.Set("linkEnds", Typed(env, link_ends, napi_uint32_array));
  o.Set("digestKind", Typed(env, digest_kind, napi_uint8_array));
  o.Set("contentIds", OwnedBuffer(env, std::move(content_ids)));
  o.Set("chunkCounts", Typed(env, chunk_counts, napi_uint32_array));
  o.Set("chunkLengths", Typed(env, chunk_lengths, napi_uint32_array));
  o.Set("chunkIds", OwnedBuffer(env, std::move(chunk_ids)));
  o.Set("data", data);
  o.Set("arenaOffset", Typed(env, arena_offset, napi_float64_array));
  return o;
}

}  // namespace layerfs
