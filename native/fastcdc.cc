#include "fastcdc.h"

#include <mutex>

#include "blake3.h"

namespace layerfs {

namespace {

constexpr char kGearSeed[] = "layerfs/fastcdc/gear/v1";

struct GearTables {
  alignas(64) uint64_t gear[256];
  alignas(64) uint64_t gear_ls[256];
};

GearTables g_tables;
std::once_flag g_tables_once;

void BuildTables() {
  // The table is the BLAKE3 extended output of a fixed seed, so anyone can rebuild it from the
  // format document with any BLAKE3 implementation (b3sum --length 2048).
  uint8_t out[256 * 8];
  blake3_hasher h;
  blake3_hasher_init(&h);
  blake3_hasher_update(&h, kGearSeed, sizeof(kGearSeed) - 1);
  blake3_hasher_finalize(&h, out, sizeof(out));
  for (int i = 0; i < 256; i++) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = (v << 8) | out[i * 8 + b];
    g_tables.gear[i] = v;
    g_tables.gear_ls[i] = v << 1;
  }
}

const GearTables& Tables() {
  std::call_once(g_tables_once, BuildTables);
  return g_tables;
}

// Scans p[0..len) continuing fingerprint fp; returns (index of the cutting byte) + 1, or 0.
// Two bytes per step as in the FastCDC 2020 paper: after the even byte the register holds the
// fingerprint shifted left by one (gear_ls), so it is tested against mask << 1. Bit 63 is never in
// a mask, so this is exactly the byte-at-a-time gear hash.
__attribute__((always_inline)) inline size_t Scan(const uint8_t* __restrict p, size_t len,
                                                  uint64_t& fp_io, uint64_t mask,
                                                  const uint64_t* __restrict gear,
                                                  const uint64_t* __restrict gear_ls) {
  uint64_t fp = fp_io;
  const uint64_t mask_ls = mask << 1;
  size_t i = 0;
  // Four bytes per iteration; the loop-carried chain is fp -> 4*fp + (gear_ls[a] + gear[b]),
  // one LEA per two bytes, with the tests hanging off it.
  while (i + 4 <= len) {
    const uint64_t a0 = gear_ls[p[i]], b0 = gear[p[i + 1]];
    const uint64_t a1 = gear_ls[p[i + 2]], b1 = gear[p[i + 3]];
    const uint64_t x0 = (fp << 2) + a0;
    if (__builtin_expect(!(x0 & mask_ls), 0)) return i + 1;
    const uint64_t f1 = (fp << 2) + (a0 + b0);
    if (__builtin_expect(!(f1 & mask), 0)) return i + 2;
    const uint64_t x1 = (f1 << 2) + a1;
    if (__builtin_expect(!(x1 & mask_ls), 0)) return i + 3;
    fp = (f1 << 2) + (a1 + b1);
    if (__builtin_expect(!(fp & mask), 0)) return i + 4;
    i += 4;
  }
  for (; i < len; i++) {
    fp = (fp << 1) + gear[p[i]];
    if (!(fp & mask)) return i + 1;
  }
  fp_io = fp;
  return 0;
}

inline unsigned Log2(uint32_t v) { return 31u - static_cast<unsigned>(__builtin_clz(v)); }

}  // namespace

const uint64_t* CdcGear() { return Tables().gear; }
const uint64_t* CdcGearShifted() { return Tables().gear_ls; }

uint64_t CdcMask(unsigned bits) {
  // Spread the bits so the cut decision depends on a ~63-byte window, not on the last few bytes
  // (low fingerprint bits only see the most recent bytes).
  uint64_t m = 0;
  for (unsigned j = 0; j < bits; j++) m |= uint64_t{1} << (62 - (j * 48) / bits);
  return m;
}

const char* CdcMakeParams(uint32_t min_size, uint32_t avg_size, uint32_t max_size, uint32_t level,
                          CdcParams* out) {
  if (min_size < kCdcMinBound || min_size > kCdcMaxBound) return "minSize out of range";
  if (avg_size <= min_size || avg_size > kCdcMaxBound) return "avgSize must be > minSize";
  if ((avg_size & (avg_size - 1)) != 0) return "avgSize must be a power of two";
  if (max_size <= avg_size || max_size > kCdcMaxBound) return "maxSize must be > avgSize";
  if (level > kCdcMaxLevel) return "normalization must be 0..3";
  const unsigned bits = Log2(avg_size);
  out->min_size = min_size;
  out->avg_size = avg_size;
  out->max_size = max_size;
  out->level = level;
  out->mask_s = CdcMask(bits + level);
  out->mask_l = CdcMask(bits - level);
  return nullptr;
}

CdcParams CdcDefaultParams() {
  CdcParams p{};
  CdcMakeParams(kCdcDefaultMin, kCdcDefaultAvg, kCdcDefaultMax, kCdcDefaultLevel, &p);
  return p;
}

size_t CdcFeed(const CdcParams& P, CdcState& st, const uint8_t* p, size_t n, bool* cut) {
  const GearTables& t = Tables();
  uint64_t pos = st.pos;
  uint64_t fp = st.fp;
  size_t i = 0;
  *cut = false;
  if (pos < P.min_size) {
    // Skip-ahead: no byte before minSize can end a chunk, and none of them enters the fingerprint.
    const uint64_t need = P.min_size - pos;
    const size_t skip = need < n ? static_cast<size_t>(need) : n;
    pos += skip;
    i = skip;
    if (pos < P.min_size) {
      st.pos = pos;
      return n;
    }
  }
  if (pos < P.avg_size) {
    const uint64_t room = P.avg_size - pos;
    const size_t lim = room < n - i ? static_cast<size_t>(room) : n - i;
    const size_t r = Scan(p + i, lim, fp, P.mask_s, t.gear, t.gear_ls);
    if (r) {
      st = CdcState{};
      *cut = true;
      return i + r;
    }
    i += lim;
    pos += lim;
    if (pos < P.avg_size) {
      st.fp = fp;
      st.pos = pos;
      return n;
    }
  }
  {
    const uint64_t room = P.max_size - pos;
    const size_t lim = room < n - i ? static_cast<size_t>(room) : n - i;
    const size_t r = Scan(p + i, lim, fp, P.mask_l, t.gear, t.gear_ls);
    if (r) {
      st = CdcState{};
      *cut = true;
      return i + r;
    }
    i += lim;
    pos += lim;
  }
  if (pos >= P.max_size) {
    st = CdcState{};
    *cut = true;
    return i;
  }
  st.fp = fp;
  st.pos = pos;
  return n;
}

}  // namespace layerfs
