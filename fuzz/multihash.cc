// libFuzzer harness: batched BLAKE3 (native/multihash.cc) and the chunk digests built on it
// (native/digest.cc).
//
// For each input it checks that
//   1. MultiHasher::HashAll over up to 40 messages with input-chosen lengths (biased towards
//      BLAKE3's 1 KiB chunk boundaries and the 2 KiB batching threshold, relative to the prefix
//      length) gives, for every message, exactly BLAKE3(tag ‖ 0x00 ‖ message) computed one at a
//      time with the plain blake3_hasher, for the domain tags and for tags of 0..~3000 bytes
//      (which may contain NULs). The messages are laid out the way every caller in native/ lays
//      them out: consecutive slices, in order, of one buffer, which here ends at a PROT_NONE
//      guard page, so a read past its end faults even inside BLAKE3's (uninstrumented) assembly;
//   2. a second HashAll on the same MultiHasher (scratch sized by the first call) over an in-order
//      sub-range agrees, and the output slot past the last id is never written;
//   3. ChunkAndHash (FastCDC + batched hashing) gives CdcChunkAll's lengths and one-at-a-time ids;
//   4. StreamDigest fed the messages as separate pieces (each its own exact-size ASan heap block,
//      like successive read buffers) equals DigestBuffer on the whole buffer and the
//      one-at-a-time chunk/content/blob ids.
// Strict mode (default with --blake3 c or portable, or LAYERFS_FUZZ_STRICT=1) also hashes the
// messages as independent buffers, each ending at its own guard page, in shuffled order. With the
// .S kernels this reads past a message end and faults (see docs/FUZZING.md, "Findings"), so it
// is off by default there.
//
// Input layout (missing bytes read as 0):
//   [0] tag: 0..2 the three domain tags, 3..127 a length from a list of edge cases, 128..255 a
//       length of (b-128)*9 bytes; [1] tag fill pattern; [2] message count (mod 41);
//   [3] chunker parameters (bits 0-2 avg, 3-4 level) and small-file threshold (bits 5-6),
//       bit 7 whiten the data;
//   [4..4+2*count) one u16 length code per message; the rest seeds the message bytes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "blake3.h"
#include "digest.h"
#include "fastcdc.h"
#include "fuzz_util.h"
#include "multihash.h"
#include "objectid.h"

using namespace layerfs_fuzz;

