// zstd dictionaries for the Store's small objects (lib/store/dictionary.ts). A dictionary is
// trained from samples of a Store's small objects and stored as an object of its own; groups
// compressed with it name it in their index rows, so whoever holds the frame can fetch it.
// Frames stay magicless, without checksum or dictionary id (napi_zstd.cc).
//
// Decoding needs only the zstd sources compiled into this addon. Training needs ZDICT, which
// the zstd sources shipped with zstd-napi do not include (no dictBuilder/), so it is taken from
// the system's libzstd (Debian's libzstd1) when present, loaded privately with dlopen; without
// it zstdTrainDictionary returns null and a Store simply stores no dictionary.
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "zstd_frame.h"

namespace layerfs {

namespace {

using TrainFn = size_t (*)(void*, size_t, const void*, const size_t*, unsigned);
using IsErrorFn = unsigned (*)(size_t);

// ZDICT_fastCover_params_t of zstd 1.4.5 and later (zdict.h, static-linking section): the
// layout libzstd1 of Debian 12 (1.5.4) and later releases share.
struct FastCoverParams {
  unsigned k;
  unsigned d;
  unsigned f;
  unsigned steps;
  unsigned nbThreads;
  double splitPoint;
  unsigned accel;
  unsigned shrinkDict;
  unsigned shrinkDictMaxRegression;
  int compressionLevel;
  unsigned notificationLevel;
  unsigned dictID;
};
using FastCoverFn = size_t (*)(void*, size_t, const void*, const size_t*, unsigned, FastCoverParams);
using VersionFn = unsigned (*)();

struct Zdict {
  TrainFn train = nullptr;
  IsErrorFn isError = nullptr;
  // Null before zstd 1.4.5 (another parameter layout): training then searches its parameters.
  FastCoverFn fastCover = nullptr;
};

const Zdict& LoadZdict() {
  static Zdict z = [] {
    Zdict out;
    // DEEPBIND: libzstd's calls among its own functions must reach its own code, whatever zstd
    // another library of the process made global (a different version's structures differ).
#ifdef RTLD_DEEPBIND
    void* h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#else
    void* h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) return out;
    out.train = reinterpret_cast<TrainFn>(dlsym(h, "ZDICT_trainFromBuffer"));
    out.isError = reinterpret_cast<IsErrorFn>(dlsym(h, "ZDICT_isError"));
    auto version = reinterpret_cast<VersionFn>(dlsym(h, "ZSTD_versionNumber"));
    if (version && version() >= 10405) out.fastCover = reinterpret_cast<FastCoverFn>(dlsym(h, "ZDICT_trainFromBuffer_fastCover"));
    if (!out.train || !out.isError) out = Zdict();
    return out;
  }();
  return z;
}

// Digested dictionaries are costly to build (a level-19 CDict indexes the whole dictionary), so
// the last one of each direction is kept and reused while the same bytes (and level) come back.
struct CDictCache {
  std::string bytes;
  std::string key;
  int level = 0;
  ZSTD_CDict* cdict = nullptr;
};
struct DDictCache {
  std::string bytes;
  std::string key;
  ZSTD_DDict* ddict = nullptr;
};

// Whether `held` (kept under `heldKey`) is dictionary `b` given under `key` (CachedCDict).
bool Same(const std::string& held, const std::string& heldKey, const Bytes& b, const std::string& key) {
  if (held.size() != b.size) return false;
  if (!key.empty()) return key == heldKey;
  return std::memcmp(held.data(), b.data, b.size) == 0;
}

ZSTD_DDict* DDictFor(const Bytes& dict, const std::string& key) {
  static thread_local DDictCache d;
  if (d.ddict && Same(d.bytes, d.key, dict, key)) return d.ddict;
  ZSTD_freeDDict(d.ddict);
  d.bytes.assign(reinterpret_cast<const char*>(dict.data), dict.size);
  d.key = key;
  d.ddict = ZSTD_createDDict(d.bytes.data(), d.bytes.size());
  return d.ddict;
}

}  // namespace

ZSTD_CDict* CachedCDict(const uint8_t* data, size_t size, int level, const std::string& key) {
  static thread_local CDictCache c;
  const Bytes dict{data, size};
  if (c.cdict && c.level == level && Same(c.bytes, c.key, dict, key)) return c.cdict;
  ZSTD_freeCDict(c.cdict);
  c.bytes.assign(reinterpret_cast<const char*>(data), size);
  c.key = key;
  c.level = level;
  c.cdict = ZSTD_createCDict(c.bytes.data(), c.bytes.size(), level);
  return c.cdict;
}

std::string DictKey(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return std::string();
  Bytes k = GetBytes(info.Env(), info[i], "dictionary key");
  if (k.size != 32) throw Napi::TypeError::New(info.Env(), "a dictionary key is an id of 32 bytes");
  return std::string(reinterpret_cast<const char*>(k.data), k.size);
}

