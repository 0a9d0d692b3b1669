"""`kernlink draft` on small components: each value it decides has a twin it must leave undecided, and the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.draft import values
from contract_lang.parser import parse_file
from kernlink.cli import main

HANDLES = """
extern "C" {
__device__ unsigned kl_t_ring_kv_full_bar();
__device__ unsigned kl_t_ring_kv_empty_bar();
__device__ unsigned kl_t_ring_kv_depth();
__device__ unsigned kl_t_ring_slot_smem();
__device__ unsigned kl_t_ring_slot_stride();
__device__ unsigned kl_t_ring_load_warp0();
}
struct Params { const void* src; unsigned tiles; };
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n\\t"
                     "selp.u32 %0, 1, 0, p;\\n\\t}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}
"""

PRODUCER = (
    HANDLES
    + """
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() != 0) return;
    const unsigned base = sa(smem);
    for (unsigned i = 0; i < params->tiles; ++i) {
        const unsigned slot = i % kl_t_ring_kv_depth();
        wait(base + kl_t_ring_kv_empty_bar() + 8 * slot, 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(base + kl_t_ring_kv_full_bar() + 8 * slot), "r"(BYTES) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(base + kl_t_ring_slot_smem() + kl_t_ring_slot_stride() * slot), "l"(params->src),
                        "r"(BYTES), "r"(base + kl_t_ring_kv_full_bar() + 8 * slot) : "memory");
    }
}
"""
)

CONSUMER = (
    HANDLES
    + """
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned base = sa(smem);
    float sum = 0.f;
    for (unsigned i = 0; i < params->tiles; ++i) {
        const unsigned slot = i % kl_t_ring_kv_depth();
        wait(base + kl_t_ring_kv_full_bar() + 8 * slot, 0);
        const unsigned char* at = smem + kl_t_ring_slot_smem() + kl_t_ring_slot_stride() * slot;
        sum += reinterpret_cast<const float*>(at)[threadIdx.x];
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(base + kl_t_ring_kv_empty_bar() + 8 * slot));
    }
    if (sum == 1234.f) asm volatile("trap;");
}
"""
)


RELEASE = {
    "every thread": "{arrive}",
    "lane 0 of each warp": "if ((threadIdx.x & 31) == 0) {arrive}",
    "one thread": "if (threadIdx.x - 32 * kl_t_ring_load_warp0() == 0) {arrive}",
    "thread 0 of each warpgroup": "if (((threadIdx.x - 32 * kl_t_ring_load_warp0()) % 128) == 0) {arrive}",
}
ARRIVE = 'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(base + kl_t_ring_kv_empty_bar() + 8 * slot));'


def _draft(tmp_path: Path, text: str, *extra: str) -> tuple[int, str]:
    source = tmp_path / "t.cu"
    source.write_text(text)
    out = tmp_path / "t.kc"
    code = main(["draft", str(source), "-o", str(out), *extra])
    return code, out.read_text() if out.exists() else ""


def _values(tmp_path: Path, text: str, *extra: str) -> dict[tuple[str, ...], str]:
    code, _ = _draft(tmp_path, text, *extra)
    assert code == 0
    return values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])


@pytest.mark.toolchain
def test_a_role_that_waits_on_empty_and_fills_full_produces(tmp_path: Path) -> None:
    got = _values(tmp_path, PRODUCER.replace("BYTES", "4096u"))
    assert got[("ring", "kv", "produce", "role")] == "load"
    assert got[("ring", "kv", "produce", "full arrive", "tx")] == "4KiB"
    assert got[("ring", "kv", "produce", "full copy")] == "4KiB"
    assert got[("claim smem", "slot", "bytes")] == "4096"
    assert not any(k[:3] == ("ring", "kv", "consume") for k in got)


@pytest.mark.toolchain
def test_a_role_that_waits_on_full_and_releases_empty_consumes(tmp_path: Path) -> None:
    got = _values(tmp_path, CONSUMER)
    assert got[("ring", "kv", "consume", "role")] == "load"
    assert got[("ring", "kv", "consume", "reads")] == "generic"
    assert got[("ring", "kv", "consume", "full wait")] == "yes"
    assert not any(k[:3] == ("ring", "kv", "produce") for k in got)


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("who", "count"),
    [
        ("every thread", "per_thread(load)"),
        ("lane 0 of each warp", "per_warp(load)"),
        ("one thread", "1"),
        ("thread 0 of each warpgroup", "per_warpgroup(load)"),
    ],
)
def test_the_threads_that_reach_an_arrive_are_its_count(tmp_path: Path, who: str, count: str) -> None:
    assert ARRIVE in CONSUMER
    source = CONSUMER.replace(ARRIVE, RELEASE[who].format(arrive=ARRIVE))
    assert _values(tmp_path, source)[("ring", "kv", "consume", "empty arrive", "count")] == count


@pytest.mark.toolchain
@pytest.mark.parametrize(
    "guard",
    [
        "if ((threadIdx.x & 31) != 0) {arrive}",  # 31 lanes of a warp: no unit of the language
        "if (sum > 0.f) {arrive}",  # a value each thread loaded: who arrives depends on the data
    ],
)
def test_an_arrive_whose_threads_the_code_does_not_decide_is_undecided(tmp_path: Path, guard: str) -> None:
    code, text = _draft(tmp_path, CONSUMER.replace(ARRIVE, guard.format(arrive=ARRIVE)))
    assert code == 0
    assert "# undecided: how many arrive on `kv`'s empty barrier" in text
    assert "empty arrive 1" in text  # the placeholder below the comment


@pytest.mark.toolchain
def test_bytes_the_code_computes_are_undecided(tmp_path: Path) -> None:
    code, text = _draft(tmp_path, PRODUCER.replace("BYTES", "(params->tiles * 16u)"))
    assert code == 0
    assert "# undecided: the bytes of `slot`" in text
    assert "# undecided: the transaction bytes" in text
    assert "claim smem slot per_slot kv use bulk_copy" in text


@pytest.mark.toolchain
def test_the_params_struct_comes_from_the_compiler(tmp_path: Path) -> None:
    got = _values(tmp_path, PRODUCER.replace("BYTES", "4096u"))
    assert got[("params", "Params", "size")] == "16"
    assert got[("params", "Params", "src", "type")] == "ptr"
    assert got[("params", "Params", "tiles", "offset")] == "8"


@pytest.mark.toolchain
def test_the_draft_is_deterministic_and_names_its_ptx(tmp_path: Path) -> None:
    source = tmp_path / "t.cu"
    source.write_text(PRODUCER.replace("BYTES", "4096u"))
    assert main(["draft", str(source), "-o", str(tmp_path / "a.kc"), "--ptx", str(tmp_path / "code.ptx")]) == 0
    assert main(["draft", str(source), "-o", str(tmp_path / "b.kc"), "--stage", "t.ring", "--version", "1.2.0"]) == 0
    first, second = (tmp_path / "a.kc").read_text(), (tmp_path / "b.kc").read_text()
    assert 'stage "t_ring" version "0.0.0"' in first and "# undecided: the stage's name" in first
    assert 'stage "t.ring" version "1.2.0"' in second
    assert "stage's name" not in second and "stage's version" not in second
    ptx = (tmp_path / "code.ptx").read_text().split("\n")
    line = int(first.split("role `load`'s width in warps (code.ptx:")[1].split(")")[0])
    assert "t_load" in ptx[line - 1]
    assert main(["draft", str(source), "-o", str(tmp_path / "c.kc")]) == 0
    assert (tmp_path / "c.kc").read_text() == first


@pytest.mark.toolchain
def test_against_a_contract_that_says_otherwise_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "t.cu"
    source.write_text(PRODUCER.replace("BYTES", "4096u"))
    contract = tmp_path / "hand.kc"
    good = """stage "t.ring" version "1.0.0" {
    target sm_90a
    role load entry t_load warps 1
    claim smem slot bytes 4KiB align 128 per_slot kv use bulk_copy
    ring kv produce by load {
        depth 2..4
        empty wait
        full arrive 1 tx 4KiB
        full copy 4KiB
        writes async
    }
}
"""
    contract.write_text(good)
    assert main(["draft", str(source), "--against", str(contract)]) == 0
    assert "0 disagree" in capsys.readouterr().out
    contract.write_text(good.replace("full copy 4KiB", "full copy 8KiB"))
    assert main(["draft", str(source), "--against", str(contract)]) == 1
    out = capsys.readouterr().out
    assert "ring / kv / produce / full copy: the contract says `8KiB`, the draft `4KiB`" in out


def test_a_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["draft", str(tmp_path / "absent.cu")]) == 2


@pytest.mark.toolchain
def test_a_source_that_does_not_compile_is_rejected_and_writes_nothing(tmp_path: Path) -> None:
    code, text = _draft(tmp_path, 'extern "C" __device__ void f(const int* p, unsigned char* s) { oops; }')
    assert code == 1
    assert text == ""


ONE_UNIT = """
struct Params { const float* x; unsigned n; };
__shared__ __align__(128) float stage_buf[256];
extern "C" __global__ void __launch_bounds__(384, 1) fused(const __grid_constant__ Params p) {
    __shared__ unsigned long long bars[2];
    const unsigned wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        const unsigned at = (unsigned)__cvta_generic_to_shared(bars);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(at), "r"(1));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(at + 8), "r"(2));
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        stage_buf[threadIdx.x] = p.x[threadIdx.x];
        asm volatile("bar.arrive 3, 384;" ::: "memory");
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        asm volatile("bar.sync 3, 384;" ::: "memory");
        if (stage_buf[threadIdx.x - 128] > p.n) asm volatile("trap;");
    }
}
"""


@pytest.mark.toolchain
def test_a_one_unit_kernel_gets_roles_from_its_warp_index_branches(tmp_path: Path) -> None:
    code, text = _draft(tmp_path, ONE_UNIT)
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert got[("role", "wg0", "warps")] == "4" and got[("role", "wg0", "regs")] == "40"
    assert got[("role", "wg1", "warps")] == "8" and got[("role", "wg1", "regs")] == "232"
    assert got[("role", "wg1", "warpgroup")] == "yes"
    assert (got[("launch", "threads")], got[("launch", "blocks_per_sm")]) == ("384", "1")
    assert got[("claim barrier", "bar3", "threads")] == "384"
    assert got[("claim barrier", "bar3", "participant", "wg0")] == got[("claim barrier", "bar3", "participant", "wg1")]
    assert got[("claim smem", "stage_buf", "bytes")] == "1024" and got[("claim smem", "stage_buf", "align")] == "128"
    assert got[("params", "Params", "n", "offset")] == "8"
    assert "# undecided: mbarriers initialised with 1 arrivals" in text
    assert "# undecided: mbarriers initialised with 2 arrivals" in text
    assert "# undecided: the role of threads 0..127 of `fused`" in text


@pytest.mark.toolchain
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_nvcc_drafts_the_same_roles(tmp_path: Path) -> None:
    _, by_nvrtc = _draft(tmp_path, ONE_UNIT)
    _, by_nvcc = _draft(tmp_path, ONE_UNIT, "--compiler", "nvcc")
    roles = [line for line in by_nvrtc.split("\n") if line.strip().startswith(("role ", "launch ", "claim barrier"))]
    assert roles and roles == [
        line for line in by_nvcc.split("\n") if line.strip().startswith(("role ", "launch ", "claim barrier"))
    ]


WGMMA = """
__device__ __forceinline__ unsigned long long desc(const Params* params, unsigned addr) {{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | {high};
}}
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {{
    const unsigned base = sa(smem);
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    for (unsigned i = 0; i < params->tiles; ++i) {{
        const unsigned slot = i % kl_t_ring_kv_depth();
        wait(base + kl_t_ring_kv_full_bar() + 8 * slot, 0);
        const unsigned at = base + kl_t_ring_slot_smem() + kl_t_ring_slot_stride() * slot;
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {{%0, %1, %2, %3}}, %4, %5, 1, 1, 1, 0, 0;"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(desc(params, at)), "l"(desc(params, at + 8192u)));
        asm volatile("wgmma.commit_group.sync.aligned;\\n\\twgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (((threadIdx.x - 32 * kl_t_ring_load_warp0()) & 31) == 0)
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(base + kl_t_ring_kv_empty_bar() + 8 * slot));
    }}
    if (d0 + d1 + d2 + d3 == 1234.f) asm volatile("trap;");
}}
"""


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("high", "uses", "align"),
    [
        # layout type 1 (bits 62..63: 128-byte swizzle), base offset 0, SBO 1024 bytes, LBO 16
        ("((1ull << 62) | (64ull << 32) | (1ull << 16))", "use wgmma, swizzle128", "1024"),
        ("((3ull << 62) | (64ull << 32) | (1ull << 16))", "use wgmma, swizzle32", "256"),
        # the descriptor's high bits come from the params: no swizzle the code shows, no alignment
        ("((unsigned long long)params->tiles << 32)", "use wgmma", None),
    ],
)
def test_a_matrix_descriptor_gives_its_claim_wgmma_its_swizzle_and_alignment(
    tmp_path: Path, high: str, uses: str, align: str | None
) -> None:
    code, text = _draft(tmp_path, HANDLES + WGMMA.format(high=high))
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert f"claim smem slot {'' if align is None else f'align {align} '}per_slot kv {uses}\n" in text
    assert got.get(("claim smem", "slot", "align")) == align
    assert ("# undecided: the alignment of `slot`" in text) == (align is None)


TMA_PRODUCER = (
    HANDLES
    + """
