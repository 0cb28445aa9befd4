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

inline uint32_t Load32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline void Store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

void Parent(const uint32_t left[8], const uint32_t right[8], uint8_t flags, uint32_t out[8]) {
  uint8_t block[64];
  for (int i = 0; i < 8; i++) {
    Store32(block + 4 * i, left[i]);
    Store32(block + 32 + 4 * i, right[i]);
  }
  std::memcpy(out, kIv, sizeof(kIv));
  blake3_compress_in_place(out, block, 64, 0, kParent | flags);
}

// Chaining value of a final, partial BLAKE3 chunk (1..1023 bytes) that is not the root.
void PartialChunk(const uint8_t* p, size_t len, uint64_t counter, uint32_t cv[8]) {
  std::memcpy(cv, kIv, sizeof(kIv));
  const size_t blocks = (len + 63) / 64;
  for (size_t b = 0; b < blocks; b++) {
    const size_t take = len - b * 64 < 64 ? len - b * 64 : 64;
    uint8_t block[64] = {0};
    std::memcpy(block, p + b * 64, take);
    const uint8_t flags = (b == 0 ? kChunkStart : 0) | (b + 1 == blocks ? kChunkEnd : 0);
    blake3_compress_in_place(cv, block, static_cast<uint8_t>(take), counter, flags);
  }
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
  size_t max_full = 0;
  for (size_t k = 0; k < count; k++) {
    size_t chunks = 0;
    if (batched(k)) {
      const size_t m = plen + lens[k];
      chunks = (m + kChunkLen - 1) / kChunkLen;
      const size_t full = m / kChunkLen;
      if (full > max_full) max_full = full;
    }
    cv_offset_[k + 1] = cv_offset_[k] + chunks;
  }
  cvs_.resize(cv_offset_[count] * 8);
  first_chunks_.resize(count * kChunkLen);
  inputs_.resize(count);
  owners_.resize(count);
  out_cvs_.resize(count * 32);

  // Full BLAKE3 chunks, grouped by chunk counter across messages. Chunk 0 holds the prefix, so
  // it is assembled in scratch; chunk i ≥ 1 lies contiguously in the data at 1024·i − plen.
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
    for (size_t j = 0; j < n; j++) {
      uint32_t* cv = cvs_.data() + (cv_offset_[owners_[j]] + i) * 8;
      for (int w = 0; w < 8; w++) cv[w] = Load32(out_cvs_.data() + j * 32 + 4 * w);
    }
  }

  for (size_t k = 0; k < count; k++) {
    if (!batched(k)) {
      HashOneSlow(data[k], lens[k], out + 32 * k);
      continue;
    }
    const size_t m = plen + lens[k];
    const size_t chunks = cv_offset_[k + 1] - cv_offset_[k];
    uint32_t* cvs = cvs_.data() + cv_offset_[k] * 8;
    if (m % kChunkLen != 0) {
      const size_t last = chunks - 1;
      PartialChunk(data[k] + last * kChunkLen - plen, m % kChunkLen, last, cvs + last * 8);
    }
    // Merge as BLAKE3's incremental hasher does: after chunk t (1-based) is added, one parent per
    // trailing zero bit of t; the last chunk is folded into the stack at the end, ROOT last.
    uint32_t stack[64][8];
    size_t sp = 0;
    for (size_t i = 0; i + 1 < chunks; i++) {
      uint32_t cv[8];
      std::memcpy(cv, cvs + i * 8, sizeof(cv));
      for (uint64_t total = i + 1; (total & 1) == 0; total >>= 1) Parent(stack[--sp], cv, 0, cv);
      std::memcpy(stack[sp++], cv, sizeof(cv));
    }
    uint32_t cv[8];
    std::memcpy(cv, cvs + (chunks - 1) * 8, sizeof(cv));
    while (sp > 0) {
      sp--;
      Parent(stack[sp], cv, sp == 0 ? kRoot : 0, cv);
    }
    for (int w = 0; w < 8; w++) Store32(out + 32 * k + 4 * w, cv[w]);
  }
}

}  // namespace layerfs
