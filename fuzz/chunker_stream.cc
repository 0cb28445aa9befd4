// libFuzzer harness: FastCDC cut points (native/fastcdc.cc).
//
// For each input it checks that
//   1. CdcMakeParams accepts exactly the parameter sets docs/NATIVE.md allows (checked against an
//      independent predicate on raw words from the input), leaves *out untouched when it refuses,
//      and builds masks with the documented shape;
//   2. for two parameter sets derived from the input, chunking the whole buffer (CdcChunkAll),
//      streaming it through one CdcState in pieces whose sizes come from the input (including
//      zero-length pieces and pieces that end exactly at, just before or just after a cut), and
//      the byte-at-a-time specification loop of docs/NATIVE.md all give the same lengths;
//   3. the lengths sum to the input size, none is 0, every chunk but the last is > minSize, all
//      are <= maxSize, and CdcFeed's state and return value follow its contract.
//
// Input layout (all fields optional, missing bytes read as 0):
//   [0]      mode: bits 0-1 primary params (0 defaults, 1/3 small valid derived, 2 raw words),
//            bits 2-3 split strategy, bit 4 expand the data, bit 5 whiten the expansion
//   [1..12]  three u32 words: raw (min, avg, max) or the seed of the derived params
//   [13]     raw level; also shifts applied to the raw words
//   [14]     max piece size selector; [15] split seed
//   [16..17] expansion length / 4
//   [18..]   data
#include <cstring>
#include <vector>

#include "fastcdc.h"
#include "fuzz_util.h"

using layerfs::CdcParams;
using layerfs::CdcState;
using namespace layerfs_fuzz;

