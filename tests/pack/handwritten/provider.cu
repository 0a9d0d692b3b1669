// hello.provider — a device function other components call (contract: provider.kc).
//
// `export callable scale (f32) -> f32 = hello_scale`: the linker makes a caller's
// trampoline symbol (`kl_call_scale` in hello.caller) call this definition, and
// LTO inlines it into the caller. The provider owns the fact `scale_factor`, so
// it compiles its value in; consumers take the value through their params block.

// owns fact scale_factor: u32 = 3
constexpr unsigned kScaleFactor = 3;

extern "C" __device__ float hello_scale(float x) {
    return x * static_cast<float>(kScaleFactor);
}
