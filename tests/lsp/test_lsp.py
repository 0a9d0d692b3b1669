"""`kernlink lsp`, driven through its protocol messages over stdio as an editor would."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.slow_inputs import rings

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
ROOT = Path(__file__).resolve().parents[2]


class Client:
    """An editor's side of the protocol: messages sent as written, every message received queued
    by a reader thread (so a test can wait for one with a time limit)."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernlink", "lsp"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        self.next_id = 0
        self.received: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._reader, daemon=True).start()

    def send(self, method: str, params: dict[str, Any], *, request: bool = False) -> int | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = msg["id"] = self.next_id
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return ident

    def _reader(self) -> None:
        assert self.proc.stdout is not None
        while True:
            length = 0
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    self.received.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.received.put(json.loads(self.proc.stdout.read(length)))

    def read(self, timeout: float = 120.0) -> dict[str, Any]:
        try:
            message = self.received.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the server within {timeout} s") from None
        assert message is not None, self.proc.stderr.read().decode() if self.proc.stderr else "server closed"
        return message

    def until(self, predicate: Any, timeout: float = 120.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        for _ in range(10_000):
            msg = self.read(max(0.0, end - time.monotonic()))
            if predicate(msg):
                return msg
        raise AssertionError("no such message")

    def diagnostics_for(self, uri: str, timeout: float = 120.0) -> list[dict[str, Any]]:
        msg = self.until(
            lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri, timeout
        )
        result: list[dict[str, Any]] = msg["params"]["diagnostics"]
        return result

    def ping(self, timeout: float) -> float:
        """Seconds until the server answers a request (one it does not know: the answer is an error)."""
        start = time.monotonic()
        ident = self.send("kernlink/ping", {}, request=True)
        self.until(lambda m: m.get("id") == ident, timeout)
        return time.monotonic() - start

    def close(self) -> None:
        ident = self.send("shutdown", {}, request=True)
        self.until(lambda m: m.get("id") == ident)
        self.send("exit", {})
        self.proc.wait(timeout=10)


@pytest.fixture
def client(tmp_path: Path) -> Any:
    shutil.copytree(EXAMPLES / "ring", tmp_path / "ring", ignore=shutil.ignore_patterns("build", "host"))
    c = Client(tmp_path)
    ident = c.send("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}, request=True)
    init = c.until(lambda m: m.get("id") == ident)
    assert init["result"]["serverInfo"]["name"] == "kernlink"
    c.send("initialized", {})
    yield c
    c.close()


def _open(c: Client, path: Path, text: str | None = None) -> str:
    uri = path.resolve().as_uri()
    c.send(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": uri,
                "languageId": "kernlink",
                "version": 1,
                "text": text if text is not None else path.read_text(),
            }
        },
    )
    return uri


def test_a_broken_contract_is_reported_where_it_breaks(client: Client, tmp_path: Path) -> None:
    reduce = tmp_path / "ring" / "reduce.kc"
    reduce.write_text(reduce.read_text().replace("empty arrive per_warp(reduce)", "empty arrive 1"))
    uri = _open(client, reduce)
    diags = client.diagnostics_for(uri)
    assert diags, "the arrival count disagreement is published on reduce.kc"
    assert any(d["code"].startswith("L-") and d["severity"] == 1 for d in diags)
    assert all(d["source"] == "kernlink" and "range" in d for d in diags)


def test_typing_publishes_syntax_errors_then_clears_them(client: Client, tmp_path: Path) -> None:
    loader = tmp_path / "ring" / "loader.kc"
    uri = _open(client, loader)
    assert [d for d in client.diagnostics_for(uri) if d["severity"] == 1] == []
    broken = loader.read_text().replace("ring kv produce", "rign kv produce")
    client.send(
        "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": broken}]}
    )
    (diag,) = client.diagnostics_for(uri)
    assert diag["code"] == "E-SYNTAX" and diag["range"]["start"]["line"] == broken.split("\n").index(
        next(line for line in broken.split("\n") if "rign" in line)
    )
    client.send(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": loader.read_text()}]},
    )
    assert client.diagnostics_for(uri) == []


def _change(c: Client, uri: str, version: int, text: str) -> None:
    c.send(
        "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}
    )


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_buffer_over_the_size_limit_is_one_diagnostic_and_the_server_stays_responsive(
    client: Client, tmp_path: Path
) -> None:
    """Issue 32 item 8: a 6.9 MiB buffer changed 10 times kept the server unresponsive for 133 s at 1.6 GB."""
    loader = tmp_path / "ring" / "loader.kc"
    uri = _open(client, loader)
    client.diagnostics_for(uri)
    head, tail = loader.read_text().rsplit("}", 1)
    claims = "".join(f"    claim smem pad{i} bytes 16\n" for i in range(260_000))
    assert len(head) + len(claims) > 6.9 * (1 << 20)
    for version in range(2, 12):
        _change(client, uri, version, head + claims + f"    # edit {version}\n}}" + tail)
    assert client.ping(timeout=30) < 30
    (diag,) = client.diagnostics_for(uri, timeout=60)
    assert diag["code"] == "E-TOO-LARGE" and diag["range"]["start"] == {"line": 0, "character": 0}
    assert "over the limit of 1048576 bytes" in diag["message"]
    assert _peak_rss(client.proc.pid) < 600 << 20


def test_a_burst_of_edits_is_parsed_once_for_the_last_text(client: Client, tmp_path: Path) -> None:
    loader = tmp_path / "ring" / "loader.kc"
    uri = _open(client, loader)
    client.diagnostics_for(uri)
    lines = loader.read_text().split("\n")
    for version in range(2, 22):  # each edit breaks another line; the last one breaks line 10
        broken = list(lines)
        broken[version % 8 + 3 if version < 21 else 10] = "    rign"
        _change(client, uri, version, "\n".join(broken))
    (diag,) = client.diagnostics_for(uri, timeout=60)
    assert diag["code"] == "E-SYNTAX" and diag["range"]["start"]["line"] == 10
    client.send("kernlink/ping", {}, request=True)
    later = client.until(lambda m: m.get("id") is not None or m.get("method") == "textDocument/publishDiagnostics")
    assert "id" in later, f"a second parse was published: {later}"


def test_a_check_runs_off_the_message_thread_and_a_stale_one_is_cancelled(tmp_path: Path) -> None:
    """A save checked on the message thread; now the worker checks, the server answers meanwhile, and a
    newer save cancels the running check instead of waiting for it (a minute, here)."""
    folder = tmp_path / "big"
    folder.mkdir()
    pipeline = rings(folder)
    c = Client(tmp_path)
    try:
        ident = c.send(
            "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}, request=True
        )
        c.until(lambda m: m.get("id") == ident)
        c.send("initialized", {})
        uri = _open(c, pipeline)
        time.sleep(3)  # the slow check is under way
        assert c.ping(timeout=30) < 30  # a check on the message thread answered after it: a minute on
        rings(folder, depth="2")  # fixed depths: a check of seconds
        c.send("textDocument/didSave", {"textDocument": {"uri": uri}})
        # the new check's verdict first: the stale one would have published E-SOLVER-BUDGET after its minute
        assert c.diagnostics_for(uri, timeout=120) == []
    finally:
        c.close()
