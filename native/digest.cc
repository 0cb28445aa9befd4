#include "digest.h"

#include <string>

#include "multihash.h"
#include "objectid.h"

namespace layerfs {

namespace {

// Chunks are found and hashed a window at a time so the hashing pass reads bytes the chunker
// has just pulled into L2; 32 chunks of ~19 KiB keep blake3_hash_many's 16 lanes busy.
constexpr size_t kWindow = 1u << 20;
constexpr size_t kBatch = 32;

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

std::string Prefix(const char* tag, size_t len) {
  std::string s(tag, len);
  s.push_back('\0');
  return s;
}

MultiHasher& ChunkMultiHasher() {
  static thread_local MultiHasher mh(Prefix(kDomainChunk, sizeof(kDomainChunk) - 1));
  return mh;
}

struct Batch {
  const uint8_t* ptrs[kBatch];
  size_t lens[kBatch];
  size_t n = 0;

  void Flush(MultiHasher& mh, std::vector<uint32_t>* lengths, std::vector<uint8_t>* ids) {
    if (n == 0) return;
    const size_t at = ids->size();
    ids->resize(at + 32 * n);
    mh.HashAll(ptrs, lens, n, ids->data() + at);
    for (size_t i = 0; i < n; i++) lengths->push_back(static_cast<uint32_t>(lens[i]));
    n = 0;
  }
};

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
    const size_t m = n < kWindow ? n : kWindow;
    UpdateWindow(p, m);
    p += m;
    n -= m;
  }
}

void StreamDigest::UpdateWindow(const uint8_t* p, size_t n) {
  blake3_hasher_update(&content_, p, n);
  if (pending_len_ > 0) {
    // A chunk that began in an earlier window: finish it incrementally.
    bool cut = false;
    const size_t used = CdcFeed(cdc_, state_, p, n, &cut);
    blake3_hasher_update(&chunk_, p, used);
    pending_len_ += used;
    p += used;
    n -= used;
    if (!cut) return;
    EmitChunk();
  }
  Batch batch;
  MultiHasher& mh = ChunkMultiHasher();
  while (n > 0) {
    CdcState fresh;
    bool cut = false;
    const size_t used = CdcFeed(cdc_, fresh, p, n, &cut);
    if (!cut) {
      // The window ends inside this chunk: hash it incrementally from here on.
      batch.Flush(mh, &digest_.lengths, &digest_.ids);
      state_ = fresh;
      blake3_hasher_update(&chunk_, p, used);
      pending_len_ = used;
      return;
    }
    batch.ptrs[batch.n] = p;
    batch.lens[batch.n++] = used;
    if (batch.n == kBatch) batch.Flush(mh, &digest_.lengths, &digest_.ids);
    p += used;
    n -= used;
  }
  batch.Flush(mh, &digest_.lengths, &digest_.ids);
}

void StreamDigest::Finish(Digest* out) {
  if (chunked_ && pending_len_ > 0) EmitChunk();
  state_ = CdcState{};
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
  MultiHasher mh(Prefix(tag, tag_len));
  lengths->reserve(n / cdc.avg_size + 1);
  ids->reserve((n / cdc.avg_size + 1) * 32);
  Batch batch;
  while (n > 0) {
    CdcState fresh;
    bool cut = false;
    // Without a cut the rest of the buffer is the final chunk.
    const size_t used = CdcFeed(cdc, fresh, p, n, &cut);
    batch.ptrs[batch.n] = p;
    batch.lens[batch.n++] = used;
    if (batch.n == kBatch) batch.Flush(mh, lengths, ids);
    p += used;
    n -= used;
  }
  batch.Flush(mh, lengths, ids);
}

}  // namespace layerfs
