# A Triton stage: out[i] = silu(gate[i]) * up[i] over n f32 elements, 1024 per block (contract
# header: silu_mul.kc). `kernlink pack silu_mul.py --contract silu_mul.kc` compiles it with Triton's
# compiler for sm_90a (no GPU needed) and makes its PTX a role entry (linker/frontends/triton.py).
import triton
import triton.language as tl


@triton.jit
def kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    gate = tl.load(gate_ptr + offsets, mask=mask)
    up = tl.load(up_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, gate * tl.sigmoid(gate) * up, mask=mask)


SIGNATURE = {"gate_ptr": "*fp32", "up_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": 1024}
NUM_WARPS = 4
