"""One export, two imports (fan-out): both routes link, in an order the link map records.

A producer warp holds a 16x8 `u32` tile in the mma.m16n8 layout and calls its export
handle once; two other stages' warps each import it through shared-memory staging, each
through the scratch it lends (one whole, one chunked). The export handle runs the two
routes in import order, each on its own named barriers; the map says which runs first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlink.api import check, link
from packing.pack import pack

PLACEMENT = """m = t / 4 + 8 * (r / 2)
            n = 2 * (t % 4) + r % 2"""
PRODUCER_KC = f"""stage "fan.prod" version "1.0.0" {{
    target sm_90a
    role mma entry fan_prod_main warps 1
    launch fixed threads THREADS
    params OutParams size 8 align 8 {{
        out: ptr @ 0
    }}
    export tensor tile from role mma {{
        elem u32
        tile m 16 n 8
        generation once
        placement regs(t: 32, r: 4) -> (m, n) {{
            {PLACEMENT}
        }}
        ready event got.ready
    }}
}}
"""
PRODUCER_CU = """extern "C" __device__ unsigned kl_fan_prod_mma_warp0();
extern "C" __device__ void kl_fan_prod_tile_export(const unsigned* held);
struct OutParams { unsigned* out; };
extern "C" __device__ void fan_prod_main(const OutParams* /*params*/, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32u * kl_fan_prod_mma_warp0();
    unsigned held[4];
    for (unsigned r = 0; r < 4; ++r) {
        held[r] = (t / 4 + 8 * (r / 2)) * 8 + 2 * (t % 4) + r % 2;
    }
    kl_fan_prod_tile_export(held);
}
"""
CONSUMER_KC = """stage "fan.{name}" version "1.0.0" {{
    target sm_90a
    role {role} entry fan_{name}_main warps 1
    launch fixed threads THREADS
    params OutParams size 8 align 8 {{
        out: ptr @ 0
    }}
    claim smem scratch bytes {scratch} align 16 lifetime {lifetime}
    import tensor {event} from tile into role {role} {{
        elem u32
        tile m 16 n 8{chunk}
        demand regs({params}) -> (m, n) {{
            {demand}
        }}
        lends smem scratch
        done event {event}.done
    }}
}}
"""
CONSUMER_CU = """extern "C" __device__ unsigned kl_fan_{name}_{role}_warp0();
extern "C" __device__ void kl_fan_{name}_{event}_import(const unsigned* held, unsigned* dst, int chunk);
struct OutParams {{ unsigned* out; }};
extern "C" __device__ void fan_{name}_main(const OutParams* params, unsigned char* /*smem*/) {{
    const unsigned t = threadIdx.x - 32u * kl_fan_{name}_{role}_warp0();
    for (int c = 0; c < {chunks}; ++c) {{
        unsigned dst[{regs}];
        kl_fan_{name}_{event}_import(nullptr, dst, c);
        for (unsigned j = 0; j < {regs}; ++j) params->out[(t * {chunks} + c) * {regs} + j] = dst[j];
    }}
}}
"""
CONSUMERS = {
    "rows": dict(
        role="epi",
        event="got",
        scratch=512,
        lifetime="between got.ready got.done",
        chunk="",
        params="t: 32, r: 4",
        chunks=1,
        regs=4,
        demand="m = t / 2\n            n = 4 * (t % 2) + r",
    ),
    # the export's one ready event is `got.ready`: this connection's scratch lives until its own done
    "cols": dict(
        role="stat",
        event="seen",
        scratch=256,
        lifetime="until seen.done",
        chunk="\n        chunk n 4",
        params="t: 32, p: 2, c: 2",
        chunks=2,
        regs=2,
        demand="m = t / 2\n            n = 4 * c + 2 * (t % 2) + p",
    ),
}


def _build(root: Path, consumers: tuple[str, ...] = ("rows", "cols")) -> Path:
    root.mkdir(parents=True)
    threads = str(32 * (1 + len(consumers)))
    files = {"prod": (PRODUCER_KC.replace("THREADS", threads), PRODUCER_CU)}
    for name in consumers:
        c = {**CONSUMERS[name], "name": name}
        files[name] = (CONSUMER_KC.format(**c).replace("THREADS", threads), CONSUMER_CU.format(**c))
    uses = []
    for name, (kc, cu) in files.items():
        (root / f"{name}.kc").write_text(kc)
        (root / f"{name}.cu").write_text(cu)
        pack(root / f"{name}.cu", root / f"{name}.kc", root / "build" / f"{name}.kpkg")
        uses.append(f'    use "fan.{name}" version ^1.0 from "build/{name}.kpkg"')
    (root / "fan.kp").write_text("\n".join(['pipeline "fan" {', "    target sm_90a", *uses, "}", ""]))
    return root / "fan.kp"


@pytest.mark.toolchain
def test_one_export_feeds_two_imports_in_import_order(tmp_path: Path) -> None:
    result = link([_build(tmp_path / "src")], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    first, second = result.output.generated.transfers
    assert (first.import_stage, first.order, first.routes) == ("fan.rows", 1, 2)
    assert (second.import_stage, second.order, second.routes) == ("fan.cols", 2, 2)
    assert (first.route_symbol, second.route_symbol) == (
        "kl_fan_prod_tile_export__to_fan_rows_got",
        "kl_fan_prod_tile_export__to_fan_cols_seen",
    )
    assert len(first.barrier_ids) == 1 and len(second.barrier_ids) == 2
    assert not set(first.barrier_ids) & set(second.barrier_ids)  # each route on its own barriers
    source = result.output.generated.source
    fan = (
        'extern "C" __device__ void kl_fan_prod_tile_export(const unsigned int* held) {\n'
        "    kl_fan_prod_tile_export__to_fan_rows_got(held);  // route 1: fan.prod.tile -> fan.rows.got\n"
        "    kl_fan_prod_tile_export__to_fan_cols_seen(held);  // route 2: fan.prod.tile -> fan.cols.seen\n}"
    )
    assert fan in source
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert not re.search(r"\bcall(\.uni)?\b", ptx)
    text = (tmp_path / "out" / "link.map").read_text()
    assert "route 1 of 2 of export `tile`" in text and "route 2 of 2 of export `tile`" in text


@pytest.mark.toolchain
def test_one_import_alone_keeps_the_export_handle_as_its_route(tmp_path: Path) -> None:
    result = link([_build(tmp_path / "src", ("rows",))], tmp_path / "out")
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    [only] = result.output.generated.transfers
    assert (only.order, only.routes, only.route_symbol) == (1, 1, "kl_fan_prod_tile_export")
    assert "__to_" not in result.output.generated.source


def test_the_fan_out_composition_checks(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "prod.kc").write_text(PRODUCER_KC.replace("THREADS", "96"))
    for name in CONSUMERS:
        (root / f"{name}.kc").write_text(CONSUMER_KC.format(**CONSUMERS[name], name=name).replace("THREADS", "96"))
    result = check([root / "prod.kc", root / "rows.kc", root / "cols.kc"])
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]
