// libFuzzer harness for DecodeRun (native/run_decode.cc): a pack row and a run of chunks over it,
// both from the input, checked against an oracle that decodes each chunk on its own.
//
// Input: u8 chunk count (1..24), u8 threads (1..3), u8 flags (bit 0: verify raw chunks in place,
// without an output), then per chunk u16 src_off, u16 src_len, u8 codec (bit 0) and id kind
// (bit 1: the chunk's true id, else a wrong one), u16 at, u16 size (offsets and lengths are
// scaled by 8 when bit 2 of the codec byte is set, so frames of up to ~512 KiB are reachable);
// the rest is the row. Zstd frames in the row come from the seed corpus (scripts/fuzz.mjs).
//
// Properties: ok[k] is 1 exactly when the oracle decodes chunk k and its bytes hash to the given
// id; the output holds those bytes at the chunk's place; nothing past the run's bytes is written;
// no read outside the row or the frames (ASan).
#include <cstring>
#include <vector>

#define ZSTD_STATIC_LINKING_ONLY
#include "fuzz_util.h"
#include "objectid.h"
#include "run_decode.h"
#include "zstd.h"

using layerfs::RunChunk;
using layerfs_fuzz::Reader;

namespace {

// The chunk's canonical bytes as a reader of one object would get them, or false.
FUZZ_NO_COVERAGE bool Oracle(const uint8_t* row, size_t row_size, const RunChunk& c, std::vector<uint8_t>* out) {
  if (c.src_off > row_size || c.src_len > row_size - c.src_off) return false;
  const uint8_t* p = row + c.src_off;
  if (c.codec == layerfs::kRunRaw) {
    if (c.src_len != c.size || c.at != 0) return false;
    out->assign(p, p + c.size);
    return true;
  }
  ZSTD_frameHeader h;
  if (ZSTD_getFrameHeader_advanced(&h, p, c.src_len, ZSTD_f_zstd1_magicless) != 0) return false;
  if (h.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || h.frameContentSize > layerfs::kRunMaxFrame) return false;
  std::vector<uint8_t> frame(static_cast<size_t>(h.frameContentSize));
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_DCtx_setParameter(d, ZSTD_d_format, ZSTD_f_zstd1_magicless);
  const size_t r = ZSTD_decompressDCtx(d, frame.data(), frame.size(), p, c.src_len);
  ZSTD_freeDCtx(d);
  if (ZSTD_isError(r) || r != frame.size() || c.at > frame.size() || c.size > frame.size() - c.at) return false;
  out->assign(frame.begin() + static_cast<long>(c.at), frame.begin() + static_cast<long>(c.at + c.size));
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const size_t n = 1 + in.U8() % 24;
  const size_t threads = 1 + in.U8() % 3;
  const bool in_place = in.U8() & 1;
  std::vector<RunChunk> chunks(n);
  std::vector<bool> true_id(n);
  for (size_t k = 0; k < n; k++) {
    const uint64_t src_off = in.U16(), src_len = in.U16();
    const uint8_t codec = in.U8();
    const uint64_t at = in.U16(), csize = in.U16();
    const uint64_t scale = (codec & 4) ? 8 : 1;
    chunks[k] = RunChunk{src_off * scale, src_len * scale, codec & 1u, at * scale, csize * scale};
    if (in_place) chunks[k].codec = layerfs::kRunRaw, chunks[k].at = 0;
    true_id[k] = codec & 2;
  }
  const size_t head = 3 + 9 * n;
  const uint8_t* row = size > head ? data + head : data + size;
  const size_t row_size = size > head ? size - head : 0;
  // A private copy: ASan then catches any read past the row.
  std::vector<uint8_t> row_copy(row, row + row_size);

  layerfs::DomainHasher hasher{std::string(layerfs::kDomainChunk)};
  std::vector<std::vector<uint8_t>> want(n);
  std::vector<bool> decodable(n);
  std::vector<uint8_t> ids(32 * n, 0x5a);
  uint64_t total = 0;
  for (size_t k = 0; k < n; k++) {
    decodable[k] = Oracle(row_copy.data(), row_size, chunks[k], &want[k]);
    if (decodable[k] && true_id[k]) hasher.Hash(want[k].data(), want[k].size(), ids.data() + 32 * k);
    total += chunks[k].size;
  }
  if (total > (8u << 20)) return 0;
  std::vector<uint8_t> ok(n, 7);
  std::vector<uint8_t> out(in_place ? 0 : total + 16, 0xee);
  layerfs::DecodeRun(row_copy.data(), row_size, chunks.data(), n, ids.data(), in_place ? nullptr : out.data(),
                     in_place ? 0 : total, ok.data(), threads);
  uint64_t at = 0;
  for (size_t k = 0; k < n; k++) {
    uint8_t digest[32] = {};
    if (decodable[k]) hasher.Hash(want[k].data(), want[k].size(), digest);
    const bool expect = decodable[k] && std::memcmp(digest, ids.data() + 32 * k, 32) == 0;
    FUZZ_CHECK(ok[k] == (expect ? 1 : 0));
    if (expect && !in_place && !want[k].empty()) FUZZ_CHECK(std::memcmp(out.data() + at, want[k].data(), want[k].size()) == 0);
    at += chunks[k].size;
  }
  for (size_t i = total; i < out.size(); i++) FUZZ_CHECK(out[i] == 0xee);
  return 0;
}
