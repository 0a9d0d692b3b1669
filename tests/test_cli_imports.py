"""The CLI imports only what the verb being run needs: `--version` nothing heavy, a verb its own module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernlink.cli import VERBS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("z3", "lark", "networkx", "cuda", "rich", "pygls")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def _quietly(folder: Path, argv: list[str], setup: str = "") -> str:
    """Code that runs ``kernlink ARGV`` in ``folder`` (after ``setup``), its output swallowed, and asserts exit 0."""
    return (
        "import contextlib, io, os\n"
        f"os.chdir({str(folder)!r})\n"
        f"{setup}"
        "from kernlink.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert main({argv!r}) == 0\n"
    )


def test_version_imports_nothing_heavy() -> None:
    loaded = _modules_after("from kernlink.cli import main; main(['--version'])")
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert {m for m in loaded if m.startswith("kernlink.")} == {"kernlink.cli"}


@pytest.mark.parametrize("verb", ["check", "explain"])
def test_a_verb_registers_only_its_module(verb: str) -> None:
    loaded = _modules_after(f"from kernlink.cli import build_parser; build_parser({verb!r})")
    verbs = {m for m in loaded if m.startswith("kernlink.cmd_")}
    assert verbs == {f"kernlink.cmd_{verb}"}
    assert not {"fuzzing", "runtime.run", "kernlink.lsp", "kernlink.api"} & loaded


def test_every_verb_has_its_module() -> None:
    for verb in VERBS:
        assert (ROOT / "kernlink" / f"cmd_{verb}.py").is_file(), verb


def test_check_imports_neither_networkx_nor_cuda_nor_the_linker() -> None:
    """A sound composition is checked without networkx (only a call cycle or a storage clique needs it),
    CUDA or the linker (checking never needs it), without the PTX analysis when no package carries PTX and
    without the route ladder when no stage imports a tensor."""
    hello = ROOT / "specs" / "examples" / "hello"
    loaded = _modules_after(_quietly(hello, ["check", "hello.kp"]))
    assert "checker.engine" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("networkx", "cuda", "linker")}
    assert not {m for m in loaded if m.startswith(("checker.conformance", "package.codefacts", "transfer_model"))}


def test_a_build_a_server_runs_imports_nothing_heavy(tmp_path: Path) -> None:
    """The client of `kernlink serve` sends its arguments and prints the answer: the checker, the
    linker and the diagnostics stay in the server (here a stand-in answering on the socket)."""
    runtime = tmp_path / "rt"
    code = (
        "import os, socket, threading\n"
        f"os.environ['KERNLINK_RUNTIME_DIR'] = {str(runtime)!r}\n"
        "from kernlink.builder import server\n"
        "listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "listener.bind(str(server.socket_path()))\n"
        "listener.listen(1)\n"
        "def answer():\n"
        "    conn, _ = listener.accept()\n"
        "    server._receive(conn)\n"
        "    server._send(conn, {'rc': 0, 'stdout': '', 'stderr': ''})\n"
        "    conn.close()\n"
        "threading.Thread(target=answer, daemon=True).start()\n"
        "from kernlink.cli import main\n"
        "assert main(['build', 'ring.kp', '-o', 'out']) == 0\n"
    )
    loaded = _modules_after(code)
    assert "kernlink.cmd_build" in loaded
    ours = (*HEAVY, "checker", "linker", "packing", "toolchain", "diagnostics", "contract_lang")
    heavy = {m for m in loaded if m.split(".")[0] in ours}
    # the runtime folder's check and the entry's Ctrl-C handler (stdlib only)
    assert heavy == {"diagnostics", "diagnostics.private", "diagnostics.interrupts"}


def test_check_never_parses_clause_docs_nor_renders_text_for_json() -> None:
    """Clause docs are parsed only by `explain`/`clauses` (a class checks its headers when built), and
    `check --format json` prints without the terminal renderer (rich)."""
    hello = ROOT / "specs" / "examples" / "hello"
    setup = (
        "import checker.clause\n"
        "def parsed(text):\n"
        "    raise AssertionError('clause docs parsed')\n"
        "checker.clause.parse_docs = parsed\n"
    )
    loaded = _modules_after(_quietly(hello, ["check", "hello.kp", "--format", "json"], setup))
    assert "checker.engine" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "rich"} | ({"diagnostics.render_text"} & loaded)


@pytest.mark.toolchain
def test_a_build_imports_neither_rich_nor_tensor_lowering_it_does_not_need(tmp_path: Path) -> None:
    """`kernlink build` prints its steps with print(); the terminal renderer is loaded only for a diagnostic,
    and the transfer planner (with route lowering) only for a composition with tensor hand-offs."""
    ring = tmp_path / "ring"
    shutil.copytree(ROOT / "specs" / "examples" / "ring", ring, ignore=shutil.ignore_patterns("build", "host"))
    setup = f"os.environ['KERNLINK_CACHE'] = {str(tmp_path / 'cache')!r}\n"
    loaded = _modules_after(_quietly(ring, ["build", "ring.kp", "-o", "out", "--no-server"], setup))
    assert "linker.link" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "rich"} | ({"diagnostics.render_text"} & loaded)
    assert not {m for m in loaded if m.startswith(("linker.transfers", "transfer_model"))}


def test_the_toolchain_does_not_import_the_checker() -> None:
    """NVRTC and nvJitLink wrappers word their link failures with L-LINK, importing the clauses only then."""
    loaded = _modules_after("import toolchain.cuda")
    assert not {m for m in loaded if m.startswith(("checker.clauses", "checker.engine", "contract_lang", "z3"))}


def test_checking_does_not_import_how_a_route_is_lowered() -> None:
    """The route ladder is imported only for a composition with a tensor hand-off, and a route's moves
    (transfer_model.program), their CUDA (lower) and their simulation only by the linker and the tests."""
    assert not {m for m in _modules_after("import kernlink.api") if m.startswith("transfer_model")}
    gemm = ROOT / "specs" / "examples" / "gemm_swiglu"
    loaded = _modules_after(_quietly(gemm, ["check", "gemm_swiglu.kp"]))
    assert "transfer_model.routes" in loaded
    assert not {"transfer_model.program", "transfer_model.lower", "transfer_model.simulate"} & loaded


def test_python_m_kernlink_is_not_shadowed_by_the_working_directory(tmp_path: Path) -> None:
    """`python -m kernlink` puts the working directory first on `sys.path`: a `solver/` folder there (a
    package or a bare folder) was imported instead of kernlink's and ended in an import traceback."""
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "__init__.py").write_text("raise ImportError('the wrong solver')\n")
    (tmp_path / "checker").mkdir()
    hello = ROOT / "specs" / "examples" / "hello" / "hello.kp"
    done = subprocess.run(
        [sys.executable, "-m", "kernlink", "check", str(hello), "--color", "never"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0 and "composition accepted" in done.stdout, done.stdout + done.stderr
    assert done.stderr == ""
