// BLAKE3 of many independent messages `prefix ‖ data[k]` at full SIMD width. The C library's
// hasher only goes wide inside one message, and a ~16 KiB chunk leaves a tail of 1–15 BLAKE3
// chunks hashed one lane at a time; here the 1 KiB BLAKE3 chunks of all messages that share a
// chunk counter go through blake3_hash_many together, and so do the parent nodes of one tree
// level. Only each message's final partial chunk and its root are compressed one at a time
// (several messages interleaved, so the CPU overlaps them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace layerfs {

class MultiHasher {
 public:
  explicit MultiHasher(std::string prefix);
  // out[32*k..] = BLAKE3(prefix ‖ data[k][0..lens[k]))
  // Requirement: the messages must be consecutive, in-order slices of ONE buffer (as the
  // chunker produces them). BLAKE3's wide SIMD kernels read up to 48 bytes past an input's last
  // block; within one buffer those bytes belong to the next message, but separate allocations
  // would be read out of bounds (found by fuzz/multihash; see docs/FUZZING.md).
  void HashAll(const uint8_t* const* data, const size_t* lens, size_t count, uint8_t* out);
  // Frees the scratch (HashAll grows it again if called).
  void ReleaseScratch();

 private:
  void HashOneSlow(const uint8_t* data, size_t len, uint8_t* out) const;

  std::string prefix_;
  // Scratch reused across calls.
  std::vector<uint8_t> first_chunks_;
  std::vector<uint8_t> cvs_;  // 32-byte chaining values, per message from cv_offset_[k]
  std::vector<size_t> cv_offset_;
  std::vector<size_t> nodes_;  // nodes left in the current tree level, per message
  std::vector<const uint8_t*> inputs_;
  std::vector<size_t> owners_;
  std::vector<uint8_t> out_cvs_;
};

}  // namespace layerfs
