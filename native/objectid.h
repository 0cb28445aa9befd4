// Object ids: BLAKE3-256 over utf8(domain tag) || 0x00 || bytes. The NUL keeps tags from being
// extended into content ("a" + "bc" never collides with "ab" + "c").
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "blake3.h"

namespace layerfs {

constexpr char kDomainChunk[] = "layerfs/chunk/v1";
constexpr char kDomainBlob[] = "layerfs/blob/v1";
constexpr char kDomainContent[] = "layerfs/content/v1";

// A hasher primed with a domain tag; Fresh() hands out copies so the tag is absorbed once.
class DomainHasher {
 public:
  explicit DomainHasher(const std::string& tag) {
    blake3_hasher_init(&primed_);
    blake3_hasher_update(&primed_, tag.data(), tag.size());
    const uint8_t zero = 0;
    blake3_hasher_update(&primed_, &zero, 1);
  }
  void Fresh(blake3_hasher* h) const { std::memcpy(h, &primed_, sizeof(blake3_hasher)); }
  void Hash(const uint8_t* p, size_t n, uint8_t out[32]) const {
    blake3_hasher h;
    Fresh(&h);
    blake3_hasher_update(&h, p, n);
    blake3_hasher_finalize(&h, out, 32);
  }

 private:
  blake3_hasher primed_;
};

}  // namespace layerfs
