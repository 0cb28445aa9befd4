#include "digest.h"

#include <string>

#include "objectid.h"

namespace layerfs {

namespace {

const DomainHasher& ChunkDomain() {
  static const DomainHasher h{std::string(kDomainChunk)};
  return h;
}
const DomainHasher& BlobDomain() {
  static const DomainHasher h{std::string(kDomainBlob)};
  return h;
}
const DomainHasher& ContentDomain() {
  static const DomainHasher h{std::string(kDomainContent)};
  return h;
}

}  // namespace

StreamDigest::StreamDigest(const DigestOptions& opts, bool chunked)
    : cdc_(opts.cdc), chunked_(chunked) {
  digest_.chunked = chunked;
  (chunked ? ContentDomain() : BlobDomain()).Fresh(&content_);
  if (chunked) ChunkDomain().Fresh(&chunk_);
}

void StreamDigest::EmitChunk() {
  const size_t at = digest_.ids.size();
  digest_.ids.resize(at + 32);
  blake3_hasher_finalize(&chunk_, digest_.ids.data() + at, 32);
  digest_.lengths.push_back(static_cast<uint32_t>(pending_len_));
  pending_len_ = 0;
  ChunkDomain().Fresh(&chunk_);
}

void StreamDigest::Update(const uint8_t* p, size_t n) {
  if (!chunked_) {
    blake3_hasher_update(&content_, p, n);
    return;
  }
  while (n > 0) {
    bool cut = false;
    const size_t used = CdcFeed(cdc_, state_, p, n, &cut);
    // Both hashers see each piece while it is still in L1/L2.
    blake3_hasher_update(&chunk_, p, used);
    blake3_hasher_update(&content_, p, used);
    pending_len_ += used;
    if (cut) EmitChunk();
    p += used;
    n -= used;
  }
}

void StreamDigest::Finish(Digest* out) {
  if (chunked_ && pending_len_ > 0) EmitChunk();
  blake3_hasher_finalize(&content_, digest_.content_id, 32);
  *out = std::move(digest_);
  digest_ = Digest{};
}

void DigestBuffer(const DigestOptions& opts, const uint8_t* p, size_t n, Digest* out) {
  StreamDigest d(opts, n >= opts.small_threshold);
  d.Update(p, n);
  d.Finish(out);
}

void ChunkAndHash(const CdcParams& cdc, const char* tag, size_t tag_len, const uint8_t* p,
                  size_t n, std::vector<uint32_t>* lengths, std::vector<uint8_t>* ids) {
  const DomainHasher domain{std::string(tag, tag_len)};
  lengths->reserve(n / cdc.avg_size + 1);
  ids->reserve((n / cdc.avg_size + 1) * 32);
  CdcChunkAll(cdc, p, n, [&](size_t len) {
    const size_t at = ids->size();
    ids->resize(at + 32);
    domain.Hash(p, len, ids->data() + at);
    lengths->push_back(static_cast<uint32_t>(len));
    p += len;
  });
}

}  // namespace layerfs
