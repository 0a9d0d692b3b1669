"""`kernlink build`'s key: the files the compile opened (any folder, any extension, and the absence
of those that would shadow them), the contract, and the component's flags file (`<stem>.flags`)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from kernlink.builder.incremental import build, inputs_of, read_record, shadows
from package.kpkg import read_package
from packing.opened import Opened, _make_rule, is_dependency_option
from tests.link.examples import EXAMPLES

pytestmark = pytest.mark.toolchain

SUM = "sum += data[k];"


def _ring(root: Path, scaled: str = '#include "scale.inc"', value: str = "1.0f") -> Path:
    """The ring example, its reduction scaled by `KL_SCALE`, which `scaled` includes from somewhere."""
    folder = root / "ring"
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host", "out"))
    source = folder / "reduce.cu"
    text = source.read_text()
    assert SUM in text
    source.write_text(f"{scaled}\n" + text.replace(SUM, "sum += KL_SCALE * data[k];"))
    _write(folder / "scale.inc", value)
    return folder / "ring.kp"


def _write(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#define KL_SCALE {value}\n")


def _settle() -> None:
    """A file saved within a clock tick of a compile may have been read either way (build.py `_settled`)."""
    time.sleep(0.05)


def _actions(pipeline: Path, out: str = "out") -> list[str]:
    _settle()
    result, _ = build(pipeline, pipeline.parent / out)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    return [s.action for s in result.steps]


def _cubin(pipeline: Path, out: str = "out") -> bytes:
    return (pipeline.parent / out / "kernel.cubin").read_bytes()


def _cold(root: Path, scaled: str, files: dict[str, str], flags: str | None = None) -> bytes:
    """A first build of a fresh copy: ``files`` ({relative path: KL_SCALE value}) and ``flags`` written."""
    pipeline = _ring(root, scaled)
    for name, value in files.items():
        _write(pipeline.parent / name, value)
    if flags is not None:
        (pipeline.parent / "reduce.flags").write_text(flags)
    assert _actions(pipeline) == ["packed", "packed"]
    return _cubin(pipeline)


def test_an_edit_to_an_included_inc_file_repacks_the_component(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path / "warm")
    assert _actions(pipeline) == ["packed", "packed"]
    assert _actions(pipeline) == ["reused", "reused"]
    first = _cubin(pipeline)
    _write(pipeline.parent / "scale.inc", "2.0f")
    assert _actions(pipeline) == ["reused", "packed"]
    assert _cubin(pipeline) != first
    assert _cubin(pipeline) == _cold(tmp_path / "cold", '#include "scale.inc"', {"scale.inc": "2.0f"})


def test_an_edit_to_a_header_in_a_sub_folder_repacks_the_component(tmp_path: Path) -> None:
    scaled = '#include "detail/scale.cuh"'
    pipeline = _ring(tmp_path / "warm", scaled)
    _write(pipeline.parent / "detail" / "scale.cuh", "1.0f")
    assert _actions(pipeline) == ["packed", "packed"]
    record = read_record(pipeline.parent / "build" / "reduce.kpkg")
    assert record is not None and str((pipeline.parent / "detail" / "scale.cuh").resolve()) in record.files
    _write(pipeline.parent / "detail" / "scale.cuh", "3.0f")
    assert _actions(pipeline) == ["reused", "packed"]
    assert _cubin(pipeline) == _cold(tmp_path / "cold", scaled, {"detail/scale.cuh": "3.0f"})


def test_a_new_file_that_shadows_an_include_repacks_the_component(tmp_path: Path) -> None:
    """`lib/scale.inc` comes from the `-I inc` folder; a new `lib/scale.inc` beside the source is found first."""
    scaled = '#include "lib/scale.inc"'
    pipeline = _ring(tmp_path / "warm", scaled)
    folder = pipeline.parent
    _write(folder / "inc" / "lib" / "scale.inc", "1.0f")
    (folder / "reduce.flags").write_text("-I inc\n")
    assert _actions(pipeline) == ["packed", "packed"]
    assert _actions(pipeline) == ["reused", "reused"]
    shadow = folder / "lib" / "scale.inc"
    assert shadow.resolve() in inputs_of(pipeline), "--watch watches where a shadowing file would appear"
    _write(shadow, "4.0f")
    assert _actions(pipeline) == ["reused", "packed"]
    files = {"inc/lib/scale.inc": "1.0f", "lib/scale.inc": "4.0f"}
    assert _cubin(pipeline) == _cold(tmp_path / "cold", scaled, files, "-I inc\n")


def test_the_shadow_candidates_are_the_opened_names_in_each_user_folder(tmp_path: Path) -> None:
    src, inc, cuda = tmp_path / "src", tmp_path / "inc", tmp_path / "cuda"
    for folder in (src, inc, cuda):
        folder.mkdir()
    files = (str(src / "k.cu"), str(inc / "lib" / "a.h"), str(cuda / "cuda" / "barrier"))
    found = shadows(Opened(tuple(sorted(files)), (str(src), str(inc), str(cuda))), [str(src), str(inc)])
    assert str(src / "lib" / "a.h") in found and str(src / "cuda" / "barrier") in found
    assert str(inc / "cuda" / "barrier") in found and str(inc / "lib" / "lib" / "a.h") in found
    assert not any(path in found for path in files)
    (src / "lib").mkdir()
    (src / "lib" / "a.h").write_text("")
    assert str(src / "lib" / "a.h") not in shadows(Opened(tuple(sorted(files)), (str(inc),)), [str(src), str(inc)])


def test_a_component_that_needs_a_define_builds_with_its_flags_file_and_a_flag_edit_repacks_it(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path / "warm", scaled="")
    flags = pipeline.parent / "reduce.flags"
    _settle()
    failed, _ = build(pipeline, pipeline.parent / "out")
    assert not failed.ok and any(d.code == "E-COMPILE" for d in failed.diagnostics), "KL_SCALE is defined nowhere"
    flags.write_text("# the reduction's scale\n-D KL_SCALE=2.0f --std c++17\n")
    assert _actions(pipeline) == ["reused", "packed"]  # the loader was packed by the failed build
    manifest = read_package(pipeline.parent / "build" / "reduce.kpkg").manifest
    assert "-DKL_SCALE=2.0f" in manifest["compile"]["options"]
    assert _actions(pipeline) == ["reused", "reused"]
    flags.write_text("-DKL_SCALE=3.0f\n")
    assert _actions(pipeline) == ["reused", "packed"]
    assert _cubin(pipeline) == _cold(tmp_path / "cold", "", {}, "-D KL_SCALE=3.0f")


def test_a_component_that_needs_an_include_folder_builds_with_its_flags_file(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path / "warm", scaled='#include "scale_def.h"')
    folder = pipeline.parent
    _write(folder / "third_party" / "include" / "scale_def.h", "1.0f")
    (folder / "reduce.flags").write_text('--include "third_party/include"\n')
    assert _actions(pipeline) == ["packed", "packed"]
    _write(folder / "third_party" / "include" / "scale_def.h", "5.0f")
    assert _actions(pipeline) == ["reused", "packed"]
    files = {"third_party/include/scale_def.h": "5.0f"}
    assert _cubin(pipeline) == _cold(tmp_path / "cold", '#include "scale_def.h"', files, "-I third_party/include")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("--no-source\n", "`--no-source` is not a flag"),
        ("-I\n", "`-I` needs a value"),
        ("--std c++14\n", "the dialect is one of"),
        ("-D 9x=1\n", "`9x` is not a macro name"),
        ("-D 'unclosed\n", "cannot split this line"),
        ("--source /etc/x.cu\n", "is absolute: name it relative to this file"),
        ("--source reduce.kc\n", "is not a source `kernlink pack` takes"),
        ("--source elsewhere/reduce.cu\n", "no such file (relative to this file's folder)"),
        ("--source reduce.cu --source=reduce.cu\n", "a second `--source`"),
    ],
)
def test_a_flags_file_build_would_not_pass_is_an_error_at_its_word(tmp_path: Path, text: str, said: str) -> None:
    pipeline = _ring(tmp_path)
    (pipeline.parent / "reduce.flags").write_text("# ok\n" + text)
    result, linked = build(pipeline, pipeline.parent / "out")
    assert linked is None and not result.ok
    (only,) = result.diagnostics
    assert only.code == "E-PACK" and said in only.message, only.message
    assert only.labels[0].span.line == 2 and only.labels[0].span.file.endswith("reduce.flags")
    assert str(pipeline.parent / "reduce.flags") in result.sources.texts


def test_a_record_that_no_longer_holds_or_does_not_parse_repacks(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path)
    assert _actions(pipeline) == ["packed", "packed"]
    key = pipeline.parent / "build" / "reduce.kpkg.key"
    key.write_text("603572ddbb273ad73b15a603fd92f6833eb4c76d1e28fd7ab517839662135e69\n")  # the old bare key
    assert read_record(pipeline.parent / "build" / "reduce.kpkg") is None
    result, _ = build(pipeline, pipeline.parent / "out")
    assert [s.action for s in result.steps] == ["reused", "packed"]
    assert "no build record" in result.steps[1].why


def test_a_file_saved_while_its_component_compiles_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import packing.pack

    pipeline = _ring(tmp_path)
    inc = pipeline.parent / "scale.inc"
    packed = packing.pack.pack

    def save_during(*args: object, **kwargs: object) -> object:
        done = packed(*args, **kwargs)  # type: ignore[arg-type]
        if Path(str(args[0])).name == "reduce.cu":
            _write(inc, "7.0f")  # read as 1.0f, saved before the record is written
        return done

    monkeypatch.setattr(packing.pack, "pack", save_during)
    result, _ = build(pipeline, pipeline.parent / "out")
    monkeypatch.undo()
    assert result.ok and "changed while it compiled" in result.steps[1].why
    record = read_record(pipeline.parent / "build" / "reduce.kpkg")
    assert record is not None and record.key == "" and record.files
    assert _actions(pipeline) == ["reused", "packed"]
    assert _actions(pipeline) == ["reused", "reused"]
    assert _cubin(pipeline) == _cold(tmp_path / "cold", '#include "scale.inc"', {"scale.inc": "7.0f"})


def test_a_file_the_compile_found_first_and_saved_during_it_is_not_trusted(tmp_path: Path) -> None:
    """A header the build could not hash before the compile is judged by its modification time."""
    pipeline = _ring(tmp_path, scaled='#include "detail/scale.cuh"')
    header = pipeline.parent / "detail" / "scale.cuh"
    _write(header, "1.0f")
    later = time.time_ns() + 10**9  # as if saved during the compile
    os.utime(header, ns=(later, later))
    result, _ = build(pipeline, pipeline.parent / "out")
    assert result.ok and "changed while it compiled" in result.steps[1].why
    os.utime(header)
    assert _actions(pipeline) == ["reused", "packed"]
    assert _actions(pipeline) == ["reused", "reused"]


def test_files_written_just_before_a_build_are_trusted(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path)  # copied, edited and written a moment ago
    result, _ = build(pipeline, pipeline.parent / "out")
    assert result.ok and [s.action for s in result.steps] == ["packed", "packed"]
    assert not any("changed while" in s.why for s in result.steps)
    again, _ = build(pipeline, pipeline.parent / "out")
    assert [s.action for s in again.steps] == ["reused", "reused"]


def test_the_dependency_options_are_not_recorded_and_do_not_change_the_package(tmp_path: Path) -> None:
    from packing.pack import pack

    pipeline = _ring(tmp_path, scaled='#include "detail/scale.cuh"')
    _write(pipeline.parent / "detail" / "scale.cuh", "1.0f")
    source = pipeline.parent / "reduce.cu"
    packed = pack(source, source.with_suffix(".kc"), tmp_path / "a.kpkg")
    assert packed.opened is not None
    assert str((pipeline.parent / "detail" / "scale.cuh").resolve()) in packed.opened.files
    options = read_package(tmp_path / "a.kpkg").manifest["compile"]["options"]
    assert not any(is_dependency_option(o) for o in options)
    from toolchain.cuda import stable_cwd
    from toolchain.symbols import LTO_PTX_EXTRA, compile_lto_and_ptx

    text = source.read_bytes()
    with stable_cwd():
        plain, _ = compile_lto_and_ptx(
            text, "reduce.cu", arch="sm_90a", include_dirs=[pipeline.parent], extra_options=LTO_PTX_EXTRA
        )
        traced, _ = compile_lto_and_ptx(
            text,
            "reduce.cu",
            arch="sm_90a",
            include_dirs=[pipeline.parent],
            extra_options=(*LTO_PTX_EXTRA, f"--fdevice-time-trace={tmp_path / 't'}"),
        )
    assert plain.ltoir == traced.ltoir


def test_nvcc_reports_what_it_opened(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    from packing.pack import pack

    pipeline = _ring(tmp_path, scaled='#include "detail/scale.cuh"')
    _write(pipeline.parent / "detail" / "scale.cuh", "1.0f")
    source = pipeline.parent / "reduce.cu"
    packed = pack(source, source.with_suffix(".kc"), tmp_path / "a.kpkg", compiler="nvcc")
    assert packed.opened is not None
    assert str((pipeline.parent / "detail" / "scale.cuh").resolve()) in packed.opened.files
    assert str(source.resolve()) in packed.opened.files
    options = read_package(tmp_path / "a.kpkg").manifest["compile"]["options"]
    assert not any(is_dependency_option(o) for o in options)


def test_a_make_rule_with_escaped_blanks_reads_back() -> None:
    rule = "out.ltoir : x.cu \\\n    /a/b\\ c.h \\\n    /d/e.inc\n"
    assert _make_rule(rule) == ["x.cu", "/a/b c.h", "/d/e.inc"]
    assert _make_rule("no rule here") is None


def test_watch_rebuilds_on_an_edit_to_an_inc_file_in_a_sub_folder_and_to_the_flags_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.link.test_build import ROOT, _lines, _until_built

    scaled = '#include "detail/scale.inc"'
    pipeline = _ring(tmp_path / "watched", scaled)
    folder = pipeline.parent
    (folder / "detail").mkdir()
    (folder / "detail" / "scale.inc").write_text("#define KL_SCALE (KL_FACTOR * 1.0f)\n")
    (folder / "reduce.flags").write_text("-D KL_FACTOR=2.0f\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "KERNLINK_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernlink", "build", "--watch", "ring.kp", "-o", "out", "--color", "never"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen: list[str] = []
    try:
        lines = _lines(proc)
        assert "build finished (exit 0)" in _until_built(lines, seen), "".join(seen)
        time.sleep(0.3)  # one poll: the watch has listed what the build's records name
        (folder / "detail" / "scale.inc").write_text("#define KL_SCALE (KL_FACTOR * 3.0f)\n")
        text = _until_built(lines, seen)
        assert "--- detail/scale.inc changed: building again" in text, "only the edited file, named as the user does"
        assert "packed build/reduce.kpkg" in text, text
        assert "reused build/loader.kpkg" in text and "build finished (exit 0)" in text, text
        time.sleep(0.3)
        (folder / "reduce.flags").write_text("-D KL_FACTOR=5.0f\n")
        text = _until_built(lines, seen)
        assert "--- reduce.flags changed: building again" in text and "packed build/reduce.kpkg" in text, text
        assert "build finished (exit 0)" in text, text
        watched = _cubin(pipeline)
    finally:
        proc.terminate()
        proc.wait(30)
    cold = _ring(tmp_path / "cold", scaled).parent
    (cold / "detail").mkdir()
    (cold / "detail" / "scale.inc").write_text("#define KL_SCALE (KL_FACTOR * 3.0f)\n")
    (cold / "reduce.flags").write_text("-D KL_FACTOR=5.0f\n")
    assert _actions(cold / "ring.kp") == ["packed", "packed"]
    assert watched == _cubin(cold / "ring.kp")


def test_a_failed_repack_of_a_package_packed_with_flags_says_where_build_takes_them(tmp_path: Path) -> None:
    from packing.pack import CompileFlags, pack

    pipeline = _ring(tmp_path, scaled="")
    source = pipeline.parent / "reduce.cu"
    pack(
        source,
        source.with_suffix(".kc"),
        pipeline.parent / "build" / "reduce.kpkg",
        flags=CompileFlags(defines=(("KL_SCALE", "2.0f"),)),
    )
    result, _ = build(pipeline, pipeline.parent / "out")
    (error,) = [d for d in result.diagnostics if d.is_error]
    assert error.code == "E-COMPILE"
    assert any("packed with `-D KL_SCALE=2.0f`" in h and "reduce.flags" in h for h in error.helps), error.helps
    (pipeline.parent / "reduce.flags").write_text("-D KL_SCALE=2.0f\n")
    assert _actions(pipeline) == ["reused", "packed"]