extern "C" __device__ unsigned kl_t_ring_other_smem();
#define TMA "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() != 0) return;
    const unsigned base = sa(smem);
    for (unsigned i = 0; i < params->tiles; ++i) {
        const unsigned slot = i % kl_t_ring_kv_depth();
        const unsigned full = base + kl_t_ring_kv_full_bar() + 8 * slot;
        wait(base + kl_t_ring_kv_empty_bar() + 8 * slot, 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(full), "r"(8192u) : "memory");
        asm volatile(TMA :: "r"(base + kl_t_ring_slot_smem() + kl_t_ring_slot_stride() * slot), "l"(params->src),
                        "r"(0), "r"(i), "r"(full) : "memory");
        asm volatile(TMA :: "r"(base + SECOND), "l"(params->src), "r"(64), "r"(i), "r"(full) : "memory");
    }
}
"""
)


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("second", "nbytes"),
    [
        ("kl_t_ring_slot_smem() + kl_t_ring_slot_stride() * slot + 4096u", "8192"),
        ("kl_t_ring_other_smem()", None),  # a copy into another claim shares the transaction bytes
    ],
)
def test_tensor_copies_that_fill_a_slot_give_its_bytes(tmp_path: Path, second: str, nbytes: str | None) -> None:
    got = _values(tmp_path, TMA_PRODUCER.replace("SECOND", second))
    assert got[("ring", "kv", "produce", "full arrive", "tx")] == "8KiB"
    assert got.get(("claim smem", "slot", "bytes")) == nbytes


MBARRIER_CLAIM = (
    HANDLES
    + """
