"""The codes that are not clauses: E- (errors), W- (warnings) and I- (notes), each documented.

Clause codes (L-) live with their clauses (checker/clauses/); every other code a
diagnostic can carry is registered here with the same four sections, so that
`kernlink explain` answers for every code and tests/test_registry.py can fail on a
code string in the source that nobody registered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnostics.symbols import Code

SECTIONS = ("What it checks", "Why it matters", "Example", "Fix")
_CODE = re.compile(r"^[EWI]-[A-Z]+(-[A-Z]+)*$")
_SEVERITY = {"E": "error", "W": "warning", "I": "note"}


@dataclass(frozen=True)
class CodeInfo:
    """One non-clause code: what it reports, why, an example, and the fix."""

    code: str
    name: str
    summary: str
    category: str  # "input", "solver", "toolchain", "run", "internal", "check"
    what: str
    why: str
    example: str
    fix: str

    def __post_init__(self) -> None:
        if not _CODE.match(self.code):
            raise ValueError(f"code {self.code!r} is not of the form E-NAME, W-NAME or I-NAME")
        if not self.summary or self.summary.endswith(".") or self.summary[0].isupper():
            raise ValueError(f"{self.code}: the summary is a lowercase phrase without a trailing period")

    @property
    def severity(self) -> str:
        return _SEVERITY[self.code[0]]

    @property
    def sections(self) -> dict[str, str]:
        return dict(zip(SECTIONS, (self.what, self.why, self.example, self.fix), strict=True))


def _c(code: str, name: str, summary: str, category: str, what: str, why: str, example: str, fix: str) -> CodeInfo:
    return CodeInfo(
        code,
        name,
        summary,
        category,
        " ".join(what.split()),
        " ".join(why.split()),
        example.strip("\n"),
        " ".join(fix.split()),
    )


CODES: tuple[CodeInfo, ...] = (
    # ------------------------------------------------------------ reading inputs
    _c(
        Code.E_IO,
        "io-error",
        "a file cannot be read or written",
        "input",
        "An input named on the command line (a pipeline, contract or package) cannot be read, or an "
        "output (a report, a link directory, a package) cannot be written.",
        "Nothing can be decided about a file kernlink cannot read; the command exits 2 (usage or I/O), "
        "not 1, so a script can tell a missing file from a rejected kernel.",
        "kernlink check missing.kp\nerror[E-IO]: cannot read `missing.kp`: No such file or directory",
        "Check the path and its permissions; create the output directory's parent.",
    ),
    _c(
        Code.E_TOO_LARGE,
        "input-too-large",
        "an input file is larger than kernlink reads",
        "input",
        "Contracts and pipelines are read whole; a file over the size limit is refused before parsing.",
        "A multi-megabyte contract is almost always the wrong file (a binary, a log); refusing it keeps "
        "the parser's time and memory bounded.",
        "kernlink check huge.kc\nerror[E-TOO-LARGE]: `huge.kc` is too large: 80000000 bytes, over the limit",
        "Name the contract file, not a generated or binary one; split a very large contract into stages.",
    ),
    _c(
        Code.E_BINARY,
        "binary-input",
        "an input file is binary, not text",
        "input",
        "A contract or pipeline holds a NUL byte.",
        "Contracts are UTF-8 text; a NUL byte means a package or object file was named where a contract was expected.",
        "kernlink check build/loader.kpkg.kc\nerror[E-BINARY]: `build/loader.kpkg.kc` is a binary file, not text",
        "Name the `.kc` contract; packages are given as `.kpkg` (or through `use … from`).",
    ),
    _c(
        Code.E_ENCODING,
        "bad-encoding",
        "an input file is not valid UTF-8",
        "input",
        "A byte of a contract or pipeline does not decode as UTF-8.",
        "Spans, did-you-mean suggestions and the formatter work on text; an undecodable byte has no position in it.",
        "error[E-ENCODING]: `loader.kc` is not valid UTF-8: byte 0xe9 at 3:17",
        "Save the file as UTF-8.",
    ),
    _c(
        Code.E_EMPTY,
        "empty-input",
        "a contract or pipeline file holds nothing",
        "input",
        "A `.kc` file with no stage, or a `.kp` file with no pipeline (comments and blanks only).",
        "An empty file contributes nothing to check; accepting it would hide a wrong path or a truncated file.",
        "error[E-EMPTY]: `loader.kc` holds nothing but comments",
        "Write the stage or pipeline block, or stop naming the file.",
    ),
    _c(
        Code.E_SYNTAX,
        "syntax-error",
        "a contract or pipeline does not parse",
        "input",
        "The text does not follow the contract language's grammar (specs/language.md): an unknown "
        "keyword, a missing brace, a stage in a pipeline file. Checking of that file stops at its first "
        "syntax error; the stages it would have provided are not reported as missing.",
        "Every clause reads the parsed contract; a file that does not parse has no meaning to check, and "
        "diagnostics about its absence would bury the one mistake.",
        'stage "demo" version "1.0.0" {\n    rle load entry load_main warps 1\n}\n'
        "error[E-SYNTAX]: unexpected `rle` (help: did you mean `role`?)",
        "Correct the text as the help says; `kernlink fmt --check` reports syntax errors too.",
    ),
    _c(
        Code.E_NAME,
        "unknown-word",
        "a word the language does not know where a name from a fixed vocabulary goes",
        "input",
        "A feature after `requires feature`, a count unit, an element type or another word from a fixed "
        "vocabulary is not one the language defines.",
        "A misspelt feature would silently require nothing; the vocabulary is closed so that every word "
        "means something checked.",
        "requires feature tma, wgmmma\nerror[E-NAME]: unknown feature `wgmmma` (help: did you mean `wgmma`?)",
        "Use one of the words the help lists (specs/language.md has the vocabulary).",
    ),
    _c(
        Code.E_DUPLICATE,
        "duplicate-key",
        "a property is given twice on one item",
        "input",
        "An item states the same property twice (two `depth` lines in a ring side, `warps` twice on a role).",
        "Which of the two values was meant is not decidable; taking either would check something the "
        "author did not write.",
        "ring kv produce by load {\n    depth 2\n    depth 4\n}\n"
        "error[E-DUPLICATE]: `depth` is given twice in ring `kv`",
        "Keep one of them.",
    ),
    _c(
        Code.E_VALUE,
        "bad-value",
        "a value is outside what its property allows",
        "input",
        "A number or range is malformed for its property: an empty range (`depth 4..2`), a parity other "
        "than 0 or 1, an integer out of bounds, a tensor-map box on a field that is not a `ptr` or outside "
        "the map's limits (1 to 5 dimensions of 1 to 256 elements); a byte size written from facts "
        "(`bytes x_rows * 128`, specs/language.md §7.2) that has no value when the stage is built: it "
        "names a fact the linker chooses (`owns … in 16..64`), a run-time parameter (`uses fact`) or no "
        "fact the stage owns or assumes, or its value is below 0, above u64 or a division by zero.",
        "The value would make the model meaningless (an empty depth range has no depth to place; a "
        "size with no value sizes no slot, and a guessed one would check code against a number it "
        "was not built for).",
        "depth 4..2\nerror[E-VALUE]: the range 4..2 is empty",
        "Write the value within its bounds (specs/language.md lists them).",
    ),
    _c(
        Code.W_STALE_CONTRACT,
        "stale-contract",
        "a contract file differs from the contract embedded in the package that provides its stage",
        "input",
        'A pipeline\'s `use … from "x.kpkg"` takes the stage from the package, whose contract was embedded '
        "when it was packed. When a `.kc` file for the same stage (named on the command line or beside "
        "the pipeline) says something else, the package's contract is the one checked and linked — the "
        "package's object code was compiled against it — and the edited file is ignored. kernlink says "
        "so, with both spans; with `--strict` it is an error.",
        "An edit to a contract that is never checked looks like a verified change; the code that gets "
        "linked is still the package's.",
        'use "demo.loader" version ^1.0 from "build/loader.kpkg"   # loader.kc beside it was edited\n'
        "warning[W-STALE-CONTRACT]: `loader.kc` differs from the contract packed in `build/loader.kpkg`",
        "Repack the component (`kernlink pack loader.cu --contract loader.kc -o build/loader.kpkg`), or "
        "revert the edit to the `.kc` file.",
    ),
    _c(
        Code.W_STALE_SOURCE,
        "stale-source",
        "a component's source or a header its package carries differs from the copy packed",
        "input",
        "A stage package carries the source it was compiled from (`source.cu`) and the local headers it "
        "includes, and records each one's SHA-256. When the file that source was packed from (`<folder>/"
        "<name>.cu` for a package at `<folder>/build/<stem>.kpkg`, where `kernlink pack` puts it, or "
        "beside the package) or one of those headers there says something else, the package's code is the "
        "one checked and linked, and the edit is ignored. kernlink says so, naming each file that "
        "changed; with `--strict` it is an error. A binary-only package carries no source: nothing is "
        "compared.",
        "An edit to a kernel's source that is never compiled looks like a verified change; the code that "
        "gets linked is still the package's.",
        'use "demo.loader" version ^1.0 from "build/loader.kpkg"   # loader.cu beside build/ was edited\n'
        "warning[W-STALE-SOURCE]: `loader.cu` differs from the copy packed in `build/loader.kpkg`",
        "Repack the component (`kernlink pack loader.cu --contract loader.kc -o build/loader.kpkg`, or "
        "`kernlink build`, which repacks what changed), or revert the edit.",
    ),
    # ------------------------------------------------------------ solvers
    _c(
        Code.E_SOLVER_UNKNOWN,
        "solver-unknown",
        "an SMT query could not be decided",
        "solver",
        "The protocol model or a fact assumption put a question to Z3 that it answered `unknown` (a "
        "nonlinear fact, a resource limit). The span is the item the question was about.",
        "Unknown is never accept: a protocol the solver could not decide may hang. The check reports it "
        "as an error, and no `--select`/`--ignore` hides it.",
        "assumes fact n: u32 == m * m + k * k\n"
        "error[E-SOLVER-UNKNOWN]: cannot decide whether `n == m * m + k * k` holds for every value of its facts",
        "Simplify the fact (linear arithmetic, narrower ranges) or split the ring so each query is "
        "smaller; report it if a small composition is undecided.",
    ),
    _c(
        Code.E_SOLVER_BUDGET,
        "solver-budget",
        "placement, or a whole check, was not decided within its budget",
        "solver",
        "The joint placement solve ran out of its resource budget before finding a placement or proving "
        "that none exists; or a whole `kernlink check` ran out of its time budget (`--time-budget`) before "
        "a verdict.",
        "Without a placement nothing can be linked, and without a proof the composition cannot be "
        "rejected with a clause: the honest answer is that it was not decided. A check that runs for "
        "minutes without a word is no answer either.",
        "error[E-SOLVER-BUDGET]: placement of 4 rings was not decided within its budget of 20000000 rlimit units",
        "Narrow the free choices (fixed ring depths instead of wide ranges, fewer claims with "
        "`lifetime kernel`, fewer rings per stage), or raise the budget (`--time-budget SECONDS`, 0 for none).",
    ),
    _c(
        Code.I_PLACE_BUDGET,
        "placement-not-optimal",
        "placement stopped at a feasible layout before proving it optimal",
        "solver",
        "The placement is valid (verified) but the solver's budget ran out before it proved the objective "
        "optimal or the tie-break canonical.",
        "The link is correct but may not be byte-identical across kernlink versions with different "
        "budgets; the note makes that visible.",
        "note[I-PLACE-BUDGET]: placement is valid but not proven optimal within its budget of 20000000 rlimit units",
        "Nothing is required; narrow depth ranges to let the solver finish.",
    ),
    _c(
        Code.I_DEPTH_MIN,
        "depth-at-minimum",
        "a ring was placed at the lowest depth its range allows",
        "solver",
        "Placement chose the minimum of a ring's `depth lo..hi` range because shared memory had no room "
        "for a deeper ring.",
        "A ring at its minimum depth overlaps copies and compute least; the note tells where performance went.",
        "note[I-DEPTH-MIN]: ring `kv` stays at its minimum depth 2 of 2..4",
        "Free shared memory (shorter claim lifetimes, smaller scratch) if the ring should be deeper.",
    ),
    # ------------------------------------------------------------ packages and toolchain
    _c(
        Code.I_ASSUMED,
        "assumed-of-other-stages",
        "`check --stage`: what the other stages must provide, assumed",
        "check",
        "A stage checked alone with `kernlink check --stage X.kc` lacks what the other stages of its "
        "composition bring: the other side of a ring, counter or rendezvous, the owner of a fact it uses, the "
        "provider of a call, the exporter of a tensor it imports, roles for the rest of the block, the "
        "pipeline's connections and caller buffers. Each such absence is this note, at the item that needs it, "
        "instead of an error; the stage's own defects stay errors.",
        "An owner lints their stage before the other stages exist. An assumption is not a verdict: the check "
        "of the whole composition decides it.",
        "kernlink check --stage loader.kc\n"
        "note[I-ASSUMED]: assumed of the other stages: another stage consumes ring `kv`",
        "Nothing, while the stage is written alone; check the pipeline once the other stages exist.",
    ),
    _c(
        Code.I_NO_PACKAGE,
        "checked-from-contract",
        "a `use … from` names a package that is not built",
        "check",
        "The pipeline names a package that does not exist; the stage was checked from its `.kc` contract instead.",
        "Symbols and params layouts are captured when a component is packed; without the package those "
        "clauses (L-SYMBOL, L-PARAMS, L-HANDLE) have nothing to compare, and linking is impossible.",
        'use "demo.loader" version ^1.0 from "build/loader.kpkg"\n'
        "note[I-NO-PACKAGE]: package `build/loader.kpkg` is not built; `demo.loader` was checked from its contract",
        "Run `kernlink pack` to build the package.",
    ),
    _c(
        Code.E_PACK,
        "pack-input",
        "`kernlink pack` cannot package the given contract",
        "toolchain",
        "The contract given to `kernlink pack` holds several stages without `--stage`, names no stage by "
        'that name, or states no `target`; or a called host provider (`host provider "x.c" fn F`) is not '
        "a C source file beside the contract.",
        "A package holds one stage compiled for one target; which one must be explicit. It carries its host "
        "providers' sources, which the link writes beside kernel.h: a missing one would fail only at the "
        "caller's build.",
        "kernlink pack mma.cu --contract gemm.kc\nerror[E-PACK]: `gemm.kc` holds 2 stages; a package holds one",
        "Pass `--stage NAME`, or give the stage a `target` line; put the provider's `.c` file where its "
        "`host provider` line says.",
    ),
    _c(
        Code.E_COMPILE,
        "compile-error",
        "the compiler (NVRTC or nvcc) could not compile a source",
        "toolchain",
        "The compiler reported errors for a component (at pack time) or for the generated glue (at link "
        "time; then it is a kernlink bug). Each compiler error is one diagnostic with its span. A crash "
        "inside NVRTC is reported here too, with the signal that ended the compiler's process.",
        "Without LTO IR nothing can be packaged or linked.",
        'kernlink pack loader.cu --contract loader.kc\nerror[E-COMPILE]: identifier "x" is undefined',
        "Fix the source at the span; `kernlink pack --compiler nvcc` compiles with the nvcc on PATH instead of NVRTC.",
    ),
    _c(
        Code.E_HOST_CODE,
        "host-code-refused",
        "a stage carries host code and `--no-host-code` refuses it",
        "input",
        "With `--no-host-code`, `check`, `link` and `build` refuse every stage with a `host provider`: a called "
        'one (`host provider "x.c" fn F`), whose C source the package carries and the launch helpers '
        "(kernel.h, `kernlink.Session`) compile and run before the kernel, and a host library the caller must "
        "run. One error per provider, at its line, naming its stage.",
        "A host provider is code from the stage's owner that runs on the host with the caller's rights. A "
        "build that must run only reviewed device code (a CI job, a service linking packages from elsewhere) "
        "needs the composition refused, not a provider run without a word.",
        'host provider "mainloop_host.c" fn kl_gemm_mainloop_provide fills tmap_a\n'
        "error[E-HOST-CODE]: `gemm.mainloop` calls the host provider `mainloop_host.c` "
        "(fn kl_gemm_mainloop_provide); --no-host-code refuses host code",
        "Review the provider's source (`kernlink inspect PACKAGE` prints it) and run without `--no-host-code`, "
        "or use a version of the stage that needs no host provider.",
    ),
    _c(
        Code.E_UNSUPPORTED,
        "not-linkable-yet",
        "the linker cannot generate code for a part of the composition",
        "toolchain",
        "The composition is valid, but the role-entry ABI cannot express a part of it yet (tensor-memory "
        "claims, counters, clusters, symmetric buffers, a call with a custom value type).",
        "Linking it anyway would produce a kernel whose generated code does not do what the contract says.",
        "claim tmem acc columns 256\nerror[E-UNSUPPORTED]: `kernlink link` cannot link tensor-memory claim `acc` "
        "of `mma` yet",
        "Check the composition with `kernlink check`; link it once the linker supports the feature.",
    ),
    _c(
        Code.I_EXPORT_DROPPED,
        "export-dropped",
        "an exported callable is called by no call site",
        "toolchain",
        "A stage exports a callable that no call of the pipeline uses; link-time optimisation removes it.",
        "It is usually fine, but an export meant to be called and misspelt at the call site shows up here.",
        "note[I-EXPORT-DROPPED]: export `scale` of `hello.provider` is called by no call site",
        "Nothing is required; call it, or remove the export.",
    ),
    _c(
        Code.I_SPILL,
        "register-spill",
        "the linked kernel spills registers",
        "toolchain",
        "ptxas compiled a role within its `setmaxnreg` budget by spilling registers to local memory.",
        "Spills cost memory traffic on the hot path; the budget is below what the role's code uses.",
        "note[I-SPILL]: the linked kernel `kl_dispatch` spills registers (64 B stored, 64 B loaded per thread)",
        "Raise the `regs` of the role whose code needs more registers.",
    ),
    _c(
        Code.I_PTXAS,
        "toolchain-warning",
        "ptxas or nvJitLink warned about the linked kernel",
        "toolchain",
        "A warning or advisory of ptxas or nvJitLink (a launch bound it ignores, a register or spill "
        "advisory), reported instead of dropped.",
        "The compiler silently drops hints it cannot honour (`.minnctapersm` above what fits): the kernel "
        "then runs with another occupancy than the contract states.",
        "warning[I-PTXAS]: ptxas: .minnctapersm will be ignored since .maxntid is not specified",
        "Read the warning; fix the contract's `launch` line or the role budgets it names.",
    ),
    _c(
        Code.E_PARITY,
        "parity-unprovable",
        "`kernlink parity` cannot make its proof",
        "toolchain",
        "A stage's package carries no source, so the one-unit control cannot be built; or, when timing, "
        "the control's outputs differ from the linked kernel's, so no ratio is reported.",
        "A speed ratio between two kernels that compute different things, or a control that is not the "
        "same sources, proves nothing about the link.",
        "error[E-PARITY]: stage `ring.loader` has no source: the one-unit control cannot be built",
        "Pack the stage with its source (no `--no-source`), or compare the outputs and fix the kernel that differs.",
    ),
    _c(
        Code.I_CONFORM,
        "conformance-undecided",
        "a code site the conformance analysis cannot decide",
        "toolchain",
        "The PTX analysis of a component (checker/conformance) met an instruction whose operand it cannot "
        "trace to a constant, a handle or a params load (a value computed in a loop it cannot bound, a TMA "
        "copy whose size is in the tensor map), or a package that carries no PTX.",
        "Unknown is never a pass: the site is named so a reviewer can judge it; `--strict` makes it an error.",
        "note[I-CONFORM]: `mbarrier.init` in `ring_loader_kv_init`: the arrival count is not traceable",
        "Read the count through the contract's handle, or accept the note; `--strict` rejects it.",
    ),
    _c(
        Code.I_DEFERRED,
        "deferred-to-composition",
        "`pack`: a side the component's code alone cannot show, left to the composed check",
        "check",
        "A role that calls other stages' callables (`call … as S from role R`) may run part of its protocol "
        "inside them: the steps of a staging ring (`ring-step`), the global accesses and counter steps a "
        "barrier `orders` (`barrier-orders`), or a step of a ring or named barrier whose barrier or ID the role "
        "passes to the callable (`ring-step`, `named-barrier`). `kernlink pack` of the component alone has only "
        "the role's own "
        "code, so each such side is this note, at the contract item it is about, naming the check, the role, "
        "the claims and the reason (checker/conformance/deferral.py). It is never an error, `--strict` "
        "included: `kernlink check` of the composition splices the callables' summaries and decides it.",
        "A component is packed before the packages it calls exist, or without them; a side its code cannot "
        "show is neither accepted nor rejected there, and the note says which check will decide it, so that "
        "nobody takes a clean `pack --strict` for the composed verdict.",
        "kernlink pack consumer.cu --contract consumer.kc --strict\n"
        "note[I-DEFERRED]: role `mma` calls other stages' callables, which may run steps of ring `out_stage`: "
        "the composed check (`kernlink check`) decides the steps of ring `out_stage`, through the callables' "
        "summaries",
        "Nothing is required of the package; check the composition (`kernlink check pipeline.kp`), which "
        "judges the side through the callables' summaries.",
    ),
    _c(
        Code.I_AUDIT,
        "audit-undecided",
        "a linked code site the link audit cannot prove against the map",
        "toolchain",
        "The link audit (linker/audit.py) reads the linked PTX and cubin and proves that the code uses the "
        "resources the map placed; a site whose value it cannot trace, or a link directory without the "
        "`kernel.h` it compares with the map, is named instead of passed.",
        "A constant the audit did not see may still be wrong; it is reported, never assumed.",
        "note[I-AUDIT]: a named barrier in `kl_dispatch` uses a register the audit cannot trace",
        "Nothing is required; `kernlink audit --strict` makes it an error.",
    ),
    _c(
        Code.I_BINDING,
        "binding-unchecked",
        "a package's checked code cannot be shown to be the code it links",
        "toolchain",
        "Each package's LTO IR is lowered to PTX with nvJitLink (packing/binding.py) and must be the `code.ptx` "
        "the check read; a package whose PTX is not that lowering and whose manifest records another one (older "
        "kernlink, another nvJitLink, no record), or that carries no `code.ptx`, cannot be bound. Its linked "
        "code is then checked against its contract at link instead.",
        "Without the binding the PTX the checks read is not shown to be the code that runs; `--strict` and "
        "`--require-binding` refuse such a package (L-INTEGRITY).",
        "note[I-BINDING]: package `build/loader.kpkg` cannot be bound to the code that was checked: it has no "
        "`compile` record, and its `code.ptx` is not what its `lto.ir` lowers to here",
        "Repack the package with `kernlink pack` (NVRTC or nvcc, this kernlink's nvJitLink), or accept the note.",
    ),
    _c(
        Code.I_PROTOCOL_BOUND,
        "protocol-bound-lowered",
        "the protocol was checked over fewer iterations than its default bound",
        "solver",
        "`kernlink check --bound K` lowered the iterations each role runs in the protocol model below the "
        "default (2 x ring depth + 1).",
        "A hang or race that needs more iterations to show is outside what was checked; the accept covers "
        "only K iterations, and this note says so.",
        "kernlink check ring.kp --bound 2\nnote[I-PROTOCOL-BOUND]: the protocol was checked over 2 iterations "
        "per role, fewer than the default",
        "Drop `--bound`, or raise it to the default, for a verdict over the full bound.",
    ),
    _c(
        Code.E_CUBIN,
        "bad-cubin",
        "a cubin cannot be read",
        "toolchain",
        "An ELF cubin (the linker's output, or one read back) is malformed or lacks a section kernlink "
        "reads (kernel list, register counts, shared memory).",
        "The register and shared-memory checks after the link read the cubin; an unreadable one cannot be verified.",
        "error[E-CUBIN]: the linked cubin is not an ELF file",
        "Relink; report it with the inputs if nvJitLink produced it.",
    ),
    # ------------------------------------------------------------ running
    _c(
        Code.E_CUDA,
        "cuda-error",
        "the CUDA driver refused an operation of `kernlink run`",
        "run",
        "No CUDA driver or GPU is available, or the driver rejected a module load, an allocation or a "
        "launch (arguments that do not match the kernel's parameters).",
        "A kernel that cannot be launched has no result to report.",
        "kernlink run out --args args.json\nerror[E-CUDA]: no CUDA driver is available",
        "Run on a machine with an NVIDIA GPU and driver; match the arguments to the kernel's parameters.",
    ),
    _c(
        Code.E_HANG,
        "watched-wait-timed-out",
        "a watched wait of a linked kernel timed out",
        "run",
        "A kernel linked with `kernlink link --watchdog` bounds every counter and ring wait made through "
        "the generated handles; a wait that timed out wrote a ledger entry (block, thread, site, slot, "
        "expected and last seen value) and trapped, and `kernlink run` decodes it against the link map.",
        "A hang shows no error of its own; the ledger names the role, the ring or counter and the contract "
        "line it waited on, which is where the mismatch between two owners is.",
        "error[E-HANG]: 4 blocks (0, 1, 2, 3), thread 0 hung: counter `ready` slot 0: role `cons` of "
        "`hand.cons` waits for >= 5, last saw 4",
        "Compare the producer's and the consumer's contract lines the diagnostic names (counts, facts, "
        "depths); relink with kernlink so facts reach every consumer.",
    ),
    _c(
        Code.E_RUN,
        "run-input",
        "`kernlink run` was given arguments it cannot use",
        "run",
        "The arguments file for `kernlink run` is malformed, names a buffer or parameter the kernel lacks, "
        "or gives a value of the wrong type.",
        "The launch helper builds the params block from these arguments; a wrong one would launch the "
        "kernel on garbage.",
        "kernlink run out --args args.json   # names a buffer the kernel lacks\nerror[E-RUN]: …",
        "Correct the arguments file as the help says.",
    ),
    # ------------------------------------------------------------ bugs
    _c(
        Code.E_INTERNAL,
        "internal-error",
        "kernlink failed: a bug, not a verdict about the inputs",
        "internal",
        "An exception escaped a clause or a command, or a step found an inconsistency that a checked "
        "composition cannot have. The report names what failed, where, and the inputs.",
        "Nothing was decided about the inputs: an internal error is never an accept and never a "
        "rejection. The command exits 3, not 1.",
        "error[E-INTERNAL]: `kernlink check` failed with StopIteration\n  = note: inputs: check gemm.kp",
        "Report it with the inputs listed and `kernlink --version`.",
    ),
)

BY_CODE: dict[str, CodeInfo] = {c.code: c for c in CODES}


def lookup(code: str) -> CodeInfo | None:
    return BY_CODE.get(code)
