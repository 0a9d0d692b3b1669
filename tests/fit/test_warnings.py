"""Issue 18 item 4: every ptxas/nvJitLink warning about launch bounds, registers or spills is read."""

from __future__ import annotations

import pytest

from toolchain.cuda import compile_nvrtc, link, tool_warnings

LOG = """ptxas warning : Value of threads per SM for entry k is out of range. .minnctapersm will be ignored
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_120a'
ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry
ptxas         .     256 bytes stack frame, 256 bytes spill stores, 300 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
"""


def test_warnings_and_advisories_are_read_in_order() -> None:
    assert tool_warnings(LOG) == (
        "Value of threads per SM for entry k is out of range. .minnctapersm will be ignored",
        "(C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry",
    )
    assert tool_warnings("ptxas info    : Used 8 registers, used 0 barriers\n") == ()


@pytest.mark.toolchain
def test_a_dropped_launch_bound_is_reported_by_the_real_link() -> None:
    # `__launch_bounds__(256, 8)` on sm_120a (1 536 threads per SM): ptxas drops `.minnctapersm`
    src = 'extern "C" __global__ void __launch_bounds__(256, 8) k(float* p) { p[threadIdx.x] += 1.0f; }'
    compiled = compile_nvrtc(src, "k.cu", arch="sm_120a")
    result = link([("k", compiled.ltoir)], arch="sm_120a", kernels=["k"], verbose=True)
    assert any(".minnctapersm will be ignored" in w for w in result.warnings)
    fine = link([("k", compile_nvrtc(src, "k.cu", arch="sm_90a").ltoir)], arch="sm_90a", kernels=["k"], verbose=True)
    assert fine.warnings == ()
