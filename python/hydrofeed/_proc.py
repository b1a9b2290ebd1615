"""Finding the `hydrofeed` binary and running `hydrofeed serve` as a child that never outlives us."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import TracebackType

_ROOT = Path(__file__).resolve().parents[2]


def hydrofeed_bin() -> str:
    """The `hydrofeed` binary: `HYDROFEED_BIN` (an override), else the one installed with this
    package (the wheel puts it in the environment's scripts directory, beside `python`: so a
    Spark executor's shipped environment, `./env/bin/python`, finds `./env/bin/hydrofeed`), else
    a source checkout's target/release or target/debug build, else `PATH`."""
    env = os.environ.get("HYDROFEED_BIN")
    if env:
        return env
    candidates = [Path(sys.executable).parent / "hydrofeed",
                  Path(sysconfig.get_path("scripts")) / "hydrofeed",
                  _ROOT / "target/release/hydrofeed", _ROOT / "target/debug/hydrofeed"]
    for p in candidates:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    found = shutil.which("hydrofeed")
    if found:
        return found
    raise FileNotFoundError(
        "no hydrofeed binary: pip install the hydrofeed wheel (it carries the binary), set "
        "HYDROFEED_BIN, or build it (make build)"
    )


def gen(out: Path, fmt: str, rows: int, files: int = 1) -> None:
    """`hydrofeed gen` (MNIST-shaped rows)."""
    subprocess.run(
        [hydrofeed_bin(), "gen", "--format", fmt, "--rows", str(rows), "--files", str(files),
         "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


class ServeProcess:
    """`hydrofeed serve` in a child process; killed on exit of the `with` block, whatever
    happened (exceptions, Ctrl-C), and on SIGTERM of this process."""

    def __init__(self, input: str, *args: str, socket: str | None = None) -> None:
        self._dir = tempfile.mkdtemp(prefix="hydrofeed-")
        self.socket = socket or os.path.join(self._dir, "feed.sock")
        self.args = [hydrofeed_bin(), "serve", "--input", input, "--socket", self.socket, *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self._old_term: object = None

    def __enter__(self) -> ServeProcess:
        self.proc = subprocess.Popen(self.args)
        self._old_term = signal.getsignal(signal.SIGTERM)

        def on_term(signum: int, frame: object) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, on_term)
        return self

    def stop(self) -> None:
        """Kills the server if it still runs (its stderr goes to ours)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            self.proc.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def wait(self, timeout: float = 30.0) -> int:
        """Waits for the server to exit; returns its exit status."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        code = self.proc.poll()
        return -1 if code is None else code

    def __exit__(
        self,
        et: type[BaseException] | None,
        ev: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)  # type: ignore[arg-type]
