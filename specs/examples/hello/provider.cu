// hello.provider — a device function other components call (contract: provider.kc).
//
// `export callable scale (f32) -> f32 = hello_scale`: the linker makes a caller's
// trampoline symbol (`kl_call_scale` in hello.caller) call this definition, and
// LTO inlines it into the caller. The provider owns the fact `scale_factor`, so
// it compiles its value in; consumers take the value through their params block.

// The export's declaration and the owned fact's value: generated from provider.kc by
// `kernlink header provider.kc -o kl_hello_provider.h`.
#include "kl_hello_provider.h"

// owns fact scale_factor: u32 = 3
constexpr unsigned kScaleFactor = kl_hello_provider_owned_scale_factor;

extern "C" __device__ float hello_scale(float x) {
    return x * static_cast<float>(kScaleFactor);
}
