// cute.scale — a CuTe component (contract: scale.kc): data[i] *= 2 for i < n, through a CuTe tensor.
#include <cute/tensor.hpp>

extern "C" __device__ unsigned kl_cute_scale_main_warp0();

struct ScaleParams {
    float* data;
    unsigned n;
};

extern "C" __device__ void cute_scale_main(const ScaleParams* params, unsigned char* /*smem*/) {
    using namespace cute;
    Tensor t = make_tensor(make_gmem_ptr(params->data), make_layout(make_shape(params->n)));
    const unsigned lane = threadIdx.x - 32u * kl_cute_scale_main_warp0();
    for (unsigned i = blockIdx.x * 32u + lane; i < params->n; i += gridDim.x * 32u) {
        t(i) = t(i) * 2.0f;
    }
}
