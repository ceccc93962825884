"""docs/quickstart.md, walked exactly as written: its ``sh`` blocks are the commands.

The blocks of the section headed "(terminal 1)" run as one long-lived process (``palimpsest up``,
stopped with Ctrl-C at the end); every other ``sh`` block runs, in order, in "terminal 2": one
shell command at a time through bash, carrying its exported variables and working directory on,
starting in a git repository this test makes (the doc says to ``cd`` into one). The environment is
a user's: no ``PALIMPSEST_*`` but a scratch ``PALIMPSEST_HOME``, the CLI on ``PATH`` as
``source .venv/bin/activate`` puts it, so ``up`` starts its embedded PostgreSQL and NATS. The
default ports of the ingest API (8080) and the ops endpoint (9090) are held by the test (or by
someone else on this machine) while it runs, as a Prometheus or another service holds them on many
a machine: ``up`` must listen elsewhere and say where.

Then the system Chromium opens the web view at the address ``up`` printed, signs in with the token
the doc's ``token create`` printed, and finds the indexed repository and its page.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from palimpsest.core.settings import BaseServiceSettings
from palimpsest.ingest.settings import Settings as IngestSettings
from tests.support import browser
from tests.support.gitrepo import commit, init_repo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "quickstart.md"
TERMINAL_1 = "(terminal 1)"
UP_DEADLINE_S = 600.0  # a guard against hanging forever, not an assertion about speed
COMMAND_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Block:
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Ran:
    command: str
    stdout: str
    stderr: str


def sh_blocks(markdown: str) -> list[Block]:
    """The doc's fenced ``sh`` blocks, each with the ``##`` heading it sits under."""
    blocks: list[Block] = []
    heading = ""
    lines = iter(markdown.splitlines())
    for line in lines:
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.startswith("```"):
            info = line[3:].strip()
            body = []
            for inner in lines:
                if inner.startswith("```"):
                    break
                body.append(inner)
            if info == "sh":
                blocks.append(Block(heading, "\n".join(body)))
    return blocks


def shell_commands(block: str) -> list[str]:
    """The block's complete shell commands: lines joined until bash parses them as a whole."""
    commands: list[str] = []
    pending: list[str] = []
    for line in block.splitlines():
        if not pending and not line.strip():
            continue
        pending.append(line)
        text = "\n".join(pending)
        if subprocess.run(["bash", "-n", "-c", text], capture_output=True, check=False).returncode == 0:
            commands.append(text)
            pending = []
    assert not pending, f"an incomplete shell command in docs/quickstart.md: {pending}"
    return commands


class Terminal:
    """One interactive shell, one command at a time: exports and ``cd`` carry on to the next."""

    def __init__(self, env: dict[str, str], cwd: Path, scratch: Path) -> None:
        self.env = dict(env)
        self.cwd = cwd
        self.scratch = scratch
        self.ran: list[Ran] = []

    def run(self, command: str) -> Ran:
        env_file, cwd_file = self.scratch / "env", self.scratch / "cwd"
        script = f'{command}\nenv -0 > "{env_file}"\nprintf %s "$PWD" > "{cwd_file}"\n'
        out = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        stdout, stderr = out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")
        assert out.returncode == 0, f"`{command}` exited {out.returncode}:\n{stdout}\n{stderr}"
        pairs = (item.split("=", 1) for item in env_file.read_bytes().decode().split("\0") if "=" in item)
        self.env = {k: v for k, v in pairs if k not in ("PWD", "OLDPWD", "SHLVL", "_")}
        self.cwd = Path(cwd_file.read_text())
        ran = Ran(command, stdout, stderr)
        self.ran.append(ran)
        return ran


def user_environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "palimpsest").exists(), f"no palimpsest CLI in {venv_bin}"
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    env["PALIMPSEST_HOME"] = str(home)
    return env


DEFAULT_PORTS = (
    int(IngestSettings.model_fields["ingest_port"].default),
    int(BaseServiceSettings.model_fields["ops_port"].default),
)


@contextmanager
def taken(*ports: int) -> Iterator[None]:
    """Hold ``ports`` on loopback; one that something else already holds is taken all the same."""
    held: list[socket.socket] = []
    try:
        for port in ports:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", port))
                sock.listen()
            except OSError:
                sock.close()
                continue
            held.append(sock)
        yield
    finally:
        for sock in held:
            sock.close()


def wait_for_line(proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str]) -> re.Match[str]:
    deadline = time.monotonic() + UP_DEADLINE_S
    while True:
        found = pattern.search(log.read_text(errors="replace"))
        if found is not None:
            return found
        assert proc.poll() is None, f"`palimpsest up` exited {proc.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"`palimpsest up` is not running yet:\n{log.read_text()}"
        time.sleep(0.5)


