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

// The batch in columns, one typed array per field, so JS reads it without one object per entry.
struct ScanColumns {
  ScanColumns(Napi::Env env, size_t n)
      : kind(n), digest_kind(n), mode(n), uid(n), gid(n), chunk_counts(n), size(n), nlink(n),
        rdev(n), arena_offset(n, -1), mtime(n), ctime(n), ino(n), dev(n), content_ids(32 * n),
        errors(Napi::Array::New(env)), xattr_names(Napi::Array::New(env)),
        data(Napi::Array::New(env, n)) {}

  std::vector<uint8_t> kind, digest_kind;
  std::vector<uint32_t> mode, uid, gid, chunk_counts;
  std::vector<double> size, nlink, rdev, arena_offset;
  std::vector<int64_t> mtime, ctime;
  std::vector<uint64_t> ino, dev;
  std::vector<uint8_t> content_ids;
  std::vector<uint32_t> chunk_lengths;
  std::vector<uint8_t> chunk_ids;
  std::vector<uint32_t> xattr_index, xattr_ends, link_index, link_ends;
  std::vector<uint8_t> xattr_values, link_targets;
  Napi::Array errors;
  Napi::Array xattr_names;
  Napi::Array data;
};

void AddError(Napi::Env env, size_t i, const ScanResult& r, ScanColumns* c) {
  Napi::Array e = Napi::Array::New(env, 4);
  e.Set(0u, Napi::Number::New(env, static_cast<double>(i)));
  e.Set(1u, r.error_code);
  if (r.error_errno) e.Set(2u, ErrnoName(r.error_errno));
  e.Set(3u, r.error_message);
  c->errors.Set(c->errors.Length(), e);
}

void AddStat(size_t i, const struct stat& st, ScanColumns* c) {
  c->kind[i] = KindCode(st.st_mode);
  c->mode[i] = st.st_mode & 07777;
  c->uid[i] = st.st_uid;
  c->gid[i] = st.st_gid;
  c->size[i] = static_cast<double>(st.st_size);
  c->nlink[i] = static_cast<double>(st.st_nlink);
  c->rdev[i] = static_cast<double>(st.st_rdev);
  c->mtime[i] = Nanos(st.st_mtim);
  c->ctime[i] = Nanos(st.st_ctim);
  c->ino[i] = static_cast<uint64_t>(st.st_ino);
  c->dev[i] = static_cast<uint64_t>(st.st_dev);
}

void AddXattrs(size_t i, const ScanResult& r, ScanColumns* c) {
  for (auto& x : r.xattrs) {
    c->xattr_index.push_back(static_cast<uint32_t>(i));
    c->xattr_names.Set(c->xattr_names.Length(), x.name);
    c->xattr_values.insert(c->xattr_values.end(), x.value.begin(), x.value.end());
    c->xattr_ends.push_back(static_cast<uint32_t>(c->xattr_values.size()));
  }
}

void AddLink(size_t i, const ScanResult& r, ScanColumns* c) {
  c->link_index.push_back(static_cast<uint32_t>(i));
  c->link_targets.insert(c->link_targets.end(), r.link_target.begin(), r.link_target.end());
  c->link_ends.push_back(static_cast<uint32_t>(c->link_targets.size()));
}

void AddDigest(size_t i, const ScanResult& r, ScanColumns* c) {
  c->digest_kind[i] = r.digest.chunked ? 2 : 1;
  std::memcpy(c->content_ids.data() + 32 * i, r.digest.content_id, 32);
  c->chunk_counts[i] = static_cast<uint32_t>(r.digest.lengths.size());
  c->chunk_lengths.insert(c->chunk_lengths.end(), r.digest.lengths.begin(), r.digest.lengths.end());
  c->chunk_ids.insert(c->chunk_ids.end(), r.digest.ids.begin(), r.digest.ids.end());
}

// Bytes read into the arena are reported by offset; a malloc'd read is handed to JS without a copy.
void AddData(Napi::Env env, size_t i, ScanResult& r, ScanColumns* c) {
  if (!r.data && r.data_len > 0) {
    c->arena_offset[i] = static_cast<double>(r.arena_offset);
  } else if (r.data_len == 0) {
    c->data.Set(static_cast<uint32_t>(i), Napi::Buffer<uint8_t>::New(env, 0));
  } else {
    Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env, r.data, r.data_len,
                                                         [](Napi::Env, uint8_t* p) { free(p); });
    r.data = nullptr;  // owned by the Buffer now
    c->data.Set(static_cast<uint32_t>(i), b);
  }
}

Napi::Object ColumnsObject(Napi::Env env, ScanColumns& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("kind", Typed(env, c.kind, napi_uint8_array));
  o.Set("mode", Typed(env, c.mode, napi_uint32_array));
  o.Set("uid", Typed(env, c.uid, napi_uint32_array));
  o.Set("gid", Typed(env, c.gid, napi_uint32_array));
  o.Set("size", Typed(env, c.size, napi_float64_array));
  o.Set("nlink", Typed(env, c.nlink, napi_float64_array));
  o.Set("rdev", Typed(env, c.rdev, napi_float64_array));
  o.Set("mtimeNs", Typed(env, c.mtime, napi_bigint64_array));
  o.Set("ctimeNs", Typed(env, c.ctime, napi_bigint64_array));
  o.Set("ino", Typed(env, c.ino, napi_biguint64_array));
  o.Set("dev", Typed(env, c.dev, napi_biguint64_array));
  o.Set("errors", c.errors);
  o.Set("xattrIndex", Typed(env, c.xattr_index, napi_uint32_array));
  o.Set("xattrNames", c.xattr_names);
  o.Set("xattrValues", OwnedBuffer(env, std::move(c.xattr_values)));
  o.Set("xattrEnds", Typed(env, c.xattr_ends, napi_uint32_array));
  o.Set("linkIndex", Typed(env, c.link_index, napi_uint32_array));
  o.Set("linkTargets", OwnedBuffer(env, std::move(c.link_targets)));
  o.Set("linkEnds", Typed(env, c.link_ends, napi_uint32_array));
  o.Set("digestKind", Typed(env, c.digest_kind, napi_uint8_array));
  o.Set("contentIds", OwnedBuffer(env, std::move(c.content_ids)));
  o.Set("chunkCounts", Typed(env, c.chunk_counts, napi_uint32_array));
  o.Set("chunkLengths", Typed(env, c.chunk_lengths, napi_uint32_array));
  o.Set("chunkIds", OwnedBuffer(env, std::move(c.chunk_ids)));
  o.Set("data", c.data);
  o.Set("arenaOffset", Typed(env, c.arena_offset, napi_float64_array));
  return o;
}

}  // namespace

Napi::Value ScanResultsObject(Napi::Env env, std::vector<std::unique_ptr<ScanResult>>& results,
                              bool xattrs) {
  const size_t n = results.size();
  ScanColumns c(env, n);
  for (size_t i = 0; i < n; i++) {
    ScanResult& r = *results[i];
    if (r.error_code) {
      AddError(env, i, r, &c);
      continue;
    }
    AddStat(i, r.st, &c);
    if (xattrs) AddXattrs(i, r, &c);
    if (r.has_link) AddLink(i, r, &c);
    if (r.has_digest) AddDigest(i, r, &c);
    if (r.has_data) AddData(env, i, r, &c);
  }
  return ColumnsObject(env, c);
}

}  // namespace layerfs
