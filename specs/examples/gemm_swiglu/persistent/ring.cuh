// ring.cuh — the operand ring `kv` shared by the producer (producer.cuh) and the consumers
// (consumer.cuh): its layout and its cursor. Owned by the mainloop (producer + consumers are
// one owner); the driver places it in shared memory.
//
// Slot s (0 <= s < depth) holds A's 128 x 64 box (16 KiB, rows of 128 B, 128B-swizzled) at
// slots + s * stage_bytes and B's BN x 64 box (BN * 128 B) right after it. full[s] and
// empty[s] are 8-byte mbarriers at full + 8 s and empty + 8 s.
#pragma once

namespace gs {

struct Ring {
    unsigned slots;        // shared address of slot 0 (1024-aligned)
    unsigned stage_bytes;  // bytes between slots (multiple of 1024)
    unsigned full;         // shared address of full[0]
    unsigned empty;        // shared address of empty[0]
    unsigned depth;

    __device__ __forceinline__ unsigned a(unsigned s) const { return slots + s * stage_bytes; }
    __device__ __forceinline__ unsigned b(unsigned s) const { return slots + s * stage_bytes + 16384u; }
    __device__ __forceinline__ unsigned full_bar(unsigned s) const { return full + 8u * s; }
    __device__ __forceinline__ unsigned empty_bar(unsigned s) const { return empty + 8u * s; }
};

// A position in the ring: the slot and the parity of the pass through the ring.
struct RingCursor {
    unsigned slot = 0;
    unsigned phase = 0;

    __device__ __forceinline__ void advance(unsigned depth) {
        if (++slot == depth) {
            slot = 0;
            phase ^= 1u;
        }
    }
    // n steps at once (a unit some other warpgroup consumes).
    __device__ __forceinline__ void skip(unsigned n, unsigned depth) {
        const unsigned pos = slot + n;
        phase ^= (pos / depth) & 1u;
        slot = pos % depth;
    }
};

}  // namespace gs
