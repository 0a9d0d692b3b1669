// core.cuh — component `attn.core` (owner: the core team): the two consumer warpgroups of the
// FlashAttention-3-style forward. Warpgroup wg (0 or 1) owns query rows m0 + 64 wg .. + 63 of the
// CTA's tile; for each kv block of the load's sequence it computes S = Q K^T (wgmma m64n128k16,
// both operands K-major from shared memory, 128B swizzle), applies the score callable and the
// mask callable (the latter only on blocks the mask does not report fully kept, and on the
// block holding seq_k), runs the online softmax in registers (exp2 with the scale folded in),
// and accumulates O += P V (wgmma m64nDk16, P from registers in the accumulator layout, V
// MN-major from shared memory). Intra-warpgroup overlap: iteration i issues S_i = Q K_i^T and
// O += P_{i-1} V_{i-1} back to back, then runs softmax(S_i) while the PV wgmma runs (K_i's
// release after the softmax keeps ptxas from hoisting the PV wait above it). P is double-
// buffered: softmax(S_i) packs P_i to bf16 into the buffer PV_{i-1} does not read (the loop is
// unrolled by two so that both buffers stay registers), so that after the PV wait only O's
// rescale stands between the softmax and the next issue. As FA3 / FA4: K's full wait comes
// before the turn is taken, V's between the S and PV issues. Ping-pong
// between the two warpgroups on named barriers ATTN_BAR_SCHED0/1: a warpgroup issues its wgmma
// only in its turn and hands the turn over right after issuing, so its softmax overlaps the
// other warpgroup's GEMMs (protocol: attention.cu's header, (P3)).
// Owns: CoreParams, attn_core_main, the read side of the Q ring (one wait, one release per
// warpgroup) and of the K / V rings (one release per warpgroup per slot), the named barriers
// ATTN_BAR_SCHED0/1. Shares: the rings with the load, the kv-block sequence (kl_load_kv_count / kl_load_kv_block), the accumulators with the
// epilogue (kl_epilogue), the callables' signatures (attn_abi.cuh).
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"

#ifndef KL_ATTN_CORE_H  // linked: the struct of core.kc's `params CoreParams`, from kl_attn_core.h (included first)
struct CoreParams {
    int seq_q, seq_k, heads, unused0;
    float scale;       // softmax scale (on q.k)
    float scale_log2;  // scale * log2(e)
    float unused1, unused2;
};
#endif

namespace attn {

template <int D>
__device__ __forceinline__ void wgmma_pv(float (&o)[D / 2], const uint32_t (&a)[4], uint64_t desc_v) {
    if constexpr (D == 128) {
        wgmma_rs_m64n128k16(o, a, desc_v, 1u);
    } else {
        wgmma_rs_m64n64k16(o, a, desc_v, 1u);
    }
}

// kp: the kernel's parameter block (the callables find their own blocks in it).
__device__ __forceinline__ void attn_core_main(const CoreParams& cp, void* kp, Tile t, Smem s, const int wg) {
    const int tw = threadIdx.x & 127;
    const int warp = tw >> 5, lane = tw & 31;
    const bool leader = tw == 0;
    const int row0 = t.m0 + 64 * wg + 16 * warp + (lane >> 2);  // this thread's rows: row0, row0 + 8
    const int col0 = 2 * (lane & 3);                             // its columns: 8 c + col0 + {0, 1}
    const unsigned turn_mine = ATTN_TURN(wg, ATTN_BAR_SCHED0, ATTN_BAR_SCHED1);
    const unsigned turn_other = ATTN_TURN(wg, ATTN_BAR_SCHED1, ATTN_BAR_SCHED0);
    const float c2 = cp.scale_log2;
    const float neg_inf = -__int_as_float(0x7f800000);

    float o[kD / 2];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) {
        o[i] = 0.0f;
    }
    float sc[kBlockN / 2];  // S, then P in f32 (rows row0 / row0 + 8 at [4 c + {0,1}] / [4 c + {2,3}])
    // P as bf16 pairs, the A operand of the PV wgmma: two buffers, P_i packed into the one that the
    // in-flight PV_{i-1} does not read
    uint32_t pa[kBlockN / 4], pb[kBlockN / 4];
    float m[2] = {neg_inf, neg_inf};
    float l[2] = {0.0f, 0.0f};

