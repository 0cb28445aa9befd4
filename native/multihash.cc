#include "multihash.h"

#include <cstring>

#include "blake3.h"

// Internal entry points of the BLAKE3 C sources (blake3_impl.h); they dispatch to the widest SIMD.
extern "C" {
void blake3_compress_in_place(uint32_t cv[8], const uint8_t block[64], uint8_t block_len,
                              uint64_t counter, uint8_t flags);
void blake3_hash_many(const uint8_t* const* inputs, size_t num_inputs, size_t blocks,
                      const uint32_t key[8], uint64_t counter, bool increment_counter,
                      uint8_t flags, uint8_t flags_start, uint8_t flags_end, uint8_t* out);
}

namespace layerfs {

namespace {

constexpr uint32_t kIv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                             0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
constexpr uint8_t kChunkStart = 1, kChunkEnd = 2, kParent = 4, kRoot = 8;
constexpr size_t kChunkLen = 1024;

inline void Store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// Chaining values of final, partial BLAKE3 chunks (1..1023 bytes each, never the root). The
// block chains of up to kLanes messages are advanced in lockstep: each compression is a long
// dependency chain, and independent ones interleaved let the CPU overlap them.
constexpr size_t kLanes = 4;

struct Partial {
  const uint8_t* p;
  size_t len;
  uint64_t counter;
  uint8_t* out;  // 32 bytes
};

void PartialChunks(const Partial* parts, size_t n) {
  uint32_t cv[kLanes][8];
  size_t blocks[kLanes];
  size_t most = 0;
  for (size_t i = 0; i < n; i++) {
    std::memcpy(cv[i], kIv, sizeof(kIv));
    blocks[i] = (parts[i].len + 63) / 64;
    if (blocks[i] > most) most = blocks[i];
  }
  for (size_t b = 0; b < most; b++) {
    for (size_t i = 0; i < n; i++) {
      if (b >= blocks[i]) continue;
      const size_t take = parts[i].len - b * 64 < 64 ? parts[i].len - b * 64 : 64;
      uint8_t block[64] = {0};
      std::memcpy(block, parts[i].p + b * 64, take);
      const uint8_t flags = (b == 0 ? kChunkStart : 0) | (b + 1 == blocks[i] ? kChunkEnd : 0);
      blake3_compress_in_place(cv[i], block, static_cast<uint8_t>(take), parts[i].counter, flags);
    }
  }
  for (size_t i = 0; i < n; i++) {
    for (int w = 0; w < 8; w++) Store32(parts[i].out + 4 * w, cv[i][w]);
  }
}

// Leaves: each batched message's final partial chunk, kLanes at a time. nodes[k] is message k's
// node count, 0 if it is not batched.
template <typename CvAt>
void FinalPartialChunks(const uint8_t* const* data, const size_t* lens, size_t count, size_t plen,
                        const size_t* nodes, CvAt cv_at) {
  Partial parts[kLanes];
  size_t np = 0;
  for (size_t k = 0; k < count; k++) {
    const size_t m = plen + lens[k];
    if (nodes[k] == 0 || m % kChunkLen == 0) continue;
    const size_t last = nodes[k] - 1;
    parts[np++] = Partial{data[k] + last * kChunkLen - plen, m % kChunkLen, last, cv_at(k, last)};
    if (np == kLanes) {
      PartialChunks(parts, np);
      np = 0;
    }
  }
  PartialChunks(parts, np);
}

// One tree level of parents across all messages: adjacent nodes pair up and an odd last node
// moves up unchanged, which builds BLAKE3's left-complete tree. A message down to its last pair
// is skipped: that pair is its root and needs the ROOT flag. Returns false once every message is.
template <typename CvAt>
bool ParentLevel(size_t count, size_t* nodes, const uint8_t** inputs, size_t* owners,
                 uint8_t* out_cvs, CvAt cv_at) {
  size_t n = 0;
  for (size_t k = 0; k < count; k++) {
    if (nodes[k] <= 2) continue;
    for (size_t j = 0; j < nodes[k] / 2; j++) {
      inputs[n] = cv_at(k, 2 * j);
      owners[n++] = k;
    }
  }
  if (n == 0) return false;
  blake3_hash_many(inputs, n, 1, kIv, 0, false, kParent, 0, 0, out_cvs);
  size_t at = 0;
  for (size_t k = 0; k < count; k++) {
    if (nodes[k] <= 2) continue;
    const size_t pairs = nodes[k] / 2;
    for (size_t j = 0; j < pairs; j++) std::memcpy(cv_at(k, j), out_cvs + (at++) * 32, 32);
    if (nodes[k] & 1) std::memmove(cv_at(k, pairs), cv_at(k, nodes[k] - 1), 32);
    nodes[k] = pairs + (nodes[k] & 1);
  }
  return true;
}

}  // namespace

MultiHasher::MultiHasher(std::string prefix) : prefix_(std::move(prefix)) {}

void MultiHasher::HashOneSlow(const uint8_t* data, size_t len, uint8_t* out) const {
  blake3_hasher h;
  blake3_hasher_init(&h);
  blake3_hasher_update(&h, prefix_.data(), prefix_.size());
  blake3_hasher_update(&h, data, len);
  blake3_hasher_finalize(&h, out, 32);
}

void MultiHasher::HashAll(const uint8_t* const* data, const size_t* lens, size_t count,
                          uint8_t* out) {
  const size_t plen = prefix_.size();
  // Messages of at most two BLAKE3 chunks gain nothing from batching (and a one-chunk message
  // is its own root); a prefix of half a chunk or more does not fit the first-chunk copy below.
  auto batched = [&](size_t k) { return plen < kChunkLen / 2 && plen + lens[k] > 2 * kChunkLen; };

  cv_offset_.assign(count + 1, 0);
  nodes_.assign(count, 0);
  size_t max_full = 0;
  for (size_t k = 0; k < count; k++) {
    if (batched(k)) {
      const size_t m = plen + lens[k];
      nodes_[k] = (m + kChunkLen - 1) / kChunkLen;
      const size_t full = m / kChunkLen;
      if (full > max_full) max_full = full;
    }
    cv_offset_[k + 1] = cv_offset_[k] + nodes_[k];
  }
  cvs_.resize(cv_offset_[count] * 32);
  first_chunks_.resize(count * kChunkLen);
  inputs_.resize(cv_offset_[count] + count);
  owners_.resize(cv_offset_[count] + count);
  out_cvs_.resize((cv_offset_[count] + count) * 32);
  auto cv_at = [&](size_t k, size_t i) { return cvs_.data() + (cv_offset_[k] + i) * 32; };

  // Leaves: full BLAKE3 chunks, grouped by chunk counter across messages. Chunk 0 holds the
  // prefix, so it is assembled in scratch; chunk i ≥ 1 lies in the data at 1024·i − plen.
  for (size_t i = 0; i < max_full; i++) {
    size_t n = 0;
    for (size_t k = 0; k < count; k++) {
      if (!batched(k) || (plen + lens[k]) / kChunkLen <= i) continue;
      if (i == 0) {
        uint8_t* scratch = first_chunks_.data() + k * kChunkLen;
        std::memcpy(scratch, prefix_.data(), plen);
        std::memcpy(scratch + plen, data[k], kChunkLen - plen);
        inputs_[n] = scratch;
      } else {
        inputs_[n] = data[k] + i * kChunkLen - plen;
      }
      owners_[n++] = k;
    }
    blake3_hash_many(inputs_.data(), n, kChunkLen / 64, kIv, i, false, 0, kChunkStart, kChunkEnd,
                     out_cvs_.data());
    for (size_t j = 0; j < n; j++) std::memcpy(cv_at(owners_[j], i), out_cvs_.data() + j * 32, 32);
  }

  FinalPartialChunks(data, lens, count, plen, nodes_.data(), cv_at);
  // Parents, one tree level at a time, until each message is down to its root pair.
  while (ParentLevel(count, nodes_.data(), inputs_.data(), owners_.data(), out_cvs_.data(),
                     cv_at)) {
  }

  for (size_t k = 0; k < count; k++) {
    if (!batched(k)) {
      HashOneSlow(data[k], lens[k], out + 32 * k);
      continue;
    }
    uint32_t cv[8];
    std::memcpy(cv, kIv, sizeof(kIv));
    blake3_compress_in_place(cv, cv_at(k, 0), 64, 0, kParent | kRoot);
    for (int w = 0; w < 8; w++) Store32(out + 32 * k + 4 * w, cv[w]);
  }
}

void MultiHasher::ReleaseScratch() {
  std::vector<uint8_t>().swap(first_chunks_);
  std::vector<uint8_t>().swap(cvs_);
  std::vector<size_t>().swap(cv_offset_);
  std::vector<size_t>().swap(nodes_);
  std::vector<const uint8_t*>().swap(inputs_);
  std::vector<size_t>().swap(owners_);
  std::vector<uint8_t>().swap(out_cvs_);
}

}  // namespace layerfs
