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

// Handles and trampolines: declared here, defined by the linker (specs/handles.md).
extern "C" __device__ unsigned kl_hello_caller_main_warp0();  // first warp of role `main`
extern "C" __device__ float kl_call_scale(float x);           // call scale (f32) -> f32

// params CallerParams size 24 align 8
struct CallerParams {
    float* data;                  // @ 0
    unsigned n;                   // @ 8
    unsigned factor;              // @ 12 = fact scale_factor
};

namespace {
constexpr unsigned kThreads = 128;  // role `main` warps 4
}  // namespace

extern "C" __device__ void hello_caller_main(const CallerParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32 * kl_hello_caller_main_warp0();
    const unsigned n = params->n;
    const float offset = static_cast<float>(params->factor);
    for (unsigned base = blockIdx.x * kThreads; base < n; base += gridDim.x * kThreads) {
        const unsigned i = base + t;
        const float x = i < n ? params->data[i] : 0.0f;
        const float y = kl_call_scale(x);  // all 32 lanes of every warp call together
        if (i < n) {
            // __fadd_rn: once LTO inlines `scale` here, a plain `y + offset` would fuse
            // with its multiply into one FMA; this keeps the result independent of inlining.
            params->data[i] = __fadd_rn(y, offset);
        }
    }
}
