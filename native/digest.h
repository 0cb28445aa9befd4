// Content digests shared by hashBuffers and scanPaths: small content is one blob object; larger
// content is cut into chunk objects and also gets a whole-content digest.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "blake3.h"
#include "fastcdc.h"

namespace layerfs {

struct DigestOptions {
  CdcParams cdc;
  uint64_t small_threshold;
};

struct Digest {
  bool chunked = false;
  uint8_t content_id[32] = {};
  std::vector<uint32_t> lengths;
  std::vector<uint8_t> ids;  // 32 bytes per chunk, in order
};

// Incremental: feed any split of the content, get the same Digest. Memory is O(1) in the size
// of the content apart from the chunk list.
class StreamDigest {
 public:
  StreamDigest(const DigestOptions& opts, bool chunked);
  void Update(const uint8_t* p, size_t n);
  void Finish(Digest* out);

 private:
  const CdcParams cdc_;
  const bool chunked_;
  void EmitChunk();
  void UpdateWindow(const uint8_t* p, size_t n);

  CdcState state_;
  uint64_t pending_len_ = 0;  // bytes of the current chunk already hashed
  blake3_hasher content_;
  blake3_hasher chunk_;
  Digest digest_;
};

void DigestBuffer(const DigestOptions& opts, const uint8_t* p, size_t n, Digest* out);

// Lengths and chunk-domain ids of a whole buffer with a caller-chosen tag.
void ChunkAndHash(const CdcParams& cdc, const char* tag, size_t tag_len, const uint8_t* p,
                  size_t n, std::vector<uint32_t>* lengths, std::vector<uint8_t>* ids);

}  // namespace layerfs
