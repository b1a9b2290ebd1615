"""A real Hadoop MiniDFSCluster for pytest (the Maven project in ``tests/minidfs/``).

Use the session fixture ``minidfs``: from any test under ``tests/`` it is registered by
``tests/conftest.py``; elsewhere (``python/tests/``) import it into the test module or a
conftest::

    sys.path.insert(0, str(REPO / "tests"))
    from minidfs import minidfs  # noqa: F401  (the fixture)

    @pytest.mark.hdfs
    def test_read(minidfs, tmp_path):
        minidfs.put(local_file, "/data/a.parquet")
        os.environ["HADOOP_CONF_DIR"] = str(minidfs.conf_dir)
        ... read minidfs.uri("/data/a.parquet") ...

The cluster (NameNode ``hdfs://127.0.0.1:9000``, HTTP 9870, three DataNodes, 1 MiB blocks)
runs under ``flock -x /tmp/hydrofeed-minidfs.lock``: the ports are fixed, so clusters of
different processes (pytest runs, Rust tests) take turns, and the lock is released exactly when
the JVM exits. The JVM stops when its stdin closes (also when this process dies, even by
SIGKILL), halts itself after ``HYDROFEED_MINIDFS_MAX_SECS`` (default 3600), and ``stop()``
kills its process group if it has not exited 60 s after being asked to.

Maven builds the project on first use (offline first, then online). Only when Maven cannot
reach its repository does the fixture skip, saying so; ``HYDROFEED_REQUIRE_MINIDFS=1`` (CI)
turns that into a failure.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent / "minidfs"
LOCK = "/tmp/hydrofeed-minidfs.lock"
URL = "hdfs://127.0.0.1:9000"
LOCK_WAIT_S = 900
START_S = 180
# Java 17 closes JDK internals that Hadoop's HTTP server (WebHDFS: Jersey/JAXB) reflects on.
JAVA_OPENS = [
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]
_UNREACHABLE = (
    "Could not transfer",
    "Could not resolve",
    "UnknownHost",
    "Connection refused",
    "Network is unreachable",
    "offline mode",
)


class MavenUnavailable(Exception):
    """Maven cannot fetch hadoop-minicluster (no network and not in ~/.m2)."""


def build() -> str:
    """Compiles the Maven project; returns the Java classpath.

    Raises MavenUnavailable when Maven cannot reach its repository, RuntimeError otherwise.
    """
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise MavenUnavailable("mvn or java is not installed")
    args = ["-B", "-q", "compile", "dependency:build-classpath",
            "-Dmdep.outputFile=target/classpath.txt"]
    out = subprocess.run(["mvn", "-o", *args], cwd=PROJECT, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        out = subprocess.run(["mvn", *args], cwd=PROJECT, capture_output=True, text=True,
                             timeout=1200)
    if out.returncode != 0:
        text = (out.stdout + out.stderr)[-4000:]
        if any(m in text for m in _UNREACHABLE):
            raise MavenUnavailable(f"Maven cannot reach its repository:\n{text}")
        raise RuntimeError(f"building {PROJECT} failed:\n{text}")
    cp = (PROJECT / "target" / "classpath.txt").read_text().strip()
    return f"{PROJECT / 'target' / 'classes'}:{cp}"


def classpath_or_skip() -> str:
    """:func:`build`, or skip the test saying why when Maven cannot reach its repository (a
    failure under ``HYDROFEED_REQUIRE_MINIDFS=1``, as on CI)."""
    try:
        return build()
    except MavenUnavailable as e:
        if os.environ.get("HYDROFEED_REQUIRE_MINIDFS"):
            pytest.fail(f"MiniDFS required but unavailable: {e}")
        pytest.skip(f"no MiniDFS cluster: {e}")


@dataclass
class MiniDfs:
    """A running cluster. ``conf_dir`` holds the client ``core-site.xml`` (HADOOP_CONF_DIR);
    with the ``security`` flag also ``krb5.conf`` and the keytabs ``hdfs.keytab`` (the
    cluster's own principal, ``hdfs/localhost``), ``alice.keytab`` and ``bob.keytab``."""

    url: str
    conf_dir: Path
    classpath: str
    proc: subprocess.Popen = field(repr=False)
    stderr_path: Path = field(repr=False)
    lines: queue.Queue[str | None] = field(repr=False, default_factory=queue.Queue)
    flags: tuple[str, ...] = ()

    def site(self) -> dict[str, str]:
        """The client configuration the cluster wrote (``core-site.xml``), key -> value."""
        import xml.etree.ElementTree as ET

        root = ET.parse(self.conf_dir / "core-site.xml").getroot()
        return {str(p.findtext("name")): str(p.findtext("value")) for p in root.iter("property")}

    @property
    def realm(self) -> str:
        """The KDC's realm (``security`` clusters)."""
        for line in (self.conf_dir / "krb5.conf").read_text().splitlines():
            if line.strip().startswith("default_realm"):
                return line.split("=", 1)[1].strip()
        raise RuntimeError("no default_realm in krb5.conf")

    def control(self, command: str, timeout: float = 120) -> str:
        """Sends a command to the cluster's JVM ("put LOCAL PATH", "token FILE RENEWER",
        "failover", "stop-datanode", "restart-datanodes"); returns its "ok ..." answer, raises
        on "error ...". As the cluster's own user (the superuser)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        line = self.lines.get(timeout=timeout)
        if line is None or not line.startswith("ok "):
            raise RuntimeError(f"MiniDfs {command!r}: {line}")
        return line

    def uri(self, path: str) -> str:
        """``hdfs://127.0.0.1:9000`` + an absolute path."""
        return self.url + path

    def env(self) -> dict[str, str]:
        """``os.environ`` plus ``HADOOP_CONF_DIR`` for this cluster (for subprocesses)."""
        return {**os.environ, "HADOOP_CONF_DIR": str(self.conf_dir)}

    def _java(self, *args: str) -> str:
        out = subprocess.run(
            ["java", "-cp", self.classpath, "hydrofeed.MiniDfs", *args],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "HYDROFEED_HDFS_URL": self.url},
        )
        if out.returncode != 0:
            raise RuntimeError(f"MiniDfs {args} failed:\n{out.stderr[-4000:]}")
        return out.stdout

    def put(self, local: str | os.PathLike, path: str, perm: str | None = None) -> str:
        """Copies a local file to ``path`` with Hadoop's own client; returns its URI."""
        self._java("put", str(local), path, *([perm] if perm else []))
        return self.uri(path)

    def put_bytes(self, data: bytes, path: str, tmp_dir: str | os.PathLike) -> str:
        """Writes ``data`` to a file in ``tmp_dir`` and puts it at ``path``."""
        local = Path(tmp_dir) / path.strip("/").replace("/", "_")
        local.write_bytes(data)
        return self.put(local, path)

    def ls(self, path: str) -> list[tuple[int, bool, str]]:
        """``(len, is_dir, uri)`` of the children of ``path``, from Hadoop's client."""
        rows = []
        for line in self._java("ls", path).splitlines():
            n, d, p = line.split("\t")
            rows.append((int(n), d == "true", p))
        return rows

    def chmod(self, perm: str, path: str) -> None:
        """Sets octal permissions, e.g. ``"700"``."""
        self._java("chmod", perm, path)

    def stop(self) -> None:
        """Stops the cluster; kills its process group if it is still there after 60 s."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start(workdir: str | os.PathLike, classpath: str | None = None,
          flags: tuple[str, ...] = ()) -> MiniDfs:
    """Builds (if needed) and starts a cluster in ``workdir``; waits for the lock first.
    ``flags``: ``security``, ``integrity`` / ``privacy``, ``encrypt-data-transfer``, ``ha``
    (see ``MiniDfs.java``)."""
    cp = classpath or build()
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    stderr_path = work / "stderr.log"
    with open(stderr_path, "wb") as err:
        # Only the plain cluster has fixed ports (and takes its turn at the lock); a cluster
        # with flags has ephemeral ones, so it may run beside the plain one.
        lock = [] if flags else ["flock", "-x", "-w", str(LOCK_WAIT_S), LOCK]
        proc = subprocess.Popen(
            [*lock, "java", "-Xmx1g", *JAVA_OPENS,
             "-cp", cp, "hydrofeed.MiniDfs", str(work), *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            start_new_session=True,  # own process group: stop() kills flock and the JVM only
        )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.put(raw.decode(errors="replace").strip())
        lines.put(None)

    threading.Thread(target=pump, name="minidfs-stdout", daemon=True).start()
    dfs = MiniDfs(URL, work, cp, proc, stderr_path, lines, tuple(flags))
    deadline = time.monotonic() + LOCK_WAIT_S + START_S
    while True:
        left = deadline - time.monotonic()
        try:
            line = lines.get(timeout=max(left, 0.1))
        except queue.Empty:
            line = None
            left = 0
        if line == "Ready!":
            if flags:
                dfs.url = dfs.site()["fs.defaultFS"]
            return dfs
        if line is None or left <= 0:
            code = proc.poll()
            if code is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            log = stderr_path.read_text(errors="replace")[-6000:]
            raise RuntimeError(f"MiniDFS did not print Ready! (exit {code}); stderr:\n{log}")


# One cluster per process, however many test directories import the fixture: pytest keeps a
# separate session cache per place a fixture is defined, and a second cluster would wait
# forever for the lock the first one holds.
_shared: MiniDfs | None = None
_users = 0
_guard = threading.Lock()


@pytest.fixture(scope="session")
def minidfs(tmp_path_factory: pytest.TempPathFactory):
    """A MiniDFS cluster for the whole session (skips only if Maven cannot fetch Hadoop)."""
    global _shared, _users
    with _guard:
        if _shared is None:
            _shared = start(tmp_path_factory.mktemp("minidfs"), classpath_or_skip())
        _users += 1
        dfs = _shared
    try:
        yield dfs
    finally:
        with _guard:
            _users -= 1
            if _users == 0:
                _shared = None
                dfs.stop()
