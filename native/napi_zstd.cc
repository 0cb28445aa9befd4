// zstd compression for the Store's physical layer (lib/store/codec.ts). The zstd library is
// compiled into this addon from the C sources shipped in the zstd-napi package (CMakeLists.txt).
// Frames are written magicless, without checksum or dictionary id: the Store re-hashes every
// decoded object against its id, so those fields would only cost bytes. The decoded size stays in
// the frame header (a group's members are addressed inside it). A "prefix" is raw content the frame may refer to (a delta's base).
#include <cstring>
#include <string>

#define ZSTD_STATIC_LINKING_ONLY
#include "zstd.h"
#include "napi_util.h"

namespace layerfs {

namespace {

// One context each per thread, reused: creating a context costs more than compressing a small
// group. Node runs these calls on the JS thread only.
ZSTD_CCtx* Cctx() {
  static thread_local ZSTD_CCtx* c = ZSTD_createCCtx();
  return c;
}

ZSTD_DCtx* Dctx() {
  static thread_local ZSTD_DCtx* d = ZSTD_createDCtx();
  return d;
}

void Check(const Napi::Env& env, size_t r, const char* what) {
  if (ZSTD_isError(r)) throw Napi::Error::New(env, std::string(what) + ": " + ZSTD_getErrorName(r));
}

// zstdCompress(data, level, prefix?) → Buffer
Napi::Value Compress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "data");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "level must be a number");
  const int level = info[1].As<Napi::Number>().Int32Value();
  ZSTD_CCtx* c = Cctx();
  if (!c) throw Napi::Error::New(env, "zstd: out of memory");
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  Check(env, ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level), "zstd level");
  Check(env, ZSTD_CCtx_setParameter(c, ZSTD_c_format, ZSTD_f_zstd1_magicless), "zstd format");
  Check(env, ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0), "zstd checksum");
  Check(env, ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0), "zstd dictID");
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    Bytes prefix = GetBytes(env, info[2], "prefix");
    Check(env, ZSTD_CCtx_refPrefix_advanced(c, prefix.data, prefix.size, ZSTD_dct_rawContent), "zstd prefix");
  }
  const size_t bound = ZSTD_compressBound(src.size);
  std::string out;
  out.resize(bound);
  const size_t n = ZSTD_compress2(c, out.data(), bound, src.data, src.size);
  Check(env, n, "zstd compress");
  return Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(out.data()), n);
}

constexpr size_t kMaxFrame = 64u << 20;

// zstdDecompress(frame, size, prefix?) → Buffer of exactly `size` bytes (size -1: the size the
// frame header records, at most 64 MiB), or throws.
Napi::Value Decompress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "frame");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "size must be a number");
  const double want = info[1].As<Napi::Number>().DoubleValue();
  size_t size;
  if (want == -1) {
    ZSTD_frameHeader h;
    const size_t r = ZSTD_getFrameHeader_advanced(&h, src.data, src.size, ZSTD_f_zstd1_magicless);
    if (r != 0 || h.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || h.frameContentSize > kMaxFrame) {
      throw Napi::Error::New(env, "zstd decompress: bad frame header");
    }
    size = static_cast<size_t>(h.frameContentSize);
  } else {
    if (!(want >= 0 && want <= kMaxFrame)) throw Napi::RangeError::New(env, "size out of range");
    size = static_cast<size_t>(want);
  }
  ZSTD_DCtx* d = Dctx();
  if (!d) throw Napi::Error::New(env, "zstd: out of memory");
  ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  Check(env, ZSTD_DCtx_setParameter(d, ZSTD_d_format, ZSTD_f_zstd1_magicless), "zstd format");
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    Bytes prefix = GetBytes(env, info[2], "prefix");
    Check(env, ZSTD_DCtx_refPrefix_advanced(d, prefix.data, prefix.size, ZSTD_dct_rawContent), "zstd prefix");
  }
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, size);
  // One spare byte of capacity would let an overlong frame be detected; a frame that decodes to
  // more than `size` fails with dstSize_tooSmall instead, which is just as good.
  const size_t n = ZSTD_decompressDCtx(d, out.Data(), size, src.data, src.size);
  Check(env, n, "zstd decompress");
  if (n != size) throw Napi::Error::New(env, "zstd decompress: frame decodes to " + std::to_string(n) + " bytes, expected " + std::to_string(size));
  return out;
}

}  // namespace

void InitZstd(Napi::Env env, Napi::Object exports) {
  exports.Set("zstdCompress", Napi::Function::New(env, Compress, "zstdCompress"));
  exports.Set("zstdDecompress", Napi::Function::New(env, Decompress, "zstdDecompress"));
  exports.Set("zstdVersion", ZSTD_versionString());
}

}  // namespace layerfs
