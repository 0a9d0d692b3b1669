// hello.caller — one warpgroup that scales a buffer in place (contract: caller.kc).
//
// Role `main` (entry `hello_caller_main`, 4 warps) calls the callable `scale`
// through its trampoline `kl_call_scale`, which the linker defines to call the
// serving export (`hello_scale` in hello.provider). Every lane calls it on every
// iteration, so the call site is converged with full warps, as the contract says.
//
// Result, for i < n:  data[i] = scale(data[i]) + factor
// where `factor` is the fact `scale_factor` the linker writes into the params
// (3 from hello.provider), so a host check sees both seams: 3 * x + 3.

// Handles, the trampoline and the params struct: generated from caller.kc by
// `kernlink header caller.kc -o kl_hello_caller.h` (the linker defines them; specs/handles.md).
#include "kl_hello_caller.h"
extern "C" __device__ float kl_call_scale(float x);  // call scale (f32) -> f32 (as in the header)

namespace {
constexpr unsigned kThreads = 128;  // role `main` warps 4
}  // namespace

extern "C" __device__ void hello_caller_main(const CallerParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32 * kl_hello_caller_main_warp0();
    float* const data = static_cast<float*>(params->data);
    const unsigned n = params->n;
    const float offset = static_cast<float>(params->factor);
    for (unsigned base = blockIdx.x * kThreads; base < n; base += gridDim.x * kThreads) {
        const unsigned i = base + t;
        const float x = i < n ? data[i] : 0.0f;
        const float y = kl_call_scale(x);  // all 32 lanes of every warp call together
        if (i < n) {
            // __fadd_rn: once LTO inlines `scale` here, a plain `y + offset` would fuse
            // with its multiply into one FMA; this keeps the result independent of inlining.
            data[i] = __fadd_rn(y, offset);
        }
    }
}
