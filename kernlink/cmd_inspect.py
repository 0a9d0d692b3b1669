"""`kernlink inspect PACKAGE`: show a package's manifest, captured symbols and layouts, payloads, and
what the package gives whoever receives it (``discloses``: specs/security.md, "Binary-only packages")."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from diagnostics.model import DiagnosticError
from diagnostics.sources import SourceMap
from kernlink.exit_codes import EXIT_OK
from kernlink.output import color, report

if TYPE_CHECKING:
    from contract_lang import ast as A


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("inspect", help="show a package: manifest, captured symbols and layouts, payloads")
    p.add_argument("package", help="a .kpkg file")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from checker.clauses import l_integrity
    from package.kpkg import read_package
    from package.manifest import stage_package

    try:  # one bounded read; the manifest is validated before the view uses it
        with l_integrity.worded():
            raw = read_package(args.package)
            stage = stage_package(raw, args.package)
        view = inspect_view(args.package, stage.manifest, raw.manifest_sha256, raw.payloads)
    except DiagnosticError as err:
        return report(err.diagnostics, SourceMap(), args)
    if args.format == "json":
        print(json.dumps(view, indent=2, sort_keys=True))
    else:
        _inspect_text(view, color=color(args.color))
    return EXIT_OK


def inspect_view(
    path: str, manifest: Mapping[str, Any], manifest_sha256: str, payloads: Mapping[str, bytes]
) -> dict[str, Any]:
    """What ``inspect`` shows, as plain data: the manifest, classified symbols, payloads, host providers."""
    from checker.handles import call_symbols, required_definitions, resolve_handles
    from contract_lang import ast as A
    from contract_lang.parser import parse_text
    from packing.pack import prototypes_of

    captured = manifest["captured"]
    protos = prototypes_of(manifest)
    stage = parse_text(manifest["contract"], f"{path}!contract.kc", "contract").stages[0]
    handles = resolve_handles(stage, captured["needed"])
    calls = call_symbols(stage)
    required = required_definitions(stage)

    def role(symbol: str, needed: bool) -> str:
        if needed:
            if symbol in calls:
                return f"call `{calls[symbol].name}`"
            spec = handles.get(symbol)
            return f"handle {spec.kind} of `{spec.item}`" if spec else "unexplained"
        what = required.get(symbol)
        return f"{what[0]} of `{getattr(what[1], 'name', '')}`" if what else "other"

    symbols = [
        {
            "symbol": s,
            "direction": d,
            "prototype": str(protos[s]) if s in protos else "",
            "meaning": role(s, d == "needed"),
        }
        for d in ("defined", "needed")
        for s in captured["needed" if d == "needed" else "defined"]
    ]
    fields = {k: manifest[k] for k in ("stage", "version", "target", "toolkit", "format", "format_version")}
    payload_names = {p.get("name") for p in manifest["payloads"] if isinstance(p, Mapping)}
    return {
        "package": path,
        "manifest": fields,
        "manifest_sha256": manifest_sha256,
        "compile": manifest.get("compile", {}),
        "contract": manifest["contract"],
        "symbols": symbols,
        "params": captured["params"],
        "payloads": list(manifest["payloads"]),
        "binary_only": "source.cu" not in payload_names,
        "providers": [_provider(p, payloads) for p in stage.items if isinstance(p, A.HostProvider) and p.function],
        "discloses": disclosed(sorted(str(n) for n in payload_names)),
    }


def _provider(provider: A.HostProvider, payloads: Mapping[str, bytes]) -> dict[str, Any]:
    """A called host provider: its payload, hash and C source (None: the package carries no readable source)."""
    from packing.pack import provider_payload

    name = provider_payload(provider)
    data = payloads.get(name)
    source = None
    if data is not None:
        with contextlib.suppress(UnicodeDecodeError):
            source = data.decode("utf-8") if b"\0" not in data else None
    return {
        "file": name,
        "function": provider.function,
        "fills": list(provider.fills),
        "size": None if data is None else len(data),
        "sha256": None if data is None else hashlib.sha256(data).hexdigest(),
        "source": source,
    }


def disclosed(payloads: list[str]) -> list[str]:
    """What a package with these payloads gives whoever receives it, one line per kind of payload.

    A binary-only package (`pack --no-source`) leaves out the CUDA source and its headers, not the
    code: the LTO IR the link needs is lowered to PTX by any nvJitLink (that is how `code.ptx` is
    made), so keeping facts instead of the PTX would hide nothing (specs/security.md).
    """
    from package.manifest import LTO_PAYLOAD, SOURCE_PAYLOAD

    out = [f"`{LTO_PAYLOAD}`: the component's code; nvJitLink (public, on PyPI) lowers it to readable PTX"]
    if "code.ptx" in payloads:
        out.append("`code.ptx`: readable PTX of every function, with the source's file name and line numbers")
    if SOURCE_PAYLOAD in payloads:
        out.append(f"`{SOURCE_PAYLOAD}`: the CUDA source as written")
    headers = [n for n in payloads if n.endswith((".h", ".hpp", ".cuh", ".inc"))]
    if headers:
        out.append(f"{', '.join(f'`{n}`' for n in headers)}: the headers the source includes, as written")
    providers = [n for n in payloads if n.endswith(".c")]
    if providers:
        out.append(f"{', '.join(f'`{n}`' for n in providers)}: host provider C source (compiled on the user's host)")
    out.append("the contract, the captured symbols (with their mangled names) and the params layouts")
    return out


def _inspect_text(view: Mapping[str, Any], *, color: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    view = _escaped(view)  # a crafted manifest must not drive the terminal
    console = Console(force_terminal=color, no_color=color is False, highlight=False)
    if not console.is_terminal:
        console = Console(force_terminal=color, no_color=color is False, highlight=False, width=120)
    head = Table(title=f"package {view['package']}", show_header=False, title_justify="left")
    head.add_column(style="bold")
    head.add_column()
    for key, value in view["manifest"].items():
        head.add_row(key, str(value))
    head.add_row("manifest sha256", view["manifest_sha256"])
    compile_info = view["compile"]
    if compile_info:
        head.add_row("compiler", f"{compile_info.get('compiler', '')} {' '.join(compile_info.get('options', []))}")
        head.add_row(
            "source",
            str(compile_info.get("source", ""))
            + (
                "  (binary-only: the CUDA source is not in the package; its code is, as LTO IR and PTX)"
                if view.get("binary_only")
                else ""
            ),
        )
    console.print(head)
    console.print("gives whoever receives it:", style="bold")
    for line in view["discloses"]:
        console.print(f"  - {line}", markup=False)

    symbols = Table(title="captured symbols", title_justify="left")
    for column in ("symbol", "", "prototype", "meaning"):
        symbols.add_column(column, no_wrap=column == "symbol", overflow="fold")
    for row in view["symbols"]:
        symbols.add_row(row["symbol"], row["direction"], row["prototype"], row["meaning"])
    console.print(symbols)

    for params in view["params"]:
        console.print(f"params {params['name']}: size {params['size']}, align {params['align']}")
        table = Table()
        for column in ("field", "offset", "size"):
            table.add_column(column, justify="left" if column == "field" else "right")
        for name, offset, size in params["fields"]:
            table.add_row(name, str(offset), str(size))
        console.print(table)

    payloads = Table(title="payloads", title_justify="left")
    for column in ("name", "size", "sha256"):
        payloads.add_column(column, justify="right" if column == "size" else "left")
    for entry in view["payloads"]:
        payloads.add_row(entry["name"], str(entry["size"]), entry["sha256"])
    console.print(payloads)
    console.print("contract:", style="bold")
    console.print(view["contract"].rstrip("\n"), markup=False)
    if view["providers"]:
        console.print(
            "host providers: C code that kernel.h and kernlink.Session compile and run before the kernel",
            style="bold",
        )
    for x in view["providers"]:
        fills = ", ".join(x["fills"]) or "nothing"
        console.print(f"provider {x['file']}: fn {x['function']} fills {fills}", markup=False)
        if x["source"] is None:
            what = "absent" if x["size"] is None else f"{x['size']} bytes, sha256 {x['sha256']}"
            console.print(f"  binary-only: the package carries no readable source for it ({what})", markup=False)
            continue
        console.print(f"  sha256 {x['sha256']}; its source:", markup=False)
        console.print(x["source"].rstrip("\n"), markup=False)


def _escaped(value: Any) -> Any:
    """Every string of a view with its control characters escaped, for text output."""
    from diagnostics.escape import escape_controls

    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, Mapping):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    return value