    const uint64_t dq = desc_k_sw128(s.q + 8192u * wg);
    auto issue_qk = [&](unsigned slot) {
        const uint64_t dk = desc_k_sw128(s.k + slot * s.k_stride);
#pragma unroll
        for (int sub = 0; sub < kSubs; ++sub) {
#pragma unroll
            for (int ks = 0; ks < 4; ++ks) {
                const uint64_t step = (sub * kSubBytes >> 4) + 2u * ks;
                wgmma_ss_m64n128k16(sc, dq + step, dk + step, (sub | ks) != 0 ? 1u : 0u);
            }
        }
    };
    auto issue_pv = [&](unsigned slot, const uint32_t (&pr)[kBlockN / 4]) {
        #ifdef ATTN_VDESC_SWAP  // diagnostic build: leading and stride byte offsets exchanged
        const uint64_t dv = desc_mn_sw128(s.v + slot * s.v_stride, 1024u) + (static_cast<uint64_t>(kSubBytes >> 4) << 32) -
                            (64ull << 32);
#else
        const uint64_t dv = desc_mn_sw128(s.v + slot * s.v_stride, kSubBytes);
#endif
#pragma unroll
        for (int j = 0; j < kBlockN / 16; ++j) {
            const uint32_t a[4] = {pr[4 * j], pr[4 * j + 1], pr[4 * j + 2], pr[4 * j + 3]};
            wgmma_pv<kD>(o, a, dv + (2048u >> 4) * j);
        }
    };
    // score callable, mask callable, online softmax on sc (block n_block); so = O's rescale.
    auto softmax = [&](int n_block, float (&so)[2]) {
        const int n0 = n_block * kBlockN;
#pragma unroll
        for (int c = 0; c < kBlockN / 8; ++c) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                sc[4 * c + e] = kl_score(kp, sc[4 * c + e], t.b, t.h, row0 + 8 * (e >> 1), n0 + 8 * c + col0 + (e & 1));
            }
        }
        const int q_lo = t.m0 + 64 * wg;
        const bool full = n0 + kBlockN <= cp.seq_k && kl_mask_block_full(kp, q_lo, q_lo + 64, n0, n0 + kBlockN);
        if (!full) {
#pragma unroll
            for (int c = 0; c < kBlockN / 8; ++c) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int q = row0 + 8 * (e >> 1), kv = n0 + 8 * c + col0 + (e & 1);
                    const bool keep = kv < cp.seq_k && kl_mask(kp, q, kv);
                    sc[4 * c + e] = keep ? sc[4 * c + e] : neg_inf;
                }
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[h];
#pragma unroll
            for (int c = 0; c < kBlockN / 8; ++c) {
                mx = fmaxf(mx, fmaxf(sc[4 * c + 2 * h], sc[4 * c + 2 * h + 1]));
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float msc = (mx == neg_inf ? 0.0f : mx) * c2;
            so[h] = ex2(fmaf(m[h], c2, -msc));
            m[h] = mx;
            float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
            for (int c = 0; c < kBlockN / 8; ++c) {
                const float p0 = ex2(fmaf(sc[4 * c + 2 * h], c2, -msc));
                const float p1 = ex2(fmaf(sc[4 * c + 2 * h + 1], c2, -msc));
                sc[4 * c + 2 * h] = p0;
                sc[4 * c + 2 * h + 1] = p1;
                sum0 += p0;
                sum1 += p1;
            }
            l[h] = fmaf(l[h], so[h], sum0 + sum1);
        }
    };
    auto to_p = [&](uint32_t (&pr)[kBlockN / 4]) {
#pragma unroll
        for (int i = 0; i < kBlockN / 4; ++i) {
            pr[i] = pack_bf16(sc[2 * i], sc[2 * i + 1]);
        }
    };
    auto rescale = [&](const float (&so)[2]) {
#pragma unroll
        for (int c = 0; c < kD / 8; ++c) {
            o[4 * c] *= so[0];
            o[4 * c + 1] *= so[0];
            o[4 * c + 2] *= so[1];
            o[4 * c + 3] *= so[1];
        }
    };

    const int n = kl_load_kv_count(kp, &t);
    RingPos kpos(s.k_depth), vpos(s.v_depth);
    float so[2];
    // Q landed (also when n == 0: the epilogue then reuses Q's storage, which the copy must
    // have finished writing).
    mbar_wait(s.q_full, 0);
    if (n > 0) {
        // (P3) phase 0: S_0 alone. Warpgroup 0 takes the first turn without waiting.
        int nb = kl_load_kv_block(kp, &t, 0);
        mbar_wait(s.k_full + 8u * kpos.slot, kpos.phase);
        if (wg == 1) {
            named_sync(turn_mine, 256);
        }
        fence_regs(o);
        wgmma_fence();
        issue_qk(kpos.slot);
        wgmma_commit();
        named_arrive(turn_other, 256);
        wgmma_wait<0>();
        fence_regs(sc);
        if (leader) {
            mbar_arrive(s.k_empty + 8u * kpos.slot);
        }
        kpos.advance();
        softmax(nb, so);
        to_p(pa);
        // phase i of 1 .. n - 1: S_i and O += P_{i-1} V_{i-1} (P_{i-1} in p_use), softmax(S_i) under
        // the PV wgmma, P_i packed into p_fill (read last by PV_{i-2}, retired in phase i - 1)
        auto step = [&](int i, uint32_t (&p_use)[kBlockN / 4], uint32_t (&p_fill)[kBlockN / 4]) {
            nb = kl_load_kv_block(kp, &t, i);
            mbar_wait(s.k_full + 8u * kpos.slot, kpos.phase);
            named_sync(turn_mine, 256);
            fence_regs(sc);
            fence_regs(p_use);
            fence_regs(o);
            wgmma_fence();
            issue_qk(kpos.slot);
            wgmma_commit();
            mbar_wait(s.v_full + 8u * vpos.slot, vpos.phase);
            wgmma_fence();  // after the wait's branch (else ptxas injects this fence itself, C7519)
            issue_pv(vpos.slot, p_use);
            wgmma_commit();
            named_arrive(turn_other, 256);
            wgmma_wait<1>();
            fence_regs(sc);
            softmax(nb, so);
            to_p(p_fill);
            // K_i's slot is released after the softmax, at an address that reads the softmax's last
            // row sum through `zero` (l[1] * 0 is 0, -0 or NaN, and each converts to 0): ptxas keeps
            // the PV wait below this arrive, so the softmax runs under the PV wgmma. Released right
            // after wait_group 1, or after the softmax without the dependence, the arrive and the wait
            // were hoisted above the softmax (ptxas interleaved the work that follows the wait, then
            // P's packing, with the exponentials). The guard stays `leader`, which L-CONFORM counts.
            if (leader) {
                const unsigned zero = static_cast<unsigned>(f2i_rz(l[1] * 0.0f));
                mbar_arrive(s.k_empty + 8u * (kpos.slot + zero));
            }
            kpos.advance();
            wgmma_wait<0>();
            fence_regs(o);
            fence_regs(p_use);
            if (leader) {
                mbar_arrive(s.v_empty + 8u * vpos.slot);
            }
            vpos.advance();
            rescale(so);
        };
        // phase n: O += P_{n-1} V_{n-1}. Warpgroup 1 hands no turn over after its last phase
        // (every bar.arrive then meets exactly one bar.sync).
        auto last = [&](uint32_t (&p_use)[kBlockN / 4]) {
            named_sync(turn_mine, 256);
            mbar_wait(s.v_full + 8u * vpos.slot, vpos.phase);
            fence_regs(p_use);
            fence_regs(o);
            wgmma_fence();
            issue_pv(vpos.slot, p_use);
            wgmma_commit();
            if (wg == 0) {
                named_arrive(turn_other, 256);
            }
            wgmma_wait<0>();
            fence_regs(o);
            fence_regs(p_use);
            if (leader) {
                mbar_arrive(s.v_empty + 8u * vpos.slot);
            }
        };
        for (int i = 1; i < n; i += 2) {
            step(i, pa, pb);
            if (i + 1 >= n) {
                break;
            }
            step(i + 1, pb, pa);
        }
        // P_{n-1} is in pb when n - 1 is odd: one copy into pa, so that the last phase is one code
        // path (conformance counts the turn barrier's uses per pass of the code, not per branch)
        if (((n - 1) & 1) != 0) {
#pragma unroll
            for (int j = 0; j < kBlockN / 4; ++j) {
                pa[j] = pb[j];
            }
        }
        last(pa);
    }
    // every wgmma of this warpgroup retired: it reads Q no more (the epilogue stages O there)
    if (leader) {
        mbar_arrive(s.q_empty);
    }
    kl_epilogue(kp, &t, s.q, wg, cp.seq_q, o, m, l, cp.scale);
}

}  // namespace attn