namespace {

constexpr size_t kMaxMessages = 40;
constexpr size_t kMaxTotal = 1u << 20;

FUZZ_NO_COVERAGE void Blake3(const std::string& prefix, const uint8_t* p, size_t n, uint8_t out[32]) {
  blake3_hasher h;
  blake3_hasher_init(&h);
  blake3_hasher_update(&h, prefix.data(), prefix.size());
  blake3_hasher_update(&h, p, n);
  blake3_hasher_finalize(&h, out, 32);
}

// `len` bytes that end exactly at a PROT_NONE page (a fresh mapping per call; cheap next to the
// hashing).
class Guarded {
 public:
  explicit Guarded(size_t len) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    span_ = (len + page - 1) / page * page + page;
    base_ = static_cast<uint8_t*>(
        mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    FUZZ_CHECK(base_ != MAP_FAILED);
    FUZZ_CHECK(mprotect(base_ + span_ - page, page, PROT_NONE) == 0);
    data_ = base_ + span_ - page - len;
  }
  ~Guarded() { munmap(base_, span_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  uint8_t* data() { return data_; }

 private:
  uint8_t* base_;
  uint8_t* data_;
  size_t span_;
};

bool Strict() {
#ifdef LAYERFS_FUZZ_STRICT_DEFAULT
  return true;
#else
  static const bool strict = [] {
    const char* e = std::getenv("LAYERFS_FUZZ_STRICT");
    return e && *e && *e != '0';
  }();
  return strict;
#endif
}

// memcmp that accepts empty (possibly null) ranges.
FUZZ_NO_COVERAGE bool Same(const uint8_t* a, const uint8_t* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

std::string Tag(uint8_t sel, uint8_t fill) {
  static const size_t kLens[] = {0,   1,   2,    15,   31,   63,   64,   65,   100,  255,
                                 500, 510, 511,  512,  513,  700,  1000, 1022, 1023, 1024,
                                 1025, 1500, 2046, 2047, 2048, 2049, 3000};
  if (sel == 0) return layerfs::kDomainChunk;
  if (sel == 1) return layerfs::kDomainBlob;
  if (sel == 2) return layerfs::kDomainContent;
  const size_t len = sel < 128 ? kLens[(sel - 3) % (sizeof kLens / sizeof kLens[0])] : size_t{sel - 128u} * 9;
  std::string t(len, '\0');
  for (size_t i = 0; i < len; i++) t[i] = static_cast<char>(fill + i * (fill | 1));  // may hold NULs
  return t;
}

size_t MessageLength(uint16_t code, size_t plen) {
  auto around = [&](size_t target, int delta) -> size_t {
    const long long v = static_cast<long long>(target) - static_cast<long long>(plen) + delta;
    return v < 0 ? 0 : static_cast<size_t>(v);
  };
  switch (code >> 14) {
    case 0:  // 0..16383
      return code & 0x3FFF;
    case 1:  // total (prefix + message) within 8 bytes of k KiB, k = 0..63
      return around(((code >> 4) & 0x3F) * 1024u, static_cast<int>(code & 0xF) - 8);
    case 2:  // total near the 2 KiB batching threshold
      return around(2048, static_cast<int>(code & 0x1F) - 16);
    default:  // up to 64 KiB
      return size_t{code & 0x3FFFu} * 4;
  }
}

// `total` bytes of the seed repeated, optionally XORed with a stream seeded by it.
FUZZ_NO_COVERAGE std::vector<uint8_t> Fill(const uint8_t* seed, size_t n, size_t total, bool whiten) {
  std::vector<uint8_t> all(total);
  Rng rng(SeedFrom(seed, n));
  for (size_t i = 0; i < total; i++) {
    const uint8_t b = n ? seed[i % n] : static_cast<uint8_t>(i);
    all[i] = whiten ? static_cast<uint8_t>(b ^ rng.Next()) : b;
  }
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const uint8_t tag_sel = r.U8(), fill = r.U8();
  const size_t count = r.U8() % (kMaxMessages + 1);
  const uint8_t opts = r.U8();
  const std::string tag = Tag(tag_sel, fill);
  std::string prefix = tag;
  prefix.push_back('\0');

  std::vector<size_t> lens(count);
  size_t total = 0;
  for (size_t k = 0; k < count; k++) {
    size_t len = MessageLength(r.U16(), prefix.size());
    if (total + len > kMaxTotal) len = kMaxTotal - total;
    lens[k] = len;
    total += len;
  }

  // Message bytes: the rest of the input repeated (optionally whitened): `all` on the ASan heap,
  // the same bytes in a guarded mapping, and one exact-size heap block per message.
  const uint8_t* seed = r.Rest();
  const size_t seed_n = r.RestSize();
  const std::vector<uint8_t> all = Fill(seed, seed_n, total, opts & 0x80);
  Guarded gall(total);
  if (total) std::memcpy(gall.data(), all.data(), total);
  std::vector<std::unique_ptr<uint8_t[]>> blocks(count);
  std::vector<const uint8_t*> slices(count), ptrs(count);
  for (size_t k = 0, at = 0; k < count; k++) {
    blocks[k].reset(new uint8_t[lens[k]]);
    if (lens[k]) std::memcpy(blocks[k].get(), all.data() + at, lens[k]);
    ptrs[k] = blocks[k].get();
    slices[k] = gall.data() + at;
    at += lens[k];
  }

  // 1. Batched vs one at a time, messages adjacent in one buffer.
  std::vector<uint8_t> expect(32 * count), got(32 * count + 32);
  for (size_t k = 0; k < count; k++) Blake3(prefix, ptrs[k], lens[k], expect.data() + 32 * k);
  std::memset(got.data() + 32 * count, 0x5A, 32);  // must not be written
  layerfs::MultiHasher mh(prefix);
  mh.HashAll(slices.data(), lens.data(), count, got.data());
  FUZZ_CHECK(Same(got.data(), expect.data(), 32 * count));
  for (size_t i = 0; i < 32; i++) FUZZ_CHECK(got[32 * count + i] == 0x5A);
  if (count > 0) {
    uint8_t id[32];
    layerfs::DomainHasher(tag).Hash(ptrs[0], lens[0], id);
    FUZZ_CHECK(std::memcmp(id, expect.data(), 32) == 0);
  }

  // 2. The same hasher again (scratch sized for the first call) on an in-order sub-range.
  if (count > 1) {
    const size_t start = fill % count;
    const size_t m = (opts & 1) && count - start > 1 ? count - start - 1 : count - start;
    std::vector<uint8_t> out2(32 * m);
    mh.HashAll(slices.data() + start, lens.data() + start, m, out2.data());
    FUZZ_CHECK(Same(out2.data(), expect.data() + 32 * start, 32 * m));
  }

  // 2b. Strict: independent exact-size blocks, in a shuffled order.
  if (Strict() && count > 0) {
    std::vector<size_t> order(count);
    for (size_t k = 0; k < count; k++) order[k] = k;
    Rng shuffle(SeedFrom(data, size));
    for (size_t k = count - 1; k > 0; k--) std::swap(order[k], order[shuffle.Below(k + 1)]);
    std::vector<std::unique_ptr<Guarded>> own(count);
    std::vector<const uint8_t*> p3(count);
    std::vector<size_t> l3(count);
    for (size_t j = 0; j < count; j++) {
      const size_t k = order[j];
      own[j].reset(new Guarded(lens[k]));
      if (lens[k]) std::memcpy(own[j]->data(), ptrs[k], lens[k]);
      p3[j] = own[j]->data();
      l3[j] = lens[k];
    }
    std::vector<uint8_t> out3(32 * count);
    layerfs::MultiHasher(prefix).HashAll(p3.data(), l3.data(), count, out3.data());
    for (size_t j = 0; j < count; j++)
      FUZZ_CHECK(std::memcmp(out3.data() + 32 * j, expect.data() + 32 * order[j], 32) == 0);
  }

  // 3. ChunkAndHash with input-chosen chunker parameters.
  layerfs::CdcParams cdc = layerfs::CdcDefaultParams();
  if ((opts & 7) != 7) {
    const uint32_t avg = 128u << (opts & 7);  // 128..8192
    FUZZ_CHECK(layerfs::CdcMakeParams(avg / 2, avg, avg * 4, (opts >> 3) & 3, &cdc) == nullptr);
  }
  std::vector<size_t> cut_lens;
  layerfs::CdcChunkAll(cdc, all.data(), total, [&](size_t len) { cut_lens.push_back(len); });
  {
    std::vector<uint32_t> lengths;
    std::vector<uint8_t> ids;
    layerfs::ChunkAndHash(cdc, tag.data(), tag.size(), gall.data(), total, &lengths, &ids);
    FUZZ_CHECK(lengths.size() == cut_lens.size());
    FUZZ_CHECK(ids.size() == 32 * cut_lens.size());
    for (size_t i = 0, at = 0; i < cut_lens.size(); at += cut_lens[i], i++) {
      FUZZ_CHECK(lengths[i] == cut_lens[i]);
      uint8_t id[32];
      Blake3(prefix, all.data() + at, cut_lens[i], id);
      FUZZ_CHECK(std::memcmp(id, ids.data() + 32 * i, 32) == 0);
    }
  }

  // 4. StreamDigest in pieces vs DigestBuffer vs one at a time.
  static const uint64_t kThresholds[] = {0, 0, 0, 131072};
  layerfs::DigestOptions dopts{cdc, kThresholds[(opts >> 5) & 3]};
  if (((opts >> 5) & 3) == 1) dopts.small_threshold = total;      // chunked, at the threshold
  if (((opts >> 5) & 3) == 2) dopts.small_threshold = total + 1;  // a blob, just below it
  const bool chunked = total >= dopts.small_threshold;
  layerfs::Digest whole, streamed;
  layerfs::DigestBuffer(dopts, gall.data(), total, &whole);
  {
    layerfs::StreamDigest sd(dopts, chunked);
    for (size_t k = 0; k < count; k++) sd.Update(ptrs[k], lens[k]);
    sd.Finish(&streamed);
  }
  FUZZ_CHECK(whole.chunked == chunked && streamed.chunked == chunked);
  FUZZ_CHECK(whole.lengths == streamed.lengths && whole.ids == streamed.ids);
  FUZZ_CHECK(std::memcmp(whole.content_id, streamed.content_id, 32) == 0);
  const std::string chunk_prefix = std::string(layerfs::kDomainChunk) + '\0';
  uint8_t id[32];
  if (chunked) {
    FUZZ_CHECK(whole.lengths.size() == cut_lens.size());
    FUZZ_CHECK(whole.ids.size() == 32 * cut_lens.size());
    for (size_t i = 0, at = 0; i < cut_lens.size(); at += cut_lens[i], i++) {
      FUZZ_CHECK(whole.lengths[i] == cut_lens[i]);
      Blake3(chunk_prefix, all.data() + at, cut_lens[i], id);
      FUZZ_CHECK(std::memcmp(id, whole.ids.data() + 32 * i, 32) == 0);
    }
    Blake3(std::string(layerfs::kDomainContent) + '\0', all.data(), total, id);
  } else {
    FUZZ_CHECK(whole.lengths.empty() && whole.ids.empty());
    Blake3(std::string(layerfs::kDomainBlob) + '\0', all.data(), total, id);
  }
  FUZZ_CHECK(std::memcmp(id, whole.content_id, 32) == 0);
  return 0;
}
