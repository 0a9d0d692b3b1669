// scheduler.cuh — component `gemm.scheduler` (future owner: the tile scheduler package).
//
// Owns: the tile order and the split of the work among persistent CTAs (clusters). Shares with
// the producer and every consumer: the sequence of work units each CTA runs, which all of them
// compute independently from the same facts, so they agree without talking to each other.
//
// Facts it owns (what a contract would state):
//   - unit    = one cluster tile: C vertically adjacent 128 x BN output tiles (C = cluster size,
//               1 or 2); CTA `rank` of the cluster computes m-tile C * mc + rank of unit (mc, n);
//   - raster  = `raster` cluster-rows per group: groups of `raster` cluster-rows sweep every
//               n-tile (unit u of group g is (g * raster + u % size, u / size));
//   - data-parallel part: units 0 .. dp_units - 1, cluster g runs g, g + G, g + 2G, ...
//               (G = gridDim.x / C clusters; dp_units = G * floor(U / G) when `stream_k` = 1,
//               G * max(floor(U / G) - 1, 0) when `stream_k` = 2, else U);
//   - stream-K part (`stream_k` = 1 or 2): the remaining sk_units = U - dp_units units, flattened
//               into sk_units * KT k-steps (KT = K / (64 KSUB)), split into G contiguous ranges
//               [start(g), start(g + 1)), start(g) = floor(g * S / G), S = sk_units * KT, run
//               after the cluster's data-parallel units;
//   - tiles per CTA: ceil((dp_units - g) / G) whole units, then at most
//               ceil(S / G) / KT + 2 stream-K segments;
//   - a segment's kind: FULL (all of K: the epilogue stores it), PARTIAL (starts past k = 0:
//               the consumers write its f32 partial and raise their counter; only the first
//               segment of a cluster's stream-K range can be one), FINISH (starts at k = 0, ends
//               before K: the consumers add every later contributor's partial, then the
//               epilogue stores it; only the last segment of a range can be one).
#pragma once

namespace gs {

enum WorkKind : unsigned { kFull = 0, kPartial = 1, kFinish = 2 };

struct Work {
    unsigned tile_m;   // this CTA's m-tile (rows 128 tile_m ..)
    unsigned tile_n;   // n-tile (W rows BN tile_n ..)
    unsigned k_begin;  // k-steps [k_begin, k_end) of 64 KSUB
    unsigned k_end;
    unsigned kind;     // WorkKind
    unsigned sk_tile;  // stream-K segments: the tile's index in the stream-K part
};

// The problem as the scheduler package's gs_sched_init takes it (scheduler.cu): what
// Scheduler::init takes, in one struct.
struct Problem {
    unsigned m, n, k;
    unsigned k_step;  // the k-extent of one k-step (64 KSUB)
    unsigned bn;
    unsigned raster;
    unsigned stream_k;
    unsigned cluster_size;
    unsigned cluster_rank;
};

struct Scheduler {
    // facts
    unsigned tiles_mc, tiles_n, k_tiles, raster;
    unsigned clusters, cluster, rank, csize;
    unsigned dp_units, sk_units, sk_iters;
    // cursor
    unsigned next_dp;
    unsigned sk_pos, sk_end;

    // k_step = the k-extent of one k-step (64 * KSUB): k_tiles below counts k-steps.
    __device__ __forceinline__ void init(unsigned m, unsigned n, unsigned k, unsigned k_step, unsigned bn,
                                         unsigned raster_rows, unsigned stream_k, unsigned cluster_size,
                                         unsigned cluster_rank) {
        const unsigned tiles_m = (m + 127u) / 128u;
        csize = cluster_size;
        rank = cluster_rank;
        tiles_mc = (tiles_m + csize - 1u) / csize;
        tiles_n = n / bn;
        k_tiles = k / k_step;
        raster = raster_rows == 0 ? 1u : raster_rows;
        clusters = gridDim.x / csize;
        cluster = blockIdx.x / csize;
        const unsigned units = tiles_mc * tiles_n;
        // stream_k 1: the last partial wave is stream-K; 2 (hybrid): the last full wave too, so
        // that each cluster's range spans more than one unit and a unit has at most two
        // contributors (one partial to wait for and add instead of up to three)
        unsigned dp_waves = units / clusters;
        if (stream_k == 2u && dp_waves > 0u) {
            --dp_waves;
        }
        dp_units = stream_k ? dp_waves * clusters : units;
        sk_units = units - dp_units;
        sk_iters = sk_units * k_tiles;
        next_dp = cluster;
        sk_pos = sk_start(cluster);
        sk_end = sk_start(cluster + 1u);
    }

    // First k-iteration of cluster g's stream-K range: floor(g sk_iters / clusters), in 32 bits
    // (sk_iters = q clusters + r: g q + floor(g r / clusters), g r < clusters^2), so that no 64-bit
    // division routine is called.
    __device__ __forceinline__ unsigned sk_start(unsigned g) const {
        const unsigned q = sk_iters / clusters, r = sk_iters - q * clusters;
        return g * q + (g * r) / clusters;
    }

    // The unit u in raster order -> (cluster row mc, n-tile).
    __device__ __forceinline__ void unit_coords(unsigned u, unsigned& mc, unsigned& tn) const {
        const unsigned per_group = raster * tiles_n;
        const unsigned group = u / per_group;
        const unsigned first = group * raster;
        const unsigned size = tiles_mc - first < raster ? tiles_mc - first : raster;
        const unsigned in_group = u - group * per_group;
        mc = first + in_group % size;
        tn = in_group / size;
    }

    // The next work unit of this CTA; false once there is none.
    __device__ __forceinline__ bool next(Work& w) {
        unsigned u, kb, ke, kind, sk_tile = 0;
        if (next_dp < dp_units) {
            u = next_dp;
            next_dp += clusters;
            kb = 0;
            ke = k_tiles;
            kind = kFull;
        } else if (sk_pos < sk_end) {
            sk_tile = sk_pos / k_tiles;
            kb = sk_pos - sk_tile * k_tiles;
            const unsigned left = sk_end - sk_pos;
            ke = k_tiles - kb < left ? k_tiles : kb + left;
            sk_pos += ke - kb;
            u = dp_units + sk_tile;
            kind = kb != 0 ? kPartial : (ke == k_tiles ? kFull : kFinish);
        } else {
            return false;
        }
        unsigned mc, tn;
        unit_coords(u, mc, tn);
        w.tile_m = mc * csize + rank;
        w.tile_n = tn;
        w.k_begin = kb;
        w.k_end = ke;
        w.kind = kind;
        w.sk_tile = sk_tile;
        return true;
    }

    // The partial slot (cluster g, this rank) of the workspace and counters.
    __device__ __forceinline__ unsigned slot(unsigned g) const { return g * csize + rank; }
};

}  // namespace gs
