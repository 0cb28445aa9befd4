#include <cstring>
#include <string>
#include <vector>

#include "digest.h"
#include "napi_util.h"

namespace layerfs {

namespace {

Napi::Value ChunkLengths(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes b = GetBytes(env, info[0], "data");
  const CdcParams p = GetParams(env, info[1]);
  std::vector<uint32_t> lens;
  lens.reserve(b.size / p.avg_size + 1);
  CdcChunkAll(p, b.data, b.size, [&](size_t l) { lens.push_back(static_cast<uint32_t>(l)); });
  return CopyU32(env, lens.data(), lens.size());
}

// chunkAndHash(data, params, tag) -> { lengths: Uint32Array, ids: Buffer (32 per chunk) }
Napi::Value ChunkAndHashJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes b = GetBytes(env, info[0], "data");
  const CdcParams p = GetParams(env, info[1]);
  if (!info[2].IsString()) throw Napi::TypeError::New(env, "domainTag must be a string");
  const std::string tag = info[2].As<Napi::String>().Utf8Value();
  std::vector<uint32_t> lens;
  auto* ids = new std::vector<uint8_t>();
  ChunkAndHash(p, tag.data(), tag.size(), b.data, b.size, &lens, ids);
  Napi::Object r = Napi::Object::New(env);
  r.Set("lengths", CopyU32(env, lens.data(), lens.size()));
  if (ids->empty()) {
    delete ids;
    r.Set("ids", Napi::Buffer<uint8_t>::New(env, 0));
  } else {
    r.Set("ids", Napi::Buffer<uint8_t>::New(env, ids->data(), ids->size(),
                                            [](Napi::Env, uint8_t*, std::vector<uint8_t>* v) {
                                              delete v;
                                            },
                                            ids));
  }
  return r;
}

Napi::Value GearTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, 256 * 8);
  std::memcpy(ab.Data(), CdcGear(), 256 * 8);
  return Napi::TypedArrayOf<uint64_t>::New(env, 256, ab, 0, napi_biguint64_array);
}

// Streaming chunker: O(1) state, no carried bytes; push() returns lengths of chunks completed
// by this call (the first may have started in an earlier push).
class Chunker : public Napi::ObjectWrap<Chunker> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Chunker",
                       {InstanceMethod<&Chunker::Push>("push"),
                        InstanceMethod<&Chunker::Finish>("finish")});
  }

  explicit Chunker(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Chunker>(info) {
    params_ = GetParams(info.Env(), info[0]);
  }

 private:
  Napi::Value Push(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Bytes b = GetBytes(env, info[0], "data");
    std::vector<uint32_t> lens;
    const uint8_t* p = b.data;
    size_t n = b.size;
    while (n > 0) {
      bool cut = false;
      const size_t used = CdcFeed(params_, state_, p, n, &cut);
      pending_ += used;
      if (cut) {
        lens.push_back(static_cast<uint32_t>(pending_));
        pending_ = 0;
      }
      p += used;
      n -= used;
    }
    return CopyU32(env, lens.data(), lens.size());
  }

  Napi::Value Finish(const Napi::CallbackInfo& info) {
    const uint32_t last = static_cast<uint32_t>(pending_);
    const bool any = pending_ > 0;
    pending_ = 0;
    state_ = CdcState{};
    return CopyU32(info.Env(), &last, any ? 1 : 0);
  }

  CdcParams params_{};
  CdcState state_;
  uint64_t pending_ = 0;
};

}  // namespace

void InitChunker(Napi::Env env, Napi::Object exports) {
  exports.Set("chunkLengths", Napi::Function::New<ChunkLengths>(env, "chunkLengths"));
  exports.Set("chunkAndHash", Napi::Function::New<ChunkAndHashJs>(env, "chunkAndHash"));
  exports.Set("gearTable", Napi::Function::New<GearTable>(env, "gearTable"));
  exports.Set("Chunker", Chunker::Define(env));
}

}  // namespace layerfs
