# The SwiGLU epilogue of gemm_swiglu as a TileLang stage (contract header: epilogue.kc).
#
# The same computation as ../epilogue.cu: thread t of the role holds row t of the 128 x 128
# accumulator tile, 32 columns per chunk (gate and up interleaved by 16), and writes
# out[m0 + t, n0 + 16 c + q] = bf16(silu(g) * u), g = acc[t, 32 c + q], u = acc[t, 32 c + 16 + q].
# `acc` is the stage's import (`import tensor acc` in epilogue.kc): `kernlink pack` replaces the
# loop that fills `held` from it with the import handle and derives the demand map from the
# loop's index, so the contract states no layout map. The tile a CTA computes is the producer's
# grouped raster (fact raster_m); grid_dim_* and block_idx_* read gridDim and blockIdx (kernlink defines them).
# As in ../epilogue.cu, silu(g) = g / (1 + exp(-g)) uses the fast exponential and division, a row
# inside `rows` writes its whole column range (the grid covers the output's columns exactly:
# `T.assume`, so TileLang's safe-memory pass adds no per-element checks), and each chunk's 16
# outputs leave as two 16-byte stores: the row stride is written as a multiple of 8 elements (ldo
# is one) and every index is a plain expression, so TileLang's vectorizer can prove the alignment.
import tilelang.language as T

TILE_M, TILE_N, CHUNK = 128, 128, 32
OUT = TILE_N // 2  # gate and up -> one output column each


@T.prim_func
def kernel(
    acc: T.Tensor((TILE_M, TILE_N), "float32"),
    out_ptr: T.ptr("bfloat16"),
    ldo: T.int32,
    rows: T.int32,
):
    with T.Kernel(1, threads=TILE_M):
        t = T.get_thread_binding()
        out = T.make_tensor(out_ptr, (rows, (ldo // 8) * 8), "bfloat16")
        held = T.alloc_local((CHUNK,), "float32")
        raster = T.call_extern("int32", "kl_swiglu_tilelang_fact_raster_m")
        tiles_m = T.call_extern("int32", "grid_dim_x")
        tiles_n = T.call_extern("int32", "grid_dim_y")
        block_x = T.call_extern("int32", "block_idx_x")
        pid = block_x + tiles_m * T.call_extern("int32", "block_idx_y")
        group = pid // (raster * tiles_n)
        size = T.min(tiles_m - group * raster, raster)
        in_group = pid - group * raster * tiles_n
        row = (group * raster + in_group % size) * TILE_M + t
        col = (in_group // size) * OUT
        res = T.alloc_local((CHUNK // 2,), "bfloat16")
        for c in T.serial(TILE_N // CHUNK):
            for p in T.serial(CHUNK):
                held[p] = acc[t, c * CHUNK + p]
            if row < rows:
                T.assume(row >= 0 and col >= 0 and col + OUT <= ldo)
                for q in T.serial(CHUNK // 2):
                    res[q] = T.cast(
                        T.call_extern("float32", "__fdividef", held[q], T.float32(1.0) + T.__exp(-held[q]))
                        * held[CHUNK // 2 + q],
                        "bfloat16",
                    )
                for q in T.vectorized(CHUNK // 2):
                    out[row, col + c * (CHUNK // 2) + q] = res[q]
