// The frame set-up every zstd call of the addon shares (napi_zstd.cc defines it; the dictionary
// calls in napi_zstd_dict.cc use it too): magicless frames without checksum or dictionary id,
// one compression and one decompression context per thread, and the bounded decoded size.
#pragma once
#define ZSTD_STATIC_LINKING_ONLY
#include "zstd.h"
#include "napi_util.h"

namespace layerfs {

// Contexts of the calling thread, reused: creating one costs more than compressing a small group.
ZSTD_CCtx* ThreadCctx();
ZSTD_DCtx* ThreadDctx();

// Resets `c` to the Store's frame parameters at `level`; returns a zstd error code or 0. A
// dictionary referenced afterwards (ZSTD_CCtx_refCDict) brings the parameters it was digested
// with, for that same level.
size_t ConfigureFrame(ZSTD_CCtx* c, int level);

// Throws a JS error naming `what` when `r` is a zstd error code.
void ZstdCheck(const Napi::Env& env, size_t r, const char* what);

// ZSTD_compress2 through `c` (configured by the caller) into a new Buffer.
Napi::Value CompressFrame(const Napi::Env& env, ZSTD_CCtx* c, const Bytes& src);

// The decoded size a call asks for: `want`, or with -1 the size the frame header records; at
// most 64 MiB either way.
size_t DecodedSize(const Napi::Env& env, const Bytes& frame, const Napi::Value& want);

// Decodes `frame` through `d` (configured by the caller) into a Buffer of exactly `size` bytes.
Napi::Value DecompressFrame(const Napi::Env& env, ZSTD_DCtx* d, const Bytes& frame, size_t size);

// Decodes `frame` through `d` into the caller's Uint8Array `out` when `size` fits in it (a buffer
// reused frame after frame: no new Buffer per decoded frame); returns `size` either way, so a
// caller whose buffer is too small grows it and calls again. Nothing is decoded then.
Napi::Value DecompressFrameInto(const Napi::Env& env, ZSTD_DCtx* d, const Bytes& frame, size_t size, const Napi::Value& out);

// The digested form of dictionary `data` at `level`, kept per thread while the same dictionary
// comes back (napi_zstd_dict.cc). `key`, when not empty, is the dictionary object's id: the
// caller read those bytes and checked them against it, so a held dictionary of the same id and
// size is the same one without comparing its bytes (262 kB per frame; a commit compresses
// thousands of groups with it). Null when zstd runs out of memory.
ZSTD_CDict* CachedCDict(const uint8_t* data, size_t size, int level, const std::string& key);

// Argument `i` of a call as a dictionary key (an id of 32 bytes), or empty when absent.
std::string DictKey(const Napi::CallbackInfo& info, size_t i);

}  // namespace layerfs
