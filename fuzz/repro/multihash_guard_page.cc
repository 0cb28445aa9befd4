// Standalone reproducer for fuzz/findings/multihash (see docs/FUZZING.md, "Findings").
//
// MultiHasher::HashAll hands BLAKE3's blake3_hash_many one 1 KiB chunk per message, read in
// place. BLAKE3's x86-64 assembly for 4 inputs (AVX-512) and 2 inputs (AVX-512, AVX2) loads the
// first input's 64-byte blocks with wide loads at block+16/+32/+48, reading up to 48 bytes past
// the end of that input's last block. BLAKE3's own hasher only passes adjacent chunks of one
// buffer, so the extra bytes are the next chunk; HashAll passes chunks of different messages.
//
// Here each message ends exactly at a PROT_NONE page. Mode "separate" puts 5 messages of 65,532
// bytes (prefix 17 + 65,532 = 64 full BLAKE3 chunks + a 13-byte tail) in 5 separate guarded
// mappings: the last full chunk of message 0 is input 0 of a 4-wide group, so the kernel reads
// 35 bytes past the message into the guard page and the process dies with SIGSEGV on AVX-512
// machines. Mode "adjacent" lays the same messages out back to back in one guarded buffer, as
// every caller in native/ does (ChunkAndHash, StreamDigest, DigestBuffer); it completes.
//
// Build and run (plain -O2, no sanitizers; x86-64 Linux):
//   B=node_modules/@c4312/blake3-native/c; O=build/fuzz/repro; mkdir -p $O
//   clang -O2 -c $B/blake3.c $B/blake3_dispatch.c $B/blake3_portable.c $B/blake3_*_x86-64_unix.S
//   mv blake3*.o $O/
//   clang++ -O2 -std=c++17 -Inative -I$B fuzz/repro/multihash_guard_page.cc native/multihash.cc \
//     $O/blake3*.o -o $O/multihash_guard_page
//   $O/multihash_guard_page separate   # SIGSEGV on AVX-512 machines
//   $O/multihash_guard_page adjacent   # prints "ok (adjacent)"
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "blake3.h"
#include "multihash.h"

namespace {

// `len` bytes ending exactly at a PROT_NONE page.
uint8_t* Guarded(size_t len) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t span = (len + page - 1) / page * page;
  auto* base = static_cast<uint8_t*>(mmap(nullptr, span + page, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED) {
    std::perror("mmap");
    std::exit(2);
  }
  mprotect(base + span, page, PROT_NONE);
  return base + span - len;
}

}  // namespace

int main(int argc, char** argv) {
  const bool separate = argc > 1 && std::strcmp(argv[1], "separate") == 0;
  const std::string prefix = std::string("layerfs/chunk/v1") + '\0';  // 17 bytes
  constexpr size_t kCount = 5, kLen = 65532;
  std::vector<const uint8_t*> ptrs(kCount);
  std::vector<size_t> lens(kCount, kLen);
  uint8_t* whole = separate ? nullptr : Guarded(kCount * kLen);
  for (size_t k = 0; k < kCount; k++) {
    uint8_t* m = separate ? Guarded(kLen) : whole + k * kLen;
    for (size_t i = 0; i < kLen; i++) m[i] = static_cast<uint8_t>(i * 7 + k);
    ptrs[k] = m;
  }
  std::vector<uint8_t> out(32 * kCount);
  layerfs::MultiHasher(prefix).HashAll(ptrs.data(), lens.data(), kCount, out.data());
  for (size_t k = 0; k < kCount; k++) {
    uint8_t want[32];
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, prefix.data(), prefix.size());
    blake3_hasher_update(&h, ptrs[k], lens[k]);
    blake3_hasher_finalize(&h, want, 32);
    if (std::memcmp(want, out.data() + 32 * k, 32) != 0) {
      std::printf("mismatch at message %zu\n", k);
      return 1;
    }
  }
  std::printf("ok (%s)\n", separate ? "separate" : "adjacent");
  return 0;
}
