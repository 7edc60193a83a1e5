// The hashes ringrt names things with: FNV-1a over bytes (kernel names, compile-cache keys) and
// splitmix64's finalizer (a well-spread mix of one 64-bit word). Stable across runs and machines.
// Reference: FNV-1a (Fowler, Noll, Vo); splitmix64 (Steele, Lea, Flood 2014).
#pragma once

#include <cstdint>
#include <string_view>

namespace ringrt {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

// FNV-1a of the bytes of s, starting from h.
inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnvOffset) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// splitmix64's finalizer: every input bit affects every output bit.
inline uint64_t splitmix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace ringrt
