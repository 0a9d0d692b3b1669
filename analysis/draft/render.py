"""A draft as a contract file: the drafted stage in canonical form, each undecided value a comment.

The stage is printed by the canonical printer, then each :class:`~analysis.draft.model.Undecided`
becomes a ``# undecided: … (code.ptx:LINE)`` line above the item it concerns (or above the
stage's first item), and the text is formatted once more, so ``kernlink fmt`` leaves it as is.
"""

from __future__ import annotations

from analysis.draft.model import Draft
from contract_lang.parser import parse_text
from contract_lang.printer import format_text, print_node

HEADER = (
    "# Drafted by `kernlink draft` from the compiled code. Each `undecided` line names a value the code\n"
    "# does not decide, with the PTX line that shows it; the value written below it, if any, is a placeholder.\n"
)
COMPOSED_HEADER = (
    "# Each `composed` line names a value the pipeline or another stage's contract decides, with that line.\n"
)


def render(draft: Draft, *, ptx_name: str = "code.ptx") -> str:
    """The contract text of ``draft`` (canonical form, comments included)."""
    text = print_node(draft.stage)
    stage = parse_text(text, "<draft>", "contract").stages[0]
    lines = text.split("\n")
    above: dict[int, list[str]] = {}
    notes = [(n.anchor, n.comment(ptx_name)) for n in draft.undecided]
    notes += [(c.anchor, c.comment()) for c in draft.composed]
    for anchor, comment in notes:
        index = anchor if anchor is not None and anchor < len(stage.items) else None
        line = stage.items[index].span.line if index is not None else (stage.items[0].span.line if stage.items else 2)
        if comment not in above.setdefault(line, []):
            above[line].append(comment)
    out: list[str] = []
    for number, row in enumerate(lines, start=1):
        pad = row[: len(row) - len(row.lstrip())]
        out.extend(pad + c for c in above.get(number, []))
        out.append(row)
    return format_text(HEADER + (COMPOSED_HEADER if draft.composed else "") + "\n".join(out), "<draft>", "contract")
