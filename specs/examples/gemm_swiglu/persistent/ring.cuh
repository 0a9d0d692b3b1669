// ring.cuh — the operand ring `kv` shared by the producer (producer.cuh) and the consumers
// (consumer.cuh): its layout and its cursor. Owned by the mainloop (producer + consumers are
// one owner); the driver places it in shared memory.
//
// A slot holds KSUB k-blocks of 64: first KSUB A sub-blocks of a_sub bytes each (A's box of
// a_box_rows rows of 128 B, 128B-swizzled; a_sub = a_box_rows * 128 rounded up to 1 KiB), then
// KSUB B sub-blocks of BN * 128 bytes. stage_bytes = KSUB * (a_sub + BN * 128); the depth is as
// many slots as fit the ring's region, at most kMaxDepth: both are run-time values, the same
// for every role (they follow from a_box_rows alone). full[s] and empty[s] are 8-byte
// mbarriers at full + 8 s and empty + 8 s.
#pragma once

namespace gs {

constexpr unsigned kMaxDepth = 16;

struct Ring {
    unsigned slots;        // shared address of slot 0 (1024-aligned)
    unsigned stage_bytes;  // bytes between slots (multiple of 1024)
    unsigned a_sub;        // bytes of one A sub-block (multiple of 1024)
    unsigned b_sub;        // bytes of one B sub-block (BN * 128)
    unsigned b_off;        // offset of B's first sub-block in a slot (KSUB * a_sub)
    unsigned full;         // shared address of full[0]
    unsigned empty;        // shared address of empty[0]
    unsigned depth;

    __device__ __forceinline__ void layout(unsigned base, unsigned region, unsigned full_bars, unsigned empty_bars,
                                           unsigned a_box_rows, unsigned bn, unsigned ksub) {
        slots = base;
        a_sub = (a_box_rows * 128u + 1023u) & ~1023u;
        b_sub = bn * 128u;
        b_off = ksub * a_sub;
        stage_bytes = ksub * (a_sub + b_sub);
        depth = region / stage_bytes;
        depth = depth < kMaxDepth ? depth : kMaxDepth;
        full = full_bars;
        empty = empty_bars;
    }
    __device__ __forceinline__ unsigned a(unsigned s, unsigned j) const { return slots + s * stage_bytes + j * a_sub; }
    __device__ __forceinline__ unsigned b(unsigned s, unsigned j) const {
        return slots + s * stage_bytes + b_off + j * b_sub;
    }
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
