"""`kernlink check --watch` and `kernlink build --watch`: run again whenever an input changes.

For a check, the inputs are the files named on the command line, the contracts (``.kc``)
beside each pipeline and the packages (``.kpkg``) under its ``build/`` folder; a build
lists its own (kernlink/builder/incremental.py: what each compile opened, contracts, flags, providers, and
paths that must stay absent). A change is a new, removed or modified file (size or
modification time) among the inputs listed before the run; a path a run adds to the list
(a build learns what its compile opened) is compared from the end of that run on. Polling
keeps it dependency-free and works on every filesystem; a run happens at most once per
change burst.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: Each listed input: its size and modification time, or None while it does not exist.
Snapshot = dict[Path, tuple[int, int] | None]


def watched(paths: Sequence[str | Path]) -> list[Path]:
    files: set[Path] = set()
    for given in map(Path, paths):
        folder = given if given.is_dir() else given.parent
        if not given.is_dir():
            files.add(given)
        for pattern in ("*.kp", "*.kc", "build/*.kpkg"):
            files.update(folder.glob(pattern))
    return sorted(files)


def snapshot(paths: Sequence[str | Path], files: Callable[[Sequence[str | Path]], list[Path]] = watched) -> Snapshot:
    state: Snapshot = {}
    for path in files(paths):
        try:
            st = path.stat()
        except OSError:
            state[path] = None
            continue
        state[path] = (st.st_size, st.st_mtime_ns)
    return state


def _after(before: Snapshot, now: Snapshot) -> Snapshot:
    """The state to compare with once a run is done: as before it for the inputs listed then, as now
    for the ones the run added (a save during the run is a change; a newly listed file is not)."""
    return {path: before.get(path, value) for path, value in now.items()}


def _display(path: Path) -> str:
    """A path as the user named it: relative to the working directory when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def changed(before: Snapshot, after: Snapshot) -> list[Path]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def watch(
    paths: Sequence[str | Path],
    run: Callable[[], int],
    *,
    say: Callable[[str], None],
    poll: float = 0.3,
    runs: int | None = None,
    files: Callable[[Sequence[str | Path]], list[Path]] = watched,
    verb: str = "checking",
) -> int:
    """Run ``run`` now and after every change; ``runs`` bounds the number of runs (None: until interrupted).

    ``files`` lists the inputs to watch for ``paths`` (asked again at each poll: an edit can add one).
    """
    state = snapshot(paths, files)  # before the run: a save during a check is a change to check again
    status = _once(run)
    state = _after(state, snapshot(paths, files))
    count = 1
    try:
        while runs is None or count < runs:
            time.sleep(poll)
            now = snapshot(paths, files)
            moved = changed(state, now)
            if not moved:
                continue
            time.sleep(poll)  # let a burst of writes (an editor's save) settle
            before = snapshot(paths, files)  # taken before the run, as above
            shown = ", ".join(_display(p) for p in moved[:3])
            say(f"--- {shown}{' …' if len(moved) > 3 else ''} changed: {verb} again")
            status = _once(run)
            state = _after(before, snapshot(paths, files))
            count += 1
    except KeyboardInterrupt:
        return 0
    return status


def _once(run: Callable[[], int]) -> int:
    """One run, a command of its own: the verdict it prints commits only it, so Ctrl-C still ends the watch."""
    from diagnostics import interrupts

    with interrupts.command():
        return run()
