// Shared helpers for the libFuzzer harnesses in fuzz/ (built by scripts/fuzz.mjs).
// Header-only; no Node-API, no dependencies beyond the C++ standard library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// For oracle code (reference loops, input expansion): ASan/UBSan still apply, but no coverage
// counters or comparison hooks, which would cost more than the code under test and guide the
// fuzzer towards nothing of interest.
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))

namespace layerfs_fuzz {

// A failed property aborts: libFuzzer (with ASan) reports it as a crash and saves the input.
[[noreturn]] inline void Fail(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "\n==FUZZ CHECK FAILED== %s:%d: %s\n", file, line, expr);
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond)                                          \
  do {                                                            \
    if (!(cond)) ::layerfs_fuzz::Fail(__FILE__, __LINE__, #cond); \
  } while (0)

// Reads little-endian integers from the front of the input; past the end it yields zeros, so
// every input (including the empty one) decodes to some header.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}

  uint8_t U8() { return pos_ < n_ ? p_[pos_++] : (pos_++, 0); }
  uint16_t U16() {
    uint16_t a = U8();
    return static_cast<uint16_t>(a | (U8() << 8));
  }
  uint32_t U32() {
    uint32_t a = U16();
    return a | (static_cast<uint32_t>(U16()) << 16);
  }
  // The unread rest of the input (empty once the header ran past the end).
  const uint8_t* Rest() const { return pos_ < n_ ? p_ + pos_ : p_ + n_; }
  size_t RestSize() const { return pos_ < n_ ? n_ - pos_ : 0; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// Deterministic pseudo-random numbers (splitmix64) for choices derived from the input.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform-ish in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t s_;
};

inline uint64_t SeedFrom(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

}  // namespace layerfs_fuzz
