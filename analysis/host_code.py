"""`--no-host-code`: a composition whose stages carry host code is refused, one error per provider.

A stage's ``host provider`` is code of its owner that runs on the host: a called one
(``fn``) is C source the package carries and kernel.h and ``kernlink.Session`` compile
and run before the kernel; one without ``fn`` is a host library the caller runs. Under
``--no-host-code`` (``check``, ``link``, ``build``) each is E-HOST-CODE at its line.
"""

from __future__ import annotations

from checker.composition import Composition
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label
from diagnostics.symbols import Code


def host_code_refusals(comp: Composition) -> list[Diagnostic]:
    """E-HOST-CODE for every host provider of every stage, in stage then source order."""
    found = []
    for owned in comp.items(A.HostProvider):
        provider = owned.item
        if provider.function is not None:
            what = f"calls the host provider `{provider.library}` (fn {provider.function})"
            label = "C code that kernel.h and kernlink.Session would compile and run before the kernel"
            trust = "review its source (`kernlink inspect PACKAGE` prints it) and run without --no-host-code"
        else:
            what = f"needs the host library `{provider.library}`"
            label = "host code the caller would have to run"
            trust = f"run without --no-host-code once you trust `{provider.library}`"
        found.append(
            Diagnostic(
                Code.E_HOST_CODE,
                f"`{owned.stage_name}` {what}; --no-host-code refuses host code",
                labels=(Label(provider.span, label),),
                helps=(f"{trust}, or use a version of `{owned.stage_name}` without a host provider",),
                data=(("stage", owned.stage_name), ("provider", provider.library)),
            )
        )
    return found
