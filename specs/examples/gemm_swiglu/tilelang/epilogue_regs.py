# The SwiGLU epilogue of gemm_swiglu as a TileLang *callable* over the wgmma accumulator, routed
# straight from registers (contract header: epilogue_regs.kc).
#
# The caller is a wgmma warpgroup (mainloop_regs.kc: the example mainloop's `mma` role,
# once per warpgroup): it passes its 64 x 128 f32 accumulator (`acc`, 64 registers per thread) and
# where the tile's outputs go. `acc` is a register *fragment*: `kernlink pack` turns the loop that
# fills `frag` from it into a copy of the caller's registers, and derives the fragment's layout
# map from the loop's index. That index is TileLang's own: the layout TileLang's wgmma emitter
# gives an m64n128 f32 accumulator (`make_mma_store_layout`), inverted to (register, thread) ->
# (row, column); nothing here restates wgmma's layout.
#
# Gate and up are interleaved in N by 16 (accumulator columns 32c .. 32c + 15 gate, the next 16
# up), so gate register g and up register g + 8 hold the same output element's pair: thread t
# writes out[row0 + m, col0 + 16 (n / 32) + n % 16 + e] = bf16(silu(g) * u) for the gate column
# (m, n) of register g = 4 (4 (b / 2) + b % 2) + 2 h, e < 2 (a 4-byte store of two bf16). As in
# ../epilogue.cu, silu(g) = g / (1 + exp(-g)) with the fast exponential and division; rows at or
# past `rows` are skipped. What the caller guarantees (the example mainloop does): `T.assume` states
# that the tile's 64 output columns lie in the row and start at a multiple of 8 (col0 = 64 n-tile),
# and the row stride is written as a multiple of 8 elements (ldo = N / 2 is one), so that TileLang
# proves each pair's 4-byte alignment.
import tilelang.language as T
from tilelang.cuda.intrinsics.macro.wgmma_macro_generator import TensorCoreIntrinEmitter
from tvm import tirx as tir

ROWS, COLS = 64, 128  # one warpgroup's accumulator: wgmma m64n128k16
REGS = ROWS * COLS // 128
OUT = COLS // 2


def _wgmma_accumulator() -> object:
    """TileLang's wgmma accumulator layout of a ROWS x COLS f32 fragment, as (register, thread) -> (m, n)."""
    emitter = TensorCoreIntrinEmitter(
        a_dtype="bfloat16",
        b_dtype="bfloat16",
        accum_dtype="float32",
        b_transposed=True,
        block_row_warps=4,
        block_col_warps=1,
        warp_row_tiles=16,
        warp_col_tiles=COLS,
        chunk=16,
    )
    fragment = tir.decl_buffer((ROWS, COLS), "float32", scope="local.fragment")
    return emitter.make_mma_store_layout(fragment).inverse()


ELEMENT = _wgmma_accumulator()


def element(t: object, r: object) -> tuple[object, object]:
    """The (row, column) of the accumulator that thread t holds in register r."""
    m, n, _ = ELEMENT.map_forward_index([r, t])
    return m, n


@T.prim_func
def swiglu_regs(
    acc: T.Tensor((ROWS, COLS), "float32"),
    out_ptr: T.ptr("bfloat16"),
    ldo: T.int32,
    rows: T.int32,
    row0: T.int32,
    col0: T.int32,
):
    with T.Kernel(1, threads=128):
        t = T.get_thread_binding()
        out = T.make_tensor(out_ptr, (rows, (ldo // 8) * 8), "bfloat16")
        frag = T.alloc_local((REGS,), "float32")
        for p in T.serial(REGS):
            frag[p] = acc[element(t, p)]
        for b in T.serial(OUT // 8):
            for h in T.serial(2):
                g = 4 * (4 * (b // 2) + b % 2) + 2 * h
                m, n = element(t, g)
                if row0 + m < rows:
                    T.assume(row0 >= 0 and col0 >= 0 and col0 % 8 == 0 and col0 + OUT <= ldo)
                    for e in T.vectorized(2):
                        out[row0 + m, col0 + (n // 32) * 16 + n % 16 + e] = T.cast(
                            T.call_extern("float32", "__fdividef", frag[g + e], T.float32(1.0) + T.__exp(-frag[g + e]))
                            * frag[g + 8 + e],
                            "bfloat16",
                        )