namespace {

constexpr size_t kHeader = 18;

bool ParamsValid(uint32_t mn, uint32_t avg, uint32_t mx, uint32_t level) {
  const uint64_t lo = layerfs::kCdcMinBound, hi = layerfs::kCdcMaxBound;
  return mn >= lo && mn <= hi && avg > mn && avg <= hi && (avg & (avg - 1)) == 0 && mx > avg &&
         mx <= hi && level <= layerfs::kCdcMaxLevel;
}

unsigned Log2(uint32_t v) {
  unsigned b = 0;
  while (v >>= 1) b++;
  return b;
}

// The documented mask: `bits` one-bits at positions 62 - floor(j*48/bits).
uint64_t SpecMask(unsigned bits) {
  uint64_t m = 0;
  for (unsigned j = 0; j < bits; j++) m |= uint64_t{1} << (62 - (j * 48) / bits);
  return m;
}

// Calls CdcMakeParams and checks it against the predicate; returns true if it accepted.
bool CheckMakeParams(uint32_t mn, uint32_t avg, uint32_t mx, uint32_t level, CdcParams* out) {
  CdcParams canary;
  std::memset(&canary, 0xA5, sizeof canary);
  CdcParams got = canary;
  const char* err = layerfs::CdcMakeParams(mn, avg, mx, level, &got);
  const bool valid = ParamsValid(mn, avg, mx, level);
  FUZZ_CHECK((err == nullptr) == valid);
  if (!valid) {
    FUZZ_CHECK(err[0] != '\0');
    FUZZ_CHECK(std::memcmp(&got, &canary, sizeof got) == 0);  // refused: *out untouched
    return false;
  }
  FUZZ_CHECK(got.min_size == mn && got.avg_size == avg && got.max_size == mx && got.level == level);
  const unsigned bits = Log2(avg);
  FUZZ_CHECK(got.mask_s == SpecMask(bits + level));
  FUZZ_CHECK(got.mask_l == SpecMask(bits - level));
  FUZZ_CHECK(static_cast<unsigned>(__builtin_popcountll(got.mask_s)) == bits + level);
  FUZZ_CHECK(static_cast<unsigned>(__builtin_popcountll(got.mask_l)) == bits - level);
  FUZZ_CHECK(((got.mask_s | got.mask_l) >> 63) == 0);                  // bit 63 never used
  FUZZ_CHECK(((got.mask_s | got.mask_l) & ((uint64_t{1} << 15) - 1)) == 0);  // nor bits < 15
  if (out) *out = got;
  return true;
}

// Small valid parameters (avg 128..16384) so short inputs still hold many chunks.
CdcParams DerivedParams(Rng& rng) {
  const uint32_t avg = 1u << (7 + rng.Below(8));
  const uint32_t mn = 64 + static_cast<uint32_t>(rng.Below(avg - 64));
  const uint32_t mx = avg + 1 + static_cast<uint32_t>(rng.Below(uint64_t{avg} * 7));
  const uint32_t level = static_cast<uint32_t>(rng.Below(4));
  CdcParams p{};
  FUZZ_CHECK(CheckMakeParams(mn, avg, mx, level, &p));
  return p;
}

// docs/NATIVE.md "Cut rule", one byte at a time.
FUZZ_NO_COVERAGE std::vector<size_t> SpecLengths(const CdcParams& P, const uint8_t* d, size_t n) {
  const uint64_t* gear = layerfs::CdcGear();
  std::vector<size_t> out;
  size_t s = 0;
  while (s < n) {
    const size_t r = n - s;
    if (r <= P.min_size) {
      out.push_back(r);
      break;
    }
    const size_t limit = r < P.max_size ? r : P.max_size;
    size_t cut = limit;
    uint64_t fp = 0;
    for (size_t i = P.min_size; i < limit; i++) {
      fp = (fp << 1) + gear[d[s + i]];
      if ((fp & (i < P.avg_size ? P.mask_s : P.mask_l)) == 0) {
        cut = i + 1;
        break;
      }
    }
    out.push_back(cut);
    s += cut;
  }
  return out;
}

FUZZ_NO_COVERAGE std::vector<size_t> WholeLengths(const CdcParams& P, const uint8_t* d, size_t n) {
  std::vector<size_t> out;
  layerfs::CdcChunkAll(P, d, n, [&](size_t len) { out.push_back(len); });
  return out;
}

// Piece sizes for streaming, from the header's strategy bits and seed.
FUZZ_NO_COVERAGE std::vector<size_t> Pieces(uint8_t mode, uint8_t piece_sel, uint8_t seed, const uint8_t* d, size_t n,
                           const std::vector<size_t>& cuts) {
  static constexpr size_t kMaxPiece[] = {1, 2, 3, 7, 63, 64, 65, 1000, 4096, 65536, SIZE_MAX};
  const size_t max_piece = kMaxPiece[piece_sel % (sizeof kMaxPiece / sizeof kMaxPiece[0])];
  Rng rng(SeedFrom(&seed, 1) ^ (uint64_t{piece_sel} << 32) ^ n);
  std::vector<size_t> out;
  size_t left = n;
  auto take = [&](size_t want) {
    if (want > left) want = left;
    out.push_back(want);
    left -= want;
  };
  switch ((mode >> 2) & 3) {
    case 0:  // random sizes up to max_piece
      while (left > 0) take(1 + static_cast<size_t>(rng.Below(max_piece == SIZE_MAX ? left : max_piece)));
      break;
    case 1:  // random sizes with empty pieces mixed in
      while (left > 0) {
        if (rng.Below(3) == 0) out.push_back(0);
        take(1 + static_cast<size_t>(rng.Below(max_piece == SIZE_MAX ? left : max_piece)));
      }
      out.push_back(0);
      break;
    case 2: {  // pieces ending at a cut point, one byte before or one byte after it
      size_t at = 0, next = 0;
      for (size_t c : cuts) {
        next += c;
        size_t end = next;
        const uint64_t k = rng.Below(3);
        if (k == 0 && end > at + 1) end--;
        if (k == 2 && end < n) end++;
        if (end > at) {
          take(end - at);
          at = end;
        }
      }
      if (left > 0) take(left);
      break;
    }
    default: {  // sizes read from the data itself
      size_t i = 0;
      while (left > 0) {
        const size_t v = d[i++ % n];
        const size_t want = (v * v) % (max_piece == SIZE_MAX ? 70000 : max_piece + 1);
        take(want);
        if (want == 0) take(1);  // an empty piece, then progress
      }
      break;
    }
  }
  return out;
}

FUZZ_NO_COVERAGE std::vector<size_t> StreamLengths(const CdcParams& P, const uint8_t* d, size_t n,
                                  const std::vector<size_t>& pieces) {
  std::vector<size_t> out;
  CdcState st;
  uint64_t cur = 0;  // bytes of the current chunk fed so far
  size_t fed = 0;
  for (size_t piece : pieces) {
    const uint8_t* p = d + fed;
    size_t len = piece;
    fed += piece;
    do {
      bool cut = true;  // CdcFeed must clear it
      const size_t used = layerfs::CdcFeed(P, st, p, len, &cut);
      FUZZ_CHECK(used <= len);
      if (!cut) {
        FUZZ_CHECK(used == len);
        cur += len;
        FUZZ_CHECK(st.pos == cur);
        FUZZ_CHECK(st.pos < P.max_size);
        break;
      }
      FUZZ_CHECK(cur + used > 0);
      FUZZ_CHECK(st.pos == 0 && st.fp == 0);  // a cut resets the state
      out.push_back(static_cast<size_t>(cur + used));
      cur = 0;
      p += used;
      len -= used;
    } while (len > 0);
  }
  FUZZ_CHECK(fed == n);
  if (cur > 0) out.push_back(static_cast<size_t>(cur));
  return out;
}

// `target` bytes of the data repeated, optionally XORed with a stream seeded by the data.
FUZZ_NO_COVERAGE std::vector<uint8_t> Expand(const uint8_t* d, size_t n, size_t target, bool whiten) {
  std::vector<uint8_t> out(target);
  Rng rng(SeedFrom(d, n));
  for (size_t i = 0; i < target; i++) {
    const uint8_t base = n ? d[i % n] : 0;
    out[i] = whiten ? static_cast<uint8_t>(base ^ rng.Next()) : base;
  }
  return out;
}

FUZZ_NO_COVERAGE void CheckBounds(const CdcParams& P, const std::vector<size_t>& lens, size_t n) {
  size_t sum = 0;
  for (size_t i = 0; i < lens.size(); i++) {
    FUZZ_CHECK(lens[i] > 0);
    FUZZ_CHECK(lens[i] <= P.max_size);
    // Every chunk but the last is longer than minSize (the first candidate cut is byte minSize).
    if (i + 1 < lens.size()) FUZZ_CHECK(lens[i] > P.min_size);
    sum += lens[i];
  }
  FUZZ_CHECK(sum == n);
  FUZZ_CHECK((n == 0) == lens.empty());
}

void CheckAll(const CdcParams& P, uint8_t mode, uint8_t piece_sel, uint8_t seed, const uint8_t* d,
              size_t n) {
  const std::vector<size_t> whole = WholeLengths(P, d, n);
  CheckBounds(P, whole, n);
  FUZZ_CHECK(whole == SpecLengths(P, d, n));
  const std::vector<size_t> pieces = Pieces(mode, piece_sel, seed, d, n, whole);
  FUZZ_CHECK(StreamLengths(P, d, n, pieces) == whole);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const uint8_t mode = r.U8();
  const uint32_t w0 = r.U32(), w1 = r.U32(), w2 = r.U32();
  const uint8_t lvl = r.U8();
  const uint8_t piece_sel = r.U8(), seed = r.U8();
  const uint16_t expand = r.U16();
  const uint8_t* d = size > kHeader ? data + kHeader : data + size;
  size_t n = size > kHeader ? size - kHeader : 0;

  // 1. Parameter validation, on the raw words and on shifted copies (which land near the bounds
  //    far more often than raw 32-bit words do).
  CdcParams raw{};
  const bool raw_ok = CheckMakeParams(w0, w1, w2, lvl & 7, &raw);
  CdcParams shifted{};
  const uint32_t sh = lvl >> 3;  // 0..31
  const uint32_t smin = w0 >> (sh + (w0 & 7) > 31 ? 31 : sh + (w0 & 7));
  uint32_t savg = w1 >> sh;
  if ((lvl & 0x40) && savg) savg = 1u << Log2(savg);  // usually a power of two
  const bool shifted_ok = CheckMakeParams(smin, savg, w2 >> sh, (lvl >> 1) & 3, &shifted);
  CheckMakeParams(w0 & 0x1FFFFFF, w1 & 0x1FFFFFF, w2 & 0x1FFFFFF, lvl % 5, nullptr);

  // 2. The data, optionally expanded to a longer deterministic buffer (owned, exact size, so
  //    ASan sees any read past its end).
  std::vector<uint8_t> expanded;
  if (mode & 0x10) {
    expanded = Expand(d, n, size_t{expand} * 4, mode & 0x20);
    d = expanded.data();
    n = expanded.size();
  }

  // 3. Primary parameters per the mode, then one more derived set.
  Rng prng(SeedFrom(data, size < kHeader ? size : kHeader));
  CdcParams primary;
  switch (mode & 3) {
    case 0:
      primary = layerfs::CdcDefaultParams();
      FUZZ_CHECK(primary.min_size == layerfs::kCdcDefaultMin && primary.avg_size == layerfs::kCdcDefaultAvg &&
                 primary.max_size == layerfs::kCdcDefaultMax && primary.level == layerfs::kCdcDefaultLevel);
      break;
    case 2:
      primary = raw_ok ? raw : shifted_ok ? shifted : layerfs::CdcDefaultParams();
      break;
    default:
      primary = DerivedParams(prng);
      break;
  }
  CheckAll(primary, mode, piece_sel, seed, d, n);
  const CdcParams second = DerivedParams(prng);
  CheckAll(second, static_cast<uint8_t>(mode + 4), static_cast<uint8_t>(piece_sel + 1), seed, d, n);
  return 0;
}