namespace {

// One fastCover pass with the segment size `k` given: ZDICT_trainFromBuffer searches k (and
// evaluates each candidate by compressing a quarter of the samples), several passes and several
// times the time for a dictionary that compresses the Store's small files about as well.
size_t TrainFixed(const Zdict& z, std::string* out, const Bytes& samples, const std::vector<size_t>& lengths, unsigned k) {
  FastCoverParams p{};
  p.k = k;
  p.d = 8;
  p.f = 20;
  p.accel = 1;
  p.splitPoint = 1.0;
  p.compressionLevel = 3;
  return z.fastCover(out->data(), out->size(), samples.data, lengths.data(), static_cast<unsigned>(lengths.size()), p);
}

// zstdTrainDictionary(samples, sizes: Uint32Array, capacity, k?) → Buffer, or null without ZDICT
// or when training fails (too few or too uniform samples). With `k` (a fastCover segment size)
// one pass with fixed parameters where the system's zstd has it, else ZDICT's search.
Napi::Value Train(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes samples = GetBytes(env, info[0], "samples");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    throw Napi::TypeError::New(env, "sizes must be a Uint32Array");
  }
  if (!info[2].IsNumber()) throw Napi::TypeError::New(env, "capacity must be a number");
  Napi::Uint32Array sizes = info[1].As<Napi::Uint32Array>();
  const size_t capacity = static_cast<size_t>(info[2].As<Napi::Number>().Int64Value());
  std::vector<size_t> lengths(sizes.ElementLength());
  size_t total = 0;
  for (size_t i = 0; i < lengths.size(); i++) total += (lengths[i] = sizes[i]);
  if (total > samples.size) throw Napi::RangeError::New(env, "sizes exceed the samples");
  const Zdict& z = LoadZdict();
  if (!z.train || lengths.empty() || capacity < 1024) return env.Null();
  const unsigned k = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().Uint32Value() : 0;
  std::string out(capacity, '\0');
  const size_t n = k >= 16 && k <= capacity && z.fastCover
                       ? TrainFixed(z, &out, samples, lengths, k)
                       : z.train(out.data(), capacity, samples.data, lengths.data(), static_cast<unsigned>(lengths.size()));
  if (z.isError(n)) return env.Null();
  return Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(out.data()), n);
}

// zstdDictCompress(data, level, dict, key?) → Buffer
Napi::Value DictCompress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "data");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "level must be a number");
  Bytes dict = GetBytes(env, info[2], "dict");
  const int level = info[1].As<Napi::Number>().Int32Value();
  ZSTD_CCtx* c = ThreadCctx();
  ZSTD_CDict* cd = CachedCDict(dict.data, dict.size, level, DictKey(info, 3));
  if (!c || !cd) throw Napi::Error::New(env, "zstd: out of memory");
  ZstdCheck(env, ConfigureFrame(c, level), "zstd parameters");
  ZstdCheck(env, ZSTD_CCtx_refCDict(c, cd), "zstd dictionary");
  Napi::Value out = CompressFrame(env, c, src);
  ZSTD_CCtx_refCDict(c, nullptr);
  return out;
}

// zstdDictDecompress(frame, size, dict, key?) → Buffer of exactly `size` bytes (-1: the frame's own).
// This thread's decompression context, reset for a magicless frame, with the dictionary in
// argument `dictArg` (its key in the next argument, if given) referenced (the caller drops the
// reference after its decode).
ZSTD_DCtx* DictDctx(const Napi::CallbackInfo& info, size_t dictArg) {
  Napi::Env env = info.Env();
  Bytes dict = GetBytes(env, info[dictArg], "dict");
  ZSTD_DCtx* d = ThreadDctx();
  ZSTD_DDict* dd = DDictFor(dict, DictKey(info, dictArg + 1));
  if (!d || !dd) throw Napi::Error::New(env, "zstd: out of memory");
  ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  ZstdCheck(env, ZSTD_DCtx_setParameter(d, ZSTD_d_format, ZSTD_f_zstd1_magicless), "zstd format");
  ZstdCheck(env, ZSTD_DCtx_refDDict(d, dd), "zstd dictionary");
  return d;
}

Napi::Value DictDecompress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "frame");
  const size_t size = DecodedSize(env, src, info[1]);
  ZSTD_DCtx* d = DictDctx(info, 2);
  Napi::Value out = DecompressFrame(env, d, src, size);
  ZSTD_DCtx_refDDict(d, nullptr);
  return out;
}

// zstdDictDecompressInto(frame, out, size, dict, key?) → the decoded size; decoded into `out` when it
// fits (DecompressFrameInto).
Napi::Value DictDecompressInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "frame");
  const size_t size = DecodedSize(env, src, info[2]);
  ZSTD_DCtx* d = DictDctx(info, 3);
  Napi::Value out = DecompressFrameInto(env, d, src, size, info[1]);
  ZSTD_DCtx_refDDict(d, nullptr);
  return out;
}

}  // namespace

void InitZstdDict(Napi::Env env, Napi::Object exports) {
  exports.Set("zstdTrainDictionary", Napi::Function::New(env, Train, "zstdTrainDictionary"));
  exports.Set("zstdDictCompress", Napi::Function::New(env, DictCompress, "zstdDictCompress"));
  exports.Set("zstdDictDecompress", Napi::Function::New(env, DictDecompress, "zstdDictDecompress"));
  exports.Set("zstdDictDecompressInto", Napi::Function::New(env, DictDecompressInto, "zstdDictDecompressInto"));
}

}  // namespace layerfs
