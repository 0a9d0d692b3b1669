"""`kernlink lsp`, driven through its protocol messages over stdio as an editor would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
ROOT = Path(__file__).resolve().parents[2]


class Client:
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

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read().decode() if self.proc.stderr else "server closed"
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message: dict[str, Any] = json.loads(self.proc.stdout.read(length))
        return message

    def until(self, predicate: Any) -> dict[str, Any]:
        for _ in range(50):
            msg = self.read()
            if predicate(msg):
                return msg
        raise AssertionError("no such message")

    def diagnostics_for(self, uri: str) -> list[dict[str, Any]]:
        msg = self.until(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        result: list[dict[str, Any]] = msg["params"]["diagnostics"]
        return result

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
