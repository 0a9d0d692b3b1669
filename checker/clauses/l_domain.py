"""L-DOMAIN: owners of a symmetric allocation disagree on its domain, size or views.

## What it checks
A symmetric buffer (`buffer kv_shards bytes 16384KiB symmetric domain "cp" views
peer`) is one allocation made at the same offset on every GPU of its communication
domain. Every stage that declares it must declare it alike: symmetric, in the same
`domain`, with the same size and the same views. The buffer's domain must be one that
some stage declares with a `domain "NAME" views …` line, and the views the buffer
uses must be among those that domain's lines state. A symmetric buffer must name its
domain.

## Why it matters
Symmetric memory is addressed by offset: a stage pushing into a peer's copy of
`kv_shards` computes the remote address from its own declaration. If one owner sized
it 16 MiB and the other 8 MiB, or placed it in another domain (another set of GPUs,
another symmetric heap), the push writes past the peer's allocation or to a GPU that
never reads it — memory corruption on another device, with no error on this one.

## Example
```kernlink
pipeline "cp" {
    target sm_90a
    use "cp.push" version ^1.0
    use "cp.load" version ^1.0
    caller provides domain "cp" views peer
    caller provides buffer kv_shards bytes 16384KiB
}
stage "cp.push" version "1.0.0" {
    target sm_90a
    role push entry cp_push_main warps 4
    domain "cp" views peer
    buffer kv_shards bytes 16384KiB symmetric domain "cp" views peer
}
stage "cp.load" version "1.0.0" {
    target sm_90a
    role load entry cp_load_main warps 4
    domain "cp" views peer
    buffer kv_shards bytes 8192KiB symmetric domain "cp" views peer
}
```

## Fix
Declare the symmetric buffer identically in every stage that uses it — ideally
from one shared header the communication team publishes — and declare its domain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam, size
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code


class DomainClause(Clause):
    code = Code.L_DOMAIN
    name = "symmetric-allocation"
    summary = "owners of a symmetric allocation disagree on its domain, size or views"
    category = "communication"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        domains: dict[str, set[str]] = defaultdict(set)
        for decl in comp.items(A.Domain):
            domains[decl.item.name].update(decl.item.views)
        buffers: dict[str, list[Owned[A.Buffer]]] = defaultdict(list)
        for buf in comp.items(A.Buffer):
            buffers[buf.item.name].append(buf)
        for name, decls in sorted(buffers.items()):
            if not any(d.item.symmetric for d in decls):
                continue
            first = next(d for d in decls if d.item.symmetric)
            for other in decls:
                if other is not first:
                    yield from self._compare(name, first, other)
            yield from self._domain(name, first, domains)

    def _compare(self, name: str, first: Owned[A.Buffer], other: Owned[A.Buffer]) -> Iterator[Diagnostic]:
        a, b = first.item, other.item
        pairs = (
            ("symmetric", _sym(a), _sym(b)),
            ("domain", _dom(a.domain), _dom(b.domain)),
            ("size", size(a.bytes), size(b.bytes)),
            ("views", _views(a.views), _views(b.views)),
        )
        for what, mine, theirs in pairs:
            if mine == theirs:
                continue
            said = (
                f"{theirs} by `{other.stage_name}` but {mine} by `{first.stage_name}`"
                if what == "symmetric"
                else f"with {what} {theirs} by `{other.stage_name}` but {mine} by `{first.stage_name}`"
            )
            yield seam(
                self.code,
                f"buffer `{name}` is declared {said}",
                (other.span, theirs if what == "symmetric" else f"{what} {theirs}"),
                [(first.span, mine if what == "symmetric" else f"{what} {mine}")],
                notes=("every GPU of the domain allocates the buffer once, at one offset, from one declaration",),
                helps=(f"declare `{name}` identically in every stage that uses it",),
                data={"buffer": name, "attribute": what, "first": mine, "second": theirs},
            )

    def _domain(self, name: str, buf: Owned[A.Buffer], domains: dict[str, set[str]]) -> Iterator[Diagnostic]:
        domain = buf.item.domain
        if domain is None:
            yield seam(
                self.code,
                f"symmetric buffer `{name}` names no communication domain",
                (buf.span, "no `domain`"),
                notes=("a symmetric allocation exists once per GPU of one domain",),
                helps=(f"add `domain {_q('NAME')}` to `{name}` and a `domain {_q('NAME')} views …` line to the stage",),
                data={"buffer": name},
            )
            return
        if domain not in domains:
            guess = did_you_mean(domain, sorted(domains))
            helps = [f"did you mean `{_q(guess)}`?"] if guess else []
            helps.append(f"add `domain {_q(domain)} views {', '.join(buf.item.views) or 'peer'}` to `{buf.stage_name}`")
            yield seam(
                self.code,
                f"symmetric buffer `{name}` is in domain `{_q(domain)}`, which no stage declares",
                (buf.span, f"domain `{_q(domain)}`"),
                notes=(
                    f"domains declared: {', '.join(f'`{_q(d)}`' for d in sorted(domains))}"
                    if domains
                    else "no stage declares a `domain` line",
                ),
                helps=helps,
                data={"buffer": name, "domain": domain},
            )
            return
        missing = [v for v in buf.item.views if v not in domains[domain]]
        if missing:
            yield seam(
                self.code,
                f"symmetric buffer `{name}` uses {_views(tuple(missing))} of domain `{_q(domain)}`, "
                "which no `domain` line declares",
                (buf.span, f"views {_views(buf.item.views)}"),
                notes=(f"domain `{_q(domain)}` is declared with views {_views(tuple(sorted(domains[domain])))}",),
                helps=(f"add the views to the stage's `domain {_q(domain)}` line",),
                data={"buffer": name, "domain": domain, "missing": ",".join(missing)},
            )


def _sym(buf: A.Buffer) -> str:
    return "symmetric" if buf.symmetric else "not symmetric"


def _q(name: str) -> str:
    return '"' + name + '"'


def _dom(domain: str | None) -> str:
    return f"`{_q(domain)}`" if domain is not None else "(none)"


def _views(views: tuple[str, ...]) -> str:
    return "`" + ", ".join(sorted(set(views))) + "`" if views else "(none)"