extern "C" __device__ unsigned kl_t_ring_done_smem();
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned done = sa(smem) + kl_t_ring_done_smem();
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(done), "r"(1));
    STORE
    wait(done, 0);
}
"""
)


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("store", "align"),
    [
        ("", "8"),
        # a generic store too: how wide the accesses need it aligned the draft does not decide
        ('asm volatile("st.shared.u32 [%0], %1;" :: "r"(done), "r"(params->tiles));', None),
    ],
)
def test_a_claim_that_holds_an_mbarrier_uses_it(tmp_path: Path, store: str, align: str | None) -> None:
    got = _values(tmp_path, MBARRIER_CLAIM.replace("STORE", store))
    assert got[("claim smem", "done", "use", "mbarrier")] == "yes"
    assert got.get(("claim smem", "done", "align")) == align


FENCE = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'


@pytest.mark.toolchain
@pytest.mark.parametrize("fenced", [True, False])
def test_a_consumer_that_fences_its_generic_reads_before_the_release_fences(tmp_path: Path, fenced: bool) -> None:
    source = CONSUMER.replace(ARRIVE, (FENCE if fenced else "") + ARRIVE)
    got = _values(tmp_path, source)
    assert (("ring", "kv", "consume", "fence") in got) == fenced


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("guard", "count"),
    [
        # warps 1.. of the role leave first; its first thread releases: one arrival
        ("if (threadIdx.x - 32 * kl_t_ring_load_warp0() == 0) {arrive}", "1"),
        # every thread of the first warp: the bound is no unit of the language
        ("{arrive}", None),
    ],
)
def test_a_bound_on_the_role_index_that_its_first_thread_passes_selects_no_other(
    tmp_path: Path, guard: str, count: str | None
) -> None:
    early = "const unsigned base = sa(smem);"
    source = CONSUMER.replace(early, "if (threadIdx.x - 32 * kl_t_ring_load_warp0() >= 32) return;\n    " + early)
    code, text = _draft(tmp_path, source.replace(ARRIVE, guard.format(arrive=ARRIVE)))
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    if count is None:
        assert "# undecided: how many arrive on `kv`'s empty barrier" in text
    else:
        assert got[("ring", "kv", "consume", "empty arrive", "count")] == count


CALLER = (
    HANDLES
    + """
