import site, sys, time, torch
site.addsitedir("/tmp/fa4site")
import triton.testing as tt
from flash_attn.cute import flash_attn_func
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
for causal in (False, True):
    b, s, h, d = 4, 4096, 16, 128
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    t0 = time.time()
    o = flash_attn_func(q, k, v, causal=causal)
    o = o[0] if isinstance(o, tuple) else o
    torch.cuda.synchronize(); jit = time.time() - t0
    ref = F.scaled_dot_product_attention(q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float(), is_causal=causal).transpose(1, 2)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    ms = tt.do_bench(lambda: flash_attn_func(q, k, v, causal=causal))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        cud = tt.do_bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
    print(f"fa4 causal={causal} jit {jit:.1f}s rel_err {err:.2e} ms {ms:.4f} cudnn {cud:.4f}", flush=True)