def test_the_doc_is_a_walkthrough() -> None:
    """The parts the test relies on exist: ``up`` in terminal 1, then a token and an index."""
    blocks = sh_blocks(DOC.read_text())
    first = [b for b in blocks if TERMINAL_1 in b.heading]
    started = [c for b in first for c in shell_commands(b.text)]
    assert len(started) == 1 and started[0].startswith("palimpsest up"), started  # one long-lived command
    later = [c for b in blocks if TERMINAL_1 not in b.heading for c in shell_commands(b.text)]
    assert any(c.startswith("palimpsest token create") for c in later), later
    readme = (ROOT / "README.md").read_text()
    assert "(docs/quickstart.md)" in readme.split("\n## ", 1)[0]  # linked from the README's first screen


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh PALIMPSEST_HOME outside pytest's tmp_path: the embedded PostgreSQL runs as its own
    system user (as root), which must reach the data directory, and pytest keeps resetting its
    temporary root to 0700 (other sessions on this machine do it too)."""
    with tempfile.TemporaryDirectory(prefix="palimpsest-quickstart-") as tmp:
        yield Path(tmp) / "home"


async def test_the_quickstart_as_written_ends_signed_in_on_the_repository(tmp_path: Path, home: Path) -> None:
    why = browser.missing()
    if why is not None:
        pytest.skip(why)
    blocks = sh_blocks(DOC.read_text())
    env = user_environment(home)
    repo = init_repo(tmp_path / "inventory", branch="trunk")
    sha = commit(
        repo,
        "2026-01-05",
        {
            "README.md": "# inventory\n\nCall `count_items` from `src/stock.py`.\n",
            "src/stock.py": "def count_items(items):\n    return len(items)\n",
        },
    )

    with taken(*DEFAULT_PORTS):
        await _walk(blocks, env, home, repo, sha, tmp_path)


async def _walk(
    blocks: list[Block], env: dict[str, str], home: Path, repo: Path, sha: str, tmp_path: Path
) -> None:
    log = tmp_path / "terminal-1.log"
    terminal_1 = " && ".join(c for b in blocks if TERMINAL_1 in b.heading for c in shell_commands(b.text))
    with log.open("wb") as sink:
        up = subprocess.Popen(
            ["bash", "-c", f"exec {terminal_1}"],
            cwd=repo,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_line(up, log, re.compile(r"^running; Ctrl-C stops", re.M))  # up has said all it says
        printed = log.read_text()
        web = re.search(r"^web view\s+(http://127\.0\.0\.1:\d+/ui/)\s", printed, re.M)
        assert web is not None, printed
        web_url = web.group(1)
        assert re.search(r"^token\s+palimpsest token create --tenant TENANT --scope read", printed, re.M)
        assert f"operator token (every tenant) is in {home / 'admin-token'}" in printed
        ops = re.search(r"^ops\s+(http://127\.0\.0\.1:\d+)/healthz", printed, re.M)
        assert ops is not None, printed
        assert httpx.get(f"{ops.group(1)}/healthz", timeout=10).status_code == 200

        terminal_2 = Terminal(env, repo, tmp_path)
        for block in blocks:
            if TERMINAL_1 not in block.heading:
                for command in shell_commands(block.text):
                    terminal_2.run(command)

        made = [r for r in terminal_2.ran if r.command.startswith("palimpsest token create")]
        assert len(made) == 1, [r.command for r in terminal_2.ran]
        tokens = re.findall(r"^api_token\s+(pal_\S+)$", made[0].stdout, re.M)
        assert len(tokens) == 1, made[0].stdout
        token = tokens[0]
        indexed = [r for r in terminal_2.ran if r.command.startswith("palimpsest index")]
        assert len(indexed) == 1 and "(ready)" in indexed[0].stdout, indexed
        assert f"commit     {sha}" in indexed[0].stdout

        with browser.chromium(tmp_path / "profile") as b:
            await b.get(web_url)
            assert "/ui/sign-in" in await b.url()
            assert "API token" in await b.text()
            await b.fill_and_submit("token", token)
            signed_in = await b.url()
            assert re.search(r"/ui/t/[0-9a-f-]{36}/$", signed_in), signed_in  # the tenant's repositories
            listing = await b.text()
            assert "Repositories" in listing and "inventory" in listing, listing
            assert sha[:12] in listing and "ready" in listing, listing
            await b.click('a[href*="/r/"]')
            assert "/r/" in await b.url()
            page = await b.text()
            assert "inventory" in page and "Recent snapshots" in page, page
            assert sha[:12] in page, page

        admin_token = (home / "admin-token").read_text().strip()
        everything = log.read_text() + "".join(r.stdout + r.stderr for r in terminal_2.ran)
        assert admin_token not in everything  # never printed by up nor by any command
        assert token not in log.read_text()
    finally:
        up.send_signal(signal.SIGINT)  # Ctrl-C in terminal 1
        try:
            up.wait(120)
        finally:
            if up.poll() is None:
                up.kill()
    assert up.returncode == 0, log.read_text()
    assert not (home / "stack.json").exists()


def test_up_on_an_ops_port_given_and_taken_is_one_line(home: Path) -> None:
    env = {**user_environment(home), "PALIMPSEST_OPS_PORT": str(DEFAULT_PORTS[1])}
    with taken(DEFAULT_PORTS[1]):
        out = subprocess.run(
            ["palimpsest", "up"], env=env, capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    stderr = out.stderr.decode()
    assert out.returncode == 2, stderr
    assert f"127.0.0.1:{DEFAULT_PORTS[1]} (in use)" in stderr and "PALIMPSEST_OPS_PORT" in stderr
    assert "Traceback" not in stderr
    assert not (home / "postgres").exists()  # refused before any server started
