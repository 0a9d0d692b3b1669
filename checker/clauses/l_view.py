"""L-VIEW: a stage needs a view or caller buffer that the pipeline's caller does not provide.

## What it checks
Communication resources come from the host program that launches the kernel, and
the pipeline states what it provides:

- a stage's `domain "cp" views peer, multicast` needs `caller provides domain "cp"
  views …` listing at least those views, and a buffer's own `views` (`buffer kv …
  symmetric domain "cp" views multicast`) must be provided for its domain too;
- a stage's `buffer NAME bytes N` (symmetric or not) needs `caller provides buffer
  NAME bytes M` with M ≥ N.

A contract checked without a pipeline provides nothing.

## Why it matters
A peer view is a mapping of another GPU's memory (peer access enabled, or the
symmetric heap mapped); a multicast view is a multimem object bound to every GPU of
the domain. The kernel receives their addresses as parameters and dereferences them:
if the host never created the multicast object, the `multimem.st` writes through a
null or stale address and the context is lost. A caller buffer smaller than the
stage's declaration is overrun on the device without any host-side error.

## Example
```kernlink
pipeline "cp" {
    target sm_90a
    use "cp.push" version ^1.0
    caller provides domain "cp" views peer
    caller provides buffer kv_shards bytes 16384KiB
}
stage "cp.push" version "1.0.0" {
    target sm_90a
    role push entry cp_push_main warps 4
    domain "cp" views peer, multicast
    buffer kv_shards bytes 16384KiB symmetric domain "cp" views peer
}
```

## Fix
Extend the host code to provide what the stage needs and state it in the pipeline
(`caller provides domain "cp" views peer, multicast`), or use a stage variant that
needs only what the caller has.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam, size
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code


class ViewClause(Clause):
    code = Code.L_VIEW
    name = "caller-provides"
    summary = "a stage needs a view or caller buffer that the pipeline's caller does not provide"
    category = "communication"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        provided_domains: dict[str, A.ProvidesDomain] = {}
        provided_buffers: dict[str, A.ProvidesBuffer] = {}
        for item in comp.pipeline.items:
            if isinstance(item, A.ProvidesDomain):
                provided_domains.setdefault(item.name, item)
            elif isinstance(item, A.ProvidesBuffer):
                provided_buffers.setdefault(item.name, item)
        for decl in comp.items(A.Domain):
            yield from self._views(
                comp, decl.stage_name, decl.span, decl.item.name, decl.item.views, provided_domains, "needs"
            )
        declared: dict[str, set[str]] = defaultdict(set)
        for decl in comp.items(A.Domain):
            declared[decl.item.name].update(decl.item.views)
        buffers: dict[str, list[Owned[A.Buffer]]] = defaultdict(list)
        for buf in comp.items(A.Buffer):
            buffers[buf.item.name].append(buf)
            # Views the stage's own `domain` line needs are reported on that line; views or domains
            # no `domain` line declares are L-DOMAIN's to report.
            stated = {
                v
                for d in buf.stage.stage.items
                if isinstance(d, A.Domain) and d.name == buf.item.domain
                for v in d.views
            }
            known = declared.get(buf.item.domain or "", set())
            extra = tuple(v for v in buf.item.views if v in known and v not in stated)
            if buf.item.domain is not None and extra:
                yield from self._views(
                    comp,
                    buf.stage_name,
                    buf.span,
                    buf.item.domain,
                    extra,
                    provided_domains,
                    f"maps `{buf.item.name}` with",
                )
        for name, decls in sorted(buffers.items()):
            yield from self._buffer(comp, name, decls, provided_buffers.get(name))

    def _views(
        self,
        comp: Composition,
        stage: str,
        span: Span,
        domain: str,
        views: tuple[str, ...],
        provided: dict[str, A.ProvidesDomain],
        verb: str,
    ) -> Iterator[Diagnostic]:
        given = provided.get(domain)
        have = set(given.views) if given is not None else set()
        missing = [v for v in views if v not in have]
        if not missing:
            return
        wanted = ", ".join(dict.fromkeys((*(given.views if given else ()), *views)))
        listed = ", ".join(f"`{v}`" for v in missing)
        if given is None:
            message = (
                f'`{stage}` {verb} domain `"{domain}"`, which the caller of pipeline '
                f"`{comp.pipeline.name}` does not provide"
            )
            secondary: list[tuple[Span, str]] = []
        else:
            message = (
                f"`{stage}` {verb} view{'s' if len(missing) > 1 else ''} {listed} of domain "
                f'`"{domain}"`, which the caller does not provide'
            )
            secondary = [(given.span, f"provides only `{', '.join(given.views)}`")]
        yield seam(
            self.code,
            message,
            (span, f"needs {', '.join(f'`{v}`' for v in views)}"),
            secondary,
            notes=(
                "views are created by the host (peer access, the symmetric heap, multicast objects) and "
                "passed to the kernel; the pipeline states what its caller creates",
            ),
            helps=(f'provide it and state so in the pipeline: `caller provides domain "{domain}" views {wanted}`',),
            data={"stage": stage, "domain": domain, "missing": ",".join(missing), "absent": "caller"},
        )

    def _buffer(
        self, comp: Composition, name: str, decls: list[Owned[A.Buffer]], given: A.ProvidesBuffer | None
    ) -> Iterator[Diagnostic]:
        largest = max(decls, key=lambda d: d.item.bytes)
        need = largest.item.bytes
        if given is not None and given.bytes >= need:
            return
        others = [(d.span, f"`{d.stage_name}` needs {size(d.item.bytes)} too") for d in decls if d is not largest]
        if given is None:
            yield seam(
                self.code,
                f"`{largest.stage_name}` needs caller buffer `{name}`, which pipeline "
                f"`{comp.pipeline.name}` does not provide",
                (largest.span, f"needs {size(need)}"),
                others,
                notes=("buffers are allocated by the host and passed to the kernel as parameters",),
                helps=(
                    f"allocate it on the host and add `caller provides buffer {name} bytes {size(need, '')}` "
                    "to the pipeline",
                ),
                data={"buffer": name, "needed": need, "provided": 0, "absent": "caller"},
            )
        else:
            yield seam(
                self.code,
                f"`{largest.stage_name}` needs {size(need)} of caller buffer `{name}`, but the "
                f"caller provides {size(given.bytes)}",
                (largest.span, f"needs {size(need)}"),
                [(given.span, f"provides {size(given.bytes)}"), *others],
                notes=(f"the stage may write {size(need - given.bytes)} past the end of the allocation",),
                helps=(
                    f"allocate at least {size(need)} and write `caller provides buffer {name} bytes {size(need, '')}`",
                ),
                data={"buffer": name, "needed": need, "provided": given.bytes},
            )
