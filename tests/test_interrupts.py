"""Ctrl-C at any moment is exit 130 with no verdict (diagnostics/interrupts.py, issue 32 item 9).

Each case runs ``kernlink`` in a child process as a user does. Deterministic cases put the
interrupt where it used to be lost: inside a finalizer (which swallows the
``KeyboardInterrupt``; the command went on to print "accepted" and exit 0) and during
start-up (a traceback and a kill by SIGINT). The randomized case interrupts ``check``,
``link`` and ``build`` after a random delay, a few times per verb in the default tier and
100 times per verb in the slow tier: the outcome is the verdict (the interrupt came after it
was committed) or exit 130 with nothing on stdout, and never a word on stderr.

The interpreter's own start-up, before it runs a line of kernlink, is Python's: a SIGINT
there is handled by Python. The randomized runs start the child with SIGINT held back
(blocked across ``exec``) so that one sent then reaches kernlink's handler when it is
installed, and every delay from 0 on tests kernlink.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.run import LinkedKernel
from tests.link.examples import build_example

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = {"check": "composition accepted", "link": "linked `", "build": "built `"}

FINALIZER = r"""
import os, signal, sys, time
import kernlink.api as api

real = api.analyse


class Dropped:
    def __del__(self):  # as a Z3 object's: the KeyboardInterrupt raised in here is printed and dropped
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)


def analyse(*args, **kwargs):
    result = real(*args, **kwargs)
    Dropped()
    return result


api.analyse = analyse
from kernlink.cli import main

sys.argv = ["kernlink", *sys.argv[1:]]
sys.exit(main())
"""
"""A child whose check ends with a finalizer that receives the interrupt (and swallows it)."""

START_UP = r"""
import os, signal, sys, time


class Trip:
    def find_spec(self, name, path=None, target=None):
        if name == "kernlink.output":  # imported while the verb's parser is built
            os.kill(os.getpid(), signal.SIGINT)
            exec("time.sleep(0.05)", {"time": time})  # raised inside code run by exec, as in a dataclass's
        return None


sys.meta_path.insert(0, Trip())
from kernlink.cli import main

sys.argv = ["kernlink", *sys.argv[1:]]
sys.exit(main())
"""
"""A child interrupted while `kernlink check` imports its modules."""


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "KERNLINK_CACHE": str(tmp_path / "cache")}


def _argv(verb: str, pipeline: Path, out: Path) -> list[str]:
    argv = [verb, str(pipeline), "--color", "never"]
    if verb in ("link", "build"):
        argv += ["-o", str(out)]
    return [*argv, "--no-server"] if verb == "build" else argv


@pytest.fixture(scope="module")
def hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hello example, packed."""
    return build_example("hello", tmp_path_factory.mktemp("interrupts"))


@pytest.mark.toolchain
@pytest.mark.parametrize("verb", ["check", "link", "build"])
def test_an_interrupt_a_finalizer_swallowed_still_wins(hello: Path, tmp_path: Path, verb: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FINALIZER, *_argv(verb, hello, tmp_path / "out")],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")
    assert not (tmp_path / "out" / "link.json").exists()  # the link was never swapped in


def test_an_interrupt_during_start_up_is_130_without_a_traceback(tmp_path: Path) -> None:
    hello = ROOT / "specs" / "examples" / "hello" / "hello.kp"
    done = subprocess.run(
        [sys.executable, "-c", START_UP, "check", str(hello)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_an_ignored_sigint_stays_ignored(tmp_path: Path) -> None:
    """A background job of a script inherits SIGINT ignored: kernlink does not take it back."""
    code = (
        "import os, signal, sys\n"
        "from diagnostics import interrupts\n"
        "interrupts.install()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


def _held() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _interrupted(argv: list[str], cwd: Path, env: dict[str, str], delay: float) -> subprocess.CompletedProcess[str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "kernlink", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_held,
    )
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


@pytest.mark.toolchain
@pytest.mark.parametrize("verb", ["check", "link", "build"])
def test_interrupts_at_random_moments_never_leave_a_verdict(
    hello: Path, tmp_path: Path, request: pytest.FixtureRequest, verb: str
) -> None:
    runs = 100 if request.config.getoption("--tier") == "slow" else 3
    env, out = _env(tmp_path), tmp_path / "out"
    argv = _argv(verb, hello, out)
    whole = subprocess.run(
        [sys.executable, "-m", "kernlink", *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert whole.returncode == 0 and VERDICTS[verb] in whole.stdout and whole.stderr == "", whole
    # the interrupts fall within a run as long as the ones they interrupt: a build's first run packs,
    # every later one reuses its packages and is much shorter, so the second run is the one timed
    start = time.perf_counter()
    again = subprocess.run(
        [sys.executable, "-m", "kernlink", *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    length = time.perf_counter() - start
    assert again.returncode == 0 and again.stderr == "", again
    rng = random.Random(f"{verb}-{runs}")
    seen = {0: 0, 130: 0}
    for _ in range(runs):
        delay = rng.uniform(0.0, 1.1 * length)
        done = _interrupted(argv, tmp_path, env, delay)
        what = f"{verb} interrupted after {delay:.3f} s: exit {done.returncode}\n{done.stdout}{done.stderr}"
        assert done.returncode in seen and done.stderr == "", what
        if done.returncode == 130:
            assert done.stdout == "", what
        else:  # the whole verdict (a build's steps vary: packed first, reused after)
            assert done.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1], what
        seen[done.returncode] += 1
        if verb != "check" and (out / "link.json").exists():  # the previous link, or this one: never a mix
            assert LinkedKernel.load(out).cubin
            assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert seen[130], seen