extern "C" __device__ float kl_call_scale(float x);
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32 * kl_t_ring_load_warp0();
    float* const data = static_cast<float*>(const_cast<void*>(params->src));
    for (unsigned base = blockIdx.x * 128; base < params->tiles; base += gridDim.x * 128) {
        const unsigned i = base + t;
        const float x = i < params->tiles ? data[i] : 0.0f;
        CALL
        if (i < params->tiles) data[i] = y;
    }
}
"""
)


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("call", "together"),
    [
        # the threads that skip the load meet the others again before the call
        ("const float y = kl_call_scale(x);", True),
        ("float y = x; if (t < 16) y = kl_call_scale(x);", False),  # half a warp calls
        ("float y = x; if (x > 0.f) y = kl_call_scale(x);", False),  # who calls depends on the data
    ],
)
def test_a_call_every_thread_makes_together_guarantees_converged_full_warps(
    tmp_path: Path, call: str, together: bool
) -> None:
    got = _values(tmp_path, CALLER.replace("CALL", call))
    assert got[("call", "scale", "caller")] == "role load"
    assert (("call", "scale", "guarantees", "converged") in got) == together
    assert (("call", "scale", "guarantees", "full_warps") in got) == together


EXPORTER = (
    HANDLES
    + """
extern "C" __device__ void kl_t_ring_acc_export(const unsigned* held);
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    unsigned held[4] = {params->tiles, 1u, 2u, 3u};
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() >= 32) {
        kl_t_ring_acc_export(held);  // the other warps export at once
        return;
    }
    EXPORT
}
"""
)
EXPORT = "kl_t_ring_acc_export(held);"


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("export", "once"),
    [
        (EXPORT, True),
        (f"for (unsigned i = 0; i < params->tiles; ++i) {{ held[0] += i; {EXPORT} }}", False),  # once per tile
        (f"{EXPORT} held[0] += 1; {EXPORT}", False),  # twice on one path
    ],
)
def test_an_export_each_run_makes_once_is_generation_once(tmp_path: Path, export: str, once: bool) -> None:
    code, text = _draft(tmp_path, EXPORTER.replace("EXPORT", export))
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert got[("export tensor", "acc", "role")] == "load"
    assert got.get(("export tensor", "acc", "generation")) == ("once" if once else None)
    assert ("# undecided: the generation" in text) != once


TENSOR_MAP = """
struct alignas(64) Map { unsigned long long opaque[16]; };
struct Params { Map map; unsigned n; };
extern "C" __global__ void __launch_bounds__(128, 1) fused(const __grid_constant__ Params p) {
    __shared__ __align__(128) float tile[1024];
    __shared__ unsigned long long bar;
    const unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
    const unsigned at = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0 && p.n) {
        COPY
    }
}
"""
TENSOR_COPY = (
    'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], '
    '[%4];" :: "r"(dst), "l"(&p.map), "r"(0), "r"(0), "r"(at) : "memory");'
)


@pytest.mark.toolchain
@pytest.mark.parametrize("copies", [True, False])
def test_an_inline_tensor_map_field_is_undecided_at_the_first_tensor_copy(tmp_path: Path, copies: bool) -> None:
    """A 128-byte params field the language has no type for yet: the draft names the tensor copy it feeds."""
    code, text = _draft(tmp_path, TENSOR_MAP.replace("COPY", TENSOR_COPY if copies else "tile[0] = p.map.opaque[1];"))
    assert code == 0
    note = next(line for line in text.split("\n") if "the type of field `map`" in line)
    assert ("CUtensorMap" in note) == copies
    assert ("(code.ptx:" in note) == copies


TMEM_MMA = """
extern "C" {
__device__ unsigned kl_t_ring_acc_tmem();
__device__ unsigned kl_t_ring_load_warp0();
}
struct Params { unsigned long long a; unsigned long long b; unsigned idesc; };
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned tmem = kl_t_ring_acc_tmem();
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() != 0) return;
    asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.u32 p, %4, 0;\\n\\t"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\\n\\t}"
                 :: "r"(D), "l"(params->a), "l"(params->b), "r"(IDESC), "r"(1u) : "memory");
}
"""


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("d", "idesc", "columns"),
    [
        # M 128 (bits 24..28: 8), N 128 (bits 17..22: 16), f32 accumulator (bits 4..5: 1), bf16 inputs
        ("tmem", "136316048u", "128"),
        ("tmem", "(136316048u & ~(0x3Fu << 17)) | (8u << 17)", "64"),  # N 64
        ("tmem + 64u", "136316048u", None),  # the accumulator at another column: more than N are used
        ("tmem", "params->idesc", None),  # the descriptor is the host's
        ("tmem", "(136316048u & ~(0x30u)) ", None),  # an f16 accumulator
    ],
)
def test_an_mma_accumulator_at_the_claims_first_column_gives_its_columns(
    tmp_path: Path, d: str, idesc: str, columns: str | None
) -> None:
    text = TMEM_MMA.replace("(D)", f"({d})").replace("(IDESC)", f"({idesc})")
    code, drafted = _draft(tmp_path, text, "--target", "sm_100a")
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert got.get(("claim tmem", "acc", "columns")) == columns
    assert ("# undecided: the tensor-memory columns of `acc`" in drafted) == (columns is None)


#: TMEM_MMA whose role exports the tile, and a second role that runs the MMA (when MMA2 is the MMA).
TMEM_EXPORT = """
extern "C" {
__device__ unsigned kl_t_ring_acc_tmem();
__device__ unsigned kl_t_ring_load_warp0();
__device__ unsigned kl_t_ring_other_warp0();
__device__ void kl_t_ring_out_export(const unsigned int* held);
}
struct Params { unsigned long long a; unsigned long long b; unsigned idesc; };
__device__ __forceinline__ void mma(const Params* params, unsigned d) {
    asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.u32 p, %4, 0;\\n\\t"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\\n\\t}"
                 :: "r"(d), "l"(params->a), "l"(params->b), "r"(136316048u), "r"(1u) : "memory");
}
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned tmem = kl_t_ring_acc_tmem();
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() == 0) { MMA1; }
    kl_t_ring_out_export(nullptr);
}
extern "C" __device__ void t_other(const Params* params, unsigned char* smem) {
    const unsigned tmem = kl_t_ring_acc_tmem();
    if (threadIdx.x - 32 * kl_t_ring_other_warp0() == 0) { MMA2; }
}
"""


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("mma1", "mma2", "placement"),
    [
        # the exporting role runs the one MMA: row m at lane m, column n at column n (M = 128, one CTA)
        ("mma(params, tmem)", "", "tmem(lane: 128, col: 128) -> (m, n) { m = lane; n = col }"),
        # another role runs an MMA into the claim too: whose accumulator the export is, the code does not say
        ("mma(params, tmem)", "mma(params, tmem)", None),
        # the exporting role runs none
        ("", "mma(params, tmem)", None),
    ],
)
def test_an_export_of_the_one_tmem_accumulator_its_role_writes_is_placed_by_the_mma(
    tmp_path: Path, mma1: str, mma2: str, placement: str | None
) -> None:
    text = TMEM_EXPORT.replace("MMA1", mma1).replace("MMA2", mma2)
    code, drafted = _draft(tmp_path, text, "--target", "sm_100a")
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert got.get(("export tensor", "out", "placement")) == placement
    assert ("# undecided: the placement" in drafted) == (placement is None)


#: A role whose claim `done` holds mbarriers: initialised, arrived on and waited on at the addresses USE.
ONE_MBARRIER = """
extern "C" {
__device__ unsigned kl_t_ring_done_smem();
__device__ unsigned kl_t_ring_load_warp0();
}
struct Params { unsigned n; };
__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
extern "C" __device__ void t_load(const Params* params, unsigned char* smem) {
    const unsigned done = shared_address(smem) + kl_t_ring_done_smem();
    const unsigned bar = USE;
    if (threadIdx.x - 32 * kl_t_ring_load_warp0() == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(1u) : "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
    }
    asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n\\t}"
                 ::"r"(bar), "r"(0u) : "memory");
    EXTRA;
}
"""


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("use", "extra", "nbytes"),
    [
        ("done", "", "8"),  # one mbarrier, at the claim's offset 0: an 8-byte object
        ("done + 8u * (params->n & 1u)", "", None),  # a second mbarrier at offset 8: the claim holds more
        # the handle's value also reaches a shared-memory reduction (no load or store): the claim holds more
        ("done", 'asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(done + 8u), "r"(1u) : "memory")', None),
        # or a store
        ("done", 'asm volatile("st.shared.u32 [%0], %1;" ::"r"(done + 8u), "r"(1u) : "memory")', None),
    ],
)
def test_a_claim_reached_only_as_one_mbarrier_at_its_start_is_8_bytes(
    tmp_path: Path, use: str, extra: str, nbytes: str | None
) -> None:
    text = ONE_MBARRIER.replace("USE", use).replace("EXTRA", extra)
    code, drafted = _draft(tmp_path, text)
    assert code == 0
    got = values(parse_file(tmp_path / "t.kc", "contract")[0].stages[0])
    assert got.get(("claim smem", "done", "bytes")) == nbytes
    assert ("# undecided: the bytes of `done`" in drafted) == (nbytes is None)
