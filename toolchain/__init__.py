"""The CUDA toolchain: NVRTC, nvcc and nvJitLink in isolated workers, PTX symbol reading, cubin reading."""
