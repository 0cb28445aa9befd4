// FastCDC (2020 variant) cut-point search. Pure C++, no Node-API: the streaming state is
// O(1) (a rolling fingerprint and a position), so any split of the input gives the same cuts.
#pragma once
#include <cstddef>
#include <cstdint>

namespace layerfs {

struct CdcParams {
  uint32_t min_size;
  uint32_t avg_size;
  uint32_t max_size;
  uint32_t level;   // normalization level: mask bits are log2(avg) + level before avg, - level after
  uint64_t mask_s;  // stricter mask, used while the chunk is shorter than avg
  uint64_t mask_l;  // looser mask, used from avg up to max
};

constexpr uint32_t kCdcMinBound = 64;
constexpr uint32_t kCdcMaxBound = 16u << 20;
constexpr uint32_t kCdcMaxLevel = 3;
constexpr uint32_t kCdcDefaultMin = 8192, kCdcDefaultAvg = 16384, kCdcDefaultMax = 32768,
                   kCdcDefaultLevel = 2;

// Returns nullptr on success, else a message naming the offending field.
const char* CdcMakeParams(uint32_t min_size, uint32_t avg_size, uint32_t max_size, uint32_t level,
                          CdcParams* out);
CdcParams CdcDefaultParams();

// `bits` one-bits spread over bit positions 62..15 (see docs/NATIVE.md).
uint64_t CdcMask(unsigned bits);

// The 256-entry gear table (part of the on-disk format) and the same values shifted left by one.
const uint64_t* CdcGear();
const uint64_t* CdcGearShifted();

struct CdcState {
  uint64_t fp = 0;
  uint64_t pos = 0;  // bytes of the current chunk seen so far
};

// Consumes bytes from p[0..n). If a chunk ends inside them, returns the number of bytes consumed
// up to and including its last byte, sets *cut and resets the state. Otherwise consumes all n
// bytes, leaves *cut false and returns n.
size_t CdcFeed(const CdcParams& params, CdcState& state, const uint8_t* p, size_t n, bool* cut);

// Lengths of all chunks of a whole buffer, through callback f(length).
template <typename F>
void CdcChunkAll(const CdcParams& params, const uint8_t* p, size_t n, F&& f) {
  CdcState st;
  while (n > 0) {
    bool cut = false;
    size_t used = CdcFeed(params, st, p, n, &cut);
    if (!cut) {
      f(static_cast<size_t>(st.pos));
      return;
    }
    f(used);
    p += used;
    n -= used;
  }
}

}  // namespace layerfs
