"""`kernlink serve`: start, stop or ask after the build server (kernlink/builder/server.py)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="keep a build server resident: a one-shot `kernlink build` then pays no start-up",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--stop", action="store_true", help="stop the running server of this kernlink")
    what.add_argument("--status", action="store_true", help="say whether a server of this kernlink is running")
    what.add_argument(
        "--foreground", action="store_true", help="serve in this process (until idle or stopped) instead of detaching"
    )
    p.add_argument(
        "--idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="exit after this long without a request (default 900)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a build that runs longer than this (default 600): one stalled build never blocks the next",
    )
    p.set_defaults(run=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from kernlink.builder import server
    from kernlink.exit_codes import EXIT_OK, EXIT_USAGE

    idle = server.IDLE_SECONDS if args.idle is None else args.idle
    timeout = server.BUILD_SECONDS if args.timeout is None else args.timeout
    for option, value in (("--idle", idle), ("--timeout", timeout)):
        if not 0 < value < float("inf"):
            print(f"error: {option} needs a positive number of seconds", file=sys.stderr)
            return EXIT_USAGE
    try:
        if args.stop:
            print("stopped the build server" if server.stop() else "no build server of this kernlink is running")
            return EXIT_OK
        if args.status:
            found = server.status()
            if found is None:
                print(f"no build server of this kernlink is running (key {server.server_key()})")
                return EXIT_OK
            print(
                f"build server pid {found.get('pid')}: {found.get('builds')} builds served, "
                f"{found.get('waiting')} waiting (key {found.get('key')})"
            )
            return EXIT_OK
        if args.foreground:
            return server.serve(idle, timeout=timeout, ready=lambda path: print(f"listening on {path}", flush=True))
        found = server.start(idle, timeout=timeout)
    except server.ServerError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:  # the runtime folder or the socket: an I/O error, not a kernlink bug
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    print(f"build server pid {found.get('pid')} is running; it exits after {idle:g} s without a request")
    return EXIT_OK
