"""SMT-LIB text terms with the operators of Z3's Python API, for models built in bulk.

Building tens of thousands of terms through Z3's Python API costs far more than Z3's
parser: a model written with these terms is collected as SMT-LIB text and parsed once
(:class:`Script`). A :class:`Term` is the text of one expression; Python ``int`` and
``bool`` operands become numerals and ``true``/``false``. Symbols are always quoted
(``|step:load#0|``), so any name without ``|`` or ``\\`` is a symbol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import z3


class Term:
    """One SMT-LIB expression (its text); comparisons and arithmetic build larger ones."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Term({self.text!r})"

    def __eq__(self, other: object) -> Term:  # type: ignore[override]
        return Term(f"(= {self.text} {lit(other)})")

    def __ne__(self, other: object) -> Term:  # type: ignore[override]
        return Term(f"(not (= {self.text} {lit(other)}))")

    def __lt__(self, other: Operand) -> Term:
        return Term(f"(< {self.text} {lit(other)})")

    def __le__(self, other: Operand) -> Term:
        return Term(f"(<= {self.text} {lit(other)})")

    def __gt__(self, other: Operand) -> Term:
        return Term(f"(> {self.text} {lit(other)})")

    def __ge__(self, other: Operand) -> Term:
        return Term(f"(>= {self.text} {lit(other)})")

    def __add__(self, other: Operand) -> Term:
        return Term(f"(+ {self.text} {lit(other)})")

    def __radd__(self, other: Operand) -> Term:
        return Term(f"(+ {lit(other)} {self.text})")

    def __sub__(self, other: Operand) -> Term:
        return Term(f"(- {self.text} {lit(other)})")

    def __rsub__(self, other: Operand) -> Term:
        return Term(f"(- {lit(other)} {self.text})")

    def __mul__(self, other: Operand) -> Term:
        return Term(f"(* {self.text} {lit(other)})")

    def __rmul__(self, other: Operand) -> Term:
        return Term(f"(* {lit(other)} {self.text})")

    def __mod__(self, other: Operand) -> Term:
        return Term(f"(mod {self.text} {lit(other)})")

    __hash__ = None  # type: ignore[assignment]


Operand = Term | int | bool


def lit(value: object) -> str:
    """The text of an operand: a term's own, a numeral, ``true`` or ``false``."""
    if isinstance(value, Term):
        return value.text
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value) if value >= 0 else f"(- {-value})"
    raise TypeError(f"not an SMT-LIB operand: {value!r}")


def symbol(name: str) -> Term:
    return Term(f"|{name}|")


TRUE = Term("true")
FALSE = Term("false")


def Val(value: Operand) -> Term:  # the z3 names (IntVal, And, …), so encodings read the same
    return Term(lit(value))


def _nary(op: str, args: Sequence[Operand], empty: Term) -> Term:
    if not args:
        return empty
    if len(args) == 1:
        return Val(args[0])
    return Term(f"({op} {' '.join(lit(a) for a in args)})")


def And(*args: Operand) -> Term:
    return _nary("and", args, TRUE)


def Or(*args: Operand) -> Term:
    return _nary("or", args, FALSE)


def Sum(args: Iterable[Operand]) -> Term:
    return _nary("+", list(args), Term("0"))


def Not(arg: Operand) -> Term:
    return Term(f"(not {lit(arg)})")


def Implies(a: Operand, b: Operand) -> Term:
    return Term(f"(=> {lit(a)} {lit(b)})")


def If(c: Operand, a: Operand, b: Operand) -> Term:
    return Term(f"(ite {lit(c)} {lit(a)} {lit(b)})")


def Xor(a: Operand, b: Operand) -> Term:
    return Term(f"(xor {lit(a)} {lit(b)})")


class Script:
    """Declarations and assertions collected as text, parsed into Z3 solvers in bulk.

    ``int``/``bool`` declare a constant (once) and return its term; ``handle`` gives the
    Z3 expression of a declared constant (for assumptions and models); ``flush`` parses
    the assertions given into a solver, with the declarations that solver has not seen
    (a solver keeps the symbols of its earlier parses; a symbol declared into two
    solvers of one context is one constant).
    """

    def __init__(self, ctx: z3.Context) -> None:
        self.ctx = ctx
        self.sorts: dict[str, str] = {}
        self._decls: list[str] = []
        self._handles: dict[str, z3.ExprRef] = {}
        self._seen: dict[int, int] = {}

    def declare(self, name: str, sort: str) -> Term:
        if name not in self.sorts:
            self.sorts[name] = sort
            self._decls.append(f"(declare-fun |{name}| () {sort})")
        return symbol(name)

    def int(self, name: str) -> Term:
        return self.declare(name, "Int")

    def bool(self, name: str) -> Term:
        return self.declare(name, "Bool")

    def handle(self, name: str) -> z3.ExprRef:
        """The Z3 constant ``name`` (declared before)."""
        found = self._handles.get(name)
        if found is None:
            make = z3.Int if self.sorts[name] == "Int" else z3.Bool
            found = self._handles[name] = make(name, self.ctx)
        return found

    def parse(self, solver: z3.Solver, assertions: Sequence[str]) -> None:
        """Add ``assertions`` (texts of Boolean terms) to ``solver``."""
        if assertions:
            seen = self._seen.get(id(solver), 0)
            self._seen[id(solver)] = len(self._decls)
            body = "\n".join(f"(assert {a})" for a in assertions)
            solver.from_string("\n".join(self._decls[seen:]) + "\n" + body)
