"""Launch overhead of a linked kernel from Python: raw driver call vs `kernlink.Session` vs CUDA graph.

    python bench/session.py              # a table
    python bench/session.py --json       # the same figures as JSON

Needs a GPU. Links the `hello` example (one tiny block of work, so the launch path is
what is measured), then times, on one stream and after a warm-up:
  * raw: `cuLaunchKernel` called directly from cuda.bindings with a prebuilt argument array;
  * session: `Session.launch()` (arguments bound once);
  * graph: one `cuGraphLaunch` of a graph of 100 captured launches, per launch;
each as the host time of N enqueues (median of 5 trials, microseconds per launch), and the
time until the stream drains. Also checks that the graph's result equals a plain launch's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuda.bindings import driver  # noqa: E402

from kernlink.api import link  # noqa: E402
from runtime.launch import GpuSession, check_cuda  # noqa: E402
from runtime.session import Session  # noqa: E402
from tests.link.examples import build_example  # noqa: E402


def _trial(enqueue: object, launches: int, sync: object) -> tuple[float, float]:
    start = time.perf_counter()
    for _ in range(launches):
        enqueue()  # type: ignore[operator]
    host = time.perf_counter()
    sync()  # type: ignore[operator]
    end = time.perf_counter()
    return (host - start) / launches * 1e6, (end - start) / launches * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=20_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kl-session-"))
    pipeline = build_example("hello", work)
    result = link([pipeline], work / "out")
    assert result.ok, [d.message for d in result.diagnostics]
    rows = []
    with GpuSession() as gpu, Session(work / "out") as s:
        buf = gpu.alloc(4 * 128)
        s.bind(data=buf, n=128)
        fn, stream, params = s._function, s.stream, s._params  # the session's own prebuilt call

        def raw() -> None:
            (err,) = driver.cuLaunchKernel(
                fn, 1, 1, 1, s.linked.threads, 1, 1, s.linked.dynamic_smem, stream, params, 0
            )
            check_cuda(err, "cuLaunchKernel")

        graph = s.capture(launches=100, grid=1)
        for name, enqueue, per in (
            ("raw cuLaunchKernel", raw, 1),
            ("Session.launch", lambda: s.launch(1), 1),
            ("graph replay (100 launches each)", graph.replay, 100),
        ):
            for _ in range(200):
                enqueue()
            s.synchronize()
            trials = [_trial(enqueue, args.launches // per, s.synchronize) for _ in range(5)]
            rows.append(
                {
                    "path": name,
                    "host_us_per_launch": statistics.median(t[0] for t in trials) / per,
                    "drained_us_per_launch": statistics.median(t[1] for t in trials) / per,
                }
            )
    out = {"launches": args.launches, "kernel": "hello (1 block)", "rows": rows}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'path':36} {'host µs/launch':>15} {'drained µs/launch':>18}")
        for r in rows:
            print(f"{r['path']:36} {r['host_us_per_launch']:15.2f} {r['drained_us_per_launch']:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
