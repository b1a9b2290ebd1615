"""File mode (``TFCluster.train_files``): feeders on the executors read the files themselves.

Spark moves no data here. The driver runs a ``hydrofeed coordinator`` (row-range leases, equal
steps per rank, epochs, end of feed, resume state); each feeding node's supervisor runs a
``hydrofeed feeder`` for its trainer; the trainer's :class:`~hydrofeed.spark.feed.SparkDataFeed`
attaches to that feeder's shared-memory ring when its hub gets the ``files`` message::

    driver: coordinator (gRPC, token) <------- feeder (per node, reads HDFS/local, decodes)
            Control --files--> supervisor --starts--> feeder --ring--> trainer (DataFeed)
                                          --FILES frame (ring socket)--> trainer's hub

This module holds the pieces of each side: on the driver, :func:`train_files` (the feed and its
resumes after gang restarts, :class:`FileFeed`, with :class:`FileFeedOptions`) and
:class:`Coordinator`; on the supervisor, :class:`Feeder`; on the trainer, :func:`open_ring`
and :func:`ring_env`; and the planning helpers (``total_rows``, ``steps_per_epoch``, resume
states). Starting the children and reading their output is :mod:`hydrofeed.spark.children`'s.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from hydrofeed.exceptions import ArgumentError, TrainerFailedError

# Defined in hydrofeed.exceptions; still importable from here.
from hydrofeed.exceptions import FeedFilesError as FeedFilesError

# Moved to hydrofeed.spark.children; still importable from here.
from hydrofeed.spark.children import die_with_parent as die_with_parent
from hydrofeed.spark.children import pump as pump
from hydrofeed.spark.children import spawn as spawn
from hydrofeed.spark.children import write_private as write_private
from hydrofeed.spark.children import write_schema as write_schema
from hydrofeed.spark.children import write_tokens as write_tokens

if TYPE_CHECKING:
    from hydrofeed.feed import DataFeed
    from hydrofeed.spark.gang import Gang

logger = logging.getLogger(__name__)

#: The coordinator's remainder policies (``hydrofeed coordinator --remainder``).
REMAINDERS = ("drop", "pad", "wrap")
#: Formats the feeder reads.
FORMATS = ("parquet", "orc", "avro", "tfrecord")

_LISTEN_RE = re.compile(r"listening on (\S+)")
# What the coordinator says of a table input: the version its feeders must read.
_SNAPSHOT_RE = re.compile(r"start the feeders with --snapshot (\d+)")


class Coordinator:
    """``hydrofeed coordinator`` as a child of the driver (killed with it: PR_SET_PDEATHSIG).

    The token travels in the environment (``HYDROFEED_TOKEN``), never in a file or argv.
    """

    def __init__(
        self,
        uri: str,
        workers: int,
        batch_size: int,
        epochs: int,
        seed: int,
        shuffle: bool,
        remainder: str,
        host: str,
        resume: str | None = None,
        fmt: str | None = None,
        start_timeout: float = 120.0,
        schema: str | None = None,
        order: list[str] | None = None,
        hdfs_tokens: str | None = None,
        tls: bool = True,
        allow_changed_input: bool = False,
        snapshot: str | None = None,
        filter: str | None = None,
    ) -> None:
        from hydrofeed._proc import hydrofeed_bin

        self.uri = uri
        self.token = os.urandom(16).hex()
        self._dir = tempfile.mkdtemp(prefix="hydrofeed-coord-")
        self.state_path = os.path.join(self._dir, "state.json")
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self._pending = b""
        listen_ip = _ip_of(host)
        with socket.socket() as s:  # a free port for the metrics endpoint (progress)
            s.bind((listen_ip, 0))
            metrics_port = s.getsockname()[1]
        args = [
            hydrofeed_bin(), "coordinator",
            "--input", uri,
            "--workers", str(workers),
            "--batch-size", str(batch_size),
            "--listen", f"{listen_ip}:0",
            "--state-out", self.state_path,
            "--metrics", f"{listen_ip}:{metrics_port}",
        ]  # fmt: skip
        if resume is not None:
            args += ["--resume", resume]
            if allow_changed_input:
                args.append("--allow-changed-input")
        else:
            args += ["--epochs", str(epochs), "--seed", str(seed), "--remainder", remainder]
            if not shuffle:
                args.append("--no-shuffle")
            args += order or []
        if fmt is not None:
            args += ["--format", fmt]
        if snapshot is not None:
            args += ["--snapshot", snapshot]
        if filter is not None:
            args += ["--filter", filter]
        if schema is not None:
            args += ["--schema", write_schema(self._dir, schema)]
        if tls:
            # A CA made for this job by the coordinator; the feeders and trainers trust it.
            args += ["--tls-job-dir", self._dir, "--tls-name", host]
        self.proc = spawn(args, self.token, write_tokens(self._dir, hdfs_tokens) if hdfs_tokens else None)
        self.metrics_url = f"http://{listen_ip}:{metrics_port}/metrics"
        line = self._read_until_listening(start_timeout)
        m = _LISTEN_RE.search(line)
        if m is None:
            self.close()
            raise FeedFilesError(
                f"hydrofeed: the coordinator for {uri} did not start (stage: planning the input): "
                + " | ".join(list(self.tail)[-8:])
            )
        port = int(m.group(1).rsplit(":", 1)[1])
        self.addr = f"{host}:{port}"
        #: The table version the coordinator planned (a Delta table input), for the feeders.
        self.snapshot: str | None = None
        for seen in self.tail:
            found = _SNAPSHOT_RE.search(seen)
            if found is not None:
                self.snapshot = found.group(1)
        #: The PEM of the job's CA (``None``: plain gRPC).
        self.tls_ca: str | None = None
        if tls:
            with open(os.path.join(self._dir, "tls-ca.pem")) as f:
                self.tls_ca = f.read()
        self._pumper = pump(self.proc, self.tail, lambda line: logger.info("[coordinator] %s", line),
                            pending=self._pending)

    def _read_until_listening(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        buf = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if not r:
                if self.proc.poll() is not None:
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode(errors="replace")
                self.tail.append(line)
                if "listening on" in line:
                    # What came with it (TLS, token file, metrics lines) goes to the pump.
                    self._pending = buf
                    return line
        return ""


    def notify_exit(self, cond: threading.Condition) -> None:
        """Notifies ``cond`` when the coordinator exits (waiters wake at once, not at a poll)."""

        def wait() -> None:
            self.proc.wait()
            with cond:
                cond.notify_all()

        threading.Thread(target=wait, name="hydrofeed-coordinator-wait", daemon=True).start()

    def poll(self) -> int | None:
        """Exit status, or None while it runs (it exits once every epoch was consumed)."""
        return self.proc.poll()

    def rows_acked(self) -> int | None:
        """Rows the trainers consumed so far (from the metrics endpoint), None if unknown."""
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("hydrofeed_coord_rows_acked_total"):
                return int(float(line.split()[-1]))
        return None

    def interrupt(self, timeout: float = 10.0) -> str | None:
        """Stops it (SIGINT: it writes its resumable state first); returns the state's JSON."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.state()

    def state(self) -> str | None:
        """The state written at exit (``None`` before, or if it could not write one)."""
        try:
            with open(self.state_path) as f:
                return f.read()
        except OSError:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Kills it if still running and removes its directory."""
        self.kill()
        if hasattr(self, "_pumper"):
            self._pumper.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def _ip_of(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return "0.0.0.0"


def hdfs_delegation_tokens(sc: Any, uri: str) -> str | None:
    """Driver side: HDFS delegation tokens for ``uri``'s file system, obtained by the driver's
    own Hadoop client (its Kerberos login: a ticket, ``spark.kerberos.keytab``, or the tokens
    YARN gave it), with the tokens the driver already holds, as a Hadoop token storage file
    (base64). ``None`` when ``uri`` is not on HDFS or Hadoop security is off.

    Executors have no Kerberos tickets; their feeders read with these tokens
    (``HADOOP_TOKEN_FILE_LOCATION``), as YARN containers do. Spark keeps its own tokens inside
    the executor JVMs, where a feeder process cannot see them."""
    import base64

    scheme, sep, _ = uri.partition("://")
    if not sep or scheme not in ("hdfs", "viewfs"):
        return None
    jvm = sc._jvm
    ugi = jvm.org.apache.hadoop.security.UserGroupInformation
    conf = sc._jsc.hadoopConfiguration()
    ugi.setConfiguration(conf)
    if not ugi.isSecurityEnabled():
        return None
    user = ugi.getCurrentUser()
    creds = jvm.org.apache.hadoop.security.Credentials(user.getCredentials())
    fs = jvm.org.apache.hadoop.fs.Path(uri).getFileSystem(conf)
    try:
        fs.addDelegationTokens(user.getShortUserName(), creds)
    except Exception as e:  # py4j's error carries the Java exception's text
        raise FeedFilesError(
            f"hydrofeed: cannot get HDFS delegation tokens for {uri} as {user.getUserName()} on "
            f"the driver (stage: credentials); run `kinit` there or set spark.kerberos.principal "
            f"and spark.kerberos.keytab: {str(e).splitlines()[0][:400]}"
        ) from None
    out = jvm.java.io.ByteArrayOutputStream()
    creds.writeTokenStorageToStream(jvm.java.io.DataOutputStream(out))
    return base64.b64encode(bytes(out.toByteArray())).decode()


# ----------------------------------------------------------------------------- supervisor side


class Feeder:
    """One ``hydrofeed feeder`` run by a node's supervisor for its trainer."""

    def __init__(self, msg: dict[str, Any], host: str, run_dir: str, log: Callable[[str], None]) -> None:
        from hydrofeed._proc import hydrofeed_bin

        self.msg = msg
        self.rank = int(msg["data_rank"])
        self.dir = os.path.join(run_dir, f"feed-{msg['job']}-{self.rank}")
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.socket = os.path.join(self.dir, f"rank-{self.rank}.sock")
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self.stopped = False  # stopped by the supervisor (not a failure of its own)
        self.watcher: threading.Thread | None = None
        args = [
            hydrofeed_bin(), "feeder",
            "--input", msg["input"],
            "--coordinator", msg["coordinator"],
            "--socket-dir", self.dir,
            "--trainers", "1",
            "--ranks", str(self.rank),
            "--host", host,
            "--accept-timeout", str(float(msg["feed_timeout"])),
            "--stall-timeout", str(float(msg["feed_timeout"])),
            "--memory-mb", str(int(msg.get("memory_mb", 512))),
        ]  # fmt: skip
        if msg.get("columns"):
            args += ["--columns", ",".join(msg["columns"])]
        if msg.get("format"):
            args += ["--format", msg["format"]]
        if msg.get("snapshot"):
            args += ["--snapshot", str(msg["snapshot"])]
        if msg.get("filter"):
            args += ["--filter", msg["filter"]]
        if msg.get("images"):
            args += ["--images", msg["images"]]
        if msg.get("skip_errors"):
            args.append("--skip-errors")
        if msg.get("decode_threads"):
            args += ["--decode-threads", str(int(msg["decode_threads"]))]
        if msg.get("schema"):
            args += ["--schema", write_schema(self.dir, msg["schema"])]
        #: The job CA's file (``None``: plain gRPC), for the feeder and the trainer.
        self.tls_ca: str | None = None
        if msg.get("tls_ca"):
            self.tls_ca = write_private(os.path.join(self.dir, "tls-ca.pem"), msg["tls_ca"].encode())
            args += ["--tls-ca", self.tls_ca]
        env = write_tokens(self.dir, msg["hdfs_tokens"]) if msg.get("hdfs_tokens") else None
        self.proc = spawn(args, msg["token"], env)
        self._pumper = pump(self.proc, self.tail, lambda line: log(f"[feeder rank {self.rank}] {line}"))


    def wait(self) -> int:
        """Waits for the exit; returns its status once its output was read to the end."""
        code = self.proc.wait()
        self._pumper.join(5)
        if self.proc.stdout is not None and not self._pumper.is_alive():
            self.proc.stdout.close()
        return code

    def stop(self) -> None:
        """Terminates it (SIGTERM, SIGKILL after 5 s) and removes its socket directory."""
        if self.proc.poll() is None:
            self.stopped = True
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def hub_message(self) -> dict[str, Any]:
        """What the trainer needs to attach: ring socket, and the coordinator for ``state()``."""
        m = self.msg
        return {
            "socket": self.socket,
            "coordinator": m["coordinator"],
            "token": m["token"],
            "rank": self.rank,
            "workers": int(m["workers"]),
            "batch_size": int(m["batch_size"]),
            "feed_timeout": float(m["feed_timeout"]),
            "tls_ca": self.tls_ca,
        }


# ----------------------------------------------------------------------------- trainer side


def ring_env(msg: dict[str, Any]) -> dict[str, str]:
    """Environment a ring :class:`hydrofeed.DataFeed` reads for ``state()``/``metrics()``."""
    return {
        "HYDROFEED_COORDINATOR": str(msg["coordinator"]),
        "HYDROFEED_TOKEN": str(msg["token"]),
        "HYDROFEED_RANK": str(msg["rank"]),
        "HYDROFEED_NUM_WORKERS": str(msg["workers"]),
        **({"HYDROFEED_TLS_CA": str(msg["tls_ca"])} if msg.get("tls_ca") else {}),
    }


def open_ring(msg: dict[str, Any]) -> DataFeed:
    """Attaches to the feeder named in a ``files`` message; returns a :class:`hydrofeed.DataFeed`."""
    from hydrofeed.feed import DataFeed

    os.environ.update(ring_env(msg))
    return DataFeed(
        address=msg["socket"],
        batch_size=int(msg["batch_size"]),
        timeout=float(msg["feed_timeout"]),
        connect_timeout=float(msg["feed_timeout"]),
    )


# ----------------------------------------------------------------------------- planning


def schema_text(schema: Any) -> str:
    """A ``pyarrow.Schema`` as text for the job's JSON messages: its Arrow IPC stream, base64."""
    import base64

    import pyarrow as pa

    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
    sink = pa.BufferOutputStream()
    pa.ipc.new_stream(sink, schema).close()
    return base64.b64encode(sink.getvalue().to_pybytes()).decode()


def order_args(order: str | None, shuffle_buffer: int, cycle_length: int | None) -> list[str]:
    """The coordinator's order flags of ``train_files``."""
    if order not in (None, "fixed", "dynamic"):
        raise ArgumentError(f"order must be 'fixed' or 'dynamic', not {order!r}")
    if shuffle_buffer < 0:
        raise ArgumentError("shuffle_buffer cannot be negative")
    args = ["--order", order] if order else []
    if shuffle_buffer:
        args += ["--shuffle-buffer", str(int(shuffle_buffer))]
    if cycle_length is not None:
        args += ["--cycle-length", str(int(cycle_length))]
    return args


def state_summary(state: str | None) -> str:
    """'epoch E, N rows acked in the open epochs' of a coordinator state."""
    import json

    if not state:
        return "no state (starting over)"
    st = json.loads(state)
    led = st.get("ledgers", [])
    done = sum(len(x.get("done", [])) for x in led)
    part = sum(len(x.get("partial", [])) for x in led)
    return f"epoch {st.get('epoch')}, {st.get('steps_done')} steps done, {done} splits fully and {part} partly consumed in the open epoch(s)"


def state_text(resume: Any) -> str | None:
    """A resume state given as a dict, JSON text or a path -> JSON text."""
    import json

    if resume is None:
        return None
    if isinstance(resume, dict):
        return json.dumps(resume)
    text = str(resume)
    if text.lstrip().startswith("{"):
        return text
    with open(text) as f:
        return f.read()


def total_rows(uri: str, fmt: str | None = None) -> int:
    """Rows in ``uri`` (file, directory or glob; local or ``hdfs://``), from the files' metadata
    (``hydrofeed inspect``: footers and indexes, no data is decoded)."""
    import json

    from hydrofeed._proc import hydrofeed_bin

    args = [hydrofeed_bin(), "inspect", "--json", uri] + (["--format", fmt] if fmt else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise FeedFilesError(f"hydrofeed inspect {uri} failed: {out.stderr.strip()[-2000:]}")
    return int(json.loads(out.stdout)["total_rows"])


def steps_per_epoch(rows: int, workers: int, batch_size: int, remainder: str = "drop") -> int:
    """Steps every worker takes in an epoch of ``train_files`` (the same on every worker):
    ``floor(rows / (workers * batch_size))`` under ``drop``, ``ceil`` under ``pad`` (under
    ``wrap`` an epoch after one that borrowed rows may have a step fewer: see docs/arch/coord.md).

    A synchronous training loop (``MultiWorkerMirroredStrategy``) can run exactly this many
    steps per epoch; nothing is skipped or left waiting."""
    if remainder not in REMAINDERS:
        raise ArgumentError(f"remainder must be one of {REMAINDERS}")
    per_step = workers * batch_size
    return rows // per_step if remainder == "drop" else -(-rows // per_step)


# ----------------------------------------------------------------------------- driver: the feed


@dataclass(frozen=True)
class FileFeedOptions:
    """``TFCluster.train_files``' arguments, checked and made plain, for every attempt of one
    file feed (a restarted gang gets the same ones; ``seed`` is drawn once)."""

    uri: str
    format: str | None
    columns: list[str] | None
    epochs: int  #: ``num_epochs``, 0 made 10
    shuffle: bool
    seed: int
    batch_size: int
    remainder: str
    feed_timeout: float
    skip_errors: bool
    memory_mb: int
    decode_threads: int
    schema: str | None  #: :func:`schema_text`
    order: list[str]  #: the coordinator's order flags (:func:`order_args`)
    tls: bool
    allow_changed_input: bool
    snapshot: str | None
    filter: str | None  #: the rows read: those this SQL predicate holds for
    images: str | None = None  #: image columns decoded (docs/formats.md, "Images")

    @classmethod
    def of(
        cls,
        uri: str,
        *,
        format: str | None,
        columns: list[str] | str | None,
        num_epochs: int,
        shuffle: bool,
        seed: int | None,
        batch_size: int,
        remainder: str,
        feed_timeout: float,
        allow_changed_input: bool,
        skip_errors: bool,
        memory_mb: int,
        decode_threads: int,
        schema: Any,
        shuffle_buffer: int,
        cycle_length: int | None,
        order: str | None,
        tls: bool,
        snapshot: int | str | None,
        filter: str | None = None,
        images: str | None = None,
    ) -> FileFeedOptions:
        """Checks ``train_files``' arguments (:class:`ArgumentError`, a ``ValueError``) and
        makes the options of them; ``columns`` may be a comma-separated string."""
        if format is not None and format not in FORMATS:
            raise ArgumentError(f"format must be one of {FORMATS}, not {format!r}")
        if remainder not in REMAINDERS:
            raise ArgumentError(f"remainder must be one of {REMAINDERS}, not {remainder!r}")
        if batch_size < 1:
            raise ArgumentError("batch_size must be at least 1")
        if num_epochs < 0:
            raise ArgumentError("num_epochs cannot be negative")
        if filter is not None and (not isinstance(filter, str) or not filter.strip()):
            raise ArgumentError(f"filter must be a SQL predicate (a non-empty str), not {filter!r}")
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        return cls(
            uri=uri,
            format=format,
            columns=list(columns) if columns else None,
            epochs=num_epochs or 10,
            shuffle=bool(shuffle),
            seed=int(seed) if seed is not None else (secrets.randbits(63) if shuffle else 0),
            batch_size=int(batch_size),
            remainder=remainder,
            feed_timeout=float(feed_timeout),
            skip_errors=bool(skip_errors),
            memory_mb=int(memory_mb),
            decode_threads=int(decode_threads),
            schema=schema_text(schema) if schema is not None else None,
            order=order_args(order, shuffle_buffer, cycle_length),
            tls=bool(tls),
            allow_changed_input=bool(allow_changed_input),
            snapshot=None if snapshot is None else str(snapshot),
            filter=filter,
            images=images,
        )

    def feeder_fields(self) -> dict[str, Any]:
        """What a feeder's ``files`` message carries of them (:class:`Feeder` reads these)."""
        return {
            "format": self.format,
            "columns": self.columns,
            "batch_size": self.batch_size,
            "feed_timeout": self.feed_timeout,
            "skip_errors": self.skip_errors,
            "memory_mb": self.memory_mb,
            "decode_threads": self.decode_threads,
            "schema": self.schema,
            "filter": self.filter,
            "images": self.images,
        }


def train_files(gang: Gang, o: FileFeedOptions, resume: Any) -> dict[str, Any]:
    """The driver's side of ``TFCluster.train_files``: feeds the file input to the gang's
    feeding nodes, starting from ``resume`` (:func:`state_text`); a failure that restarts the
    gang resumes from the rows consumed before it. Returns the coordinator's final state."""
    state = state_text(resume)
    while True:
        gen = gang.gen
        attempt = FileFeed(gang, o, state)
        try:
            return attempt.run()
        except Exception as e:
            outcome = gang.await_outcome(gen, timeout=60.0) if not isinstance(e, (FeedFilesError, TimeoutError)) else "failed"
            if outcome == "restarted":
                state = attempt.resume_state or state
                logger.warning(
                    "hydrofeed: cluster restarted after a failure; the file feed resumes from the rows consumed before it: %s",
                    state_summary(state),
                )
                continue
            if gang.error is not None and not isinstance(e, FeedFilesError):
                raise gang.error from e
            raise


class FileFeed:
    """One file feed on the gang's current generation: a coordinator, a feeder per feeding node.

    ``resume_state``: where a restarted gang resumes, the state this attempt started from,
    replaced by the coordinator's when :meth:`run` is interrupted."""

    def __init__(self, gang: Gang, options: FileFeedOptions, resume_state: str | None) -> None:
        self.gang = gang
        self.options = options
        self.resume_state = resume_state

    def run(self) -> dict[str, Any]:
        """Feeds once; returns the coordinator's final state (every row acked)."""
        import json

        o = self.options
        g = self.gang
        g.raise_if_failed()
        gen = g.gen
        ranks = g.feeding_ranks()
        ctl = g.server
        job = secrets.token_hex(4)
        resume_path = None
        if self.resume_state:
            fd, resume_path = tempfile.mkstemp(prefix="hydrofeed-resume-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                f.write(self.resume_state)
        tokens = hdfs_delegation_tokens(g.sc, o.uri)
        try:
            coord = Coordinator(
                o.uri, len(ranks), o.batch_size, o.epochs, o.seed, o.shuffle, o.remainder,
                host=g.cluster_meta["driver_addr"][0], resume=resume_path, fmt=o.format, schema=o.schema,
                order=o.order, hdfs_tokens=tokens, tls=o.tls,
                allow_changed_input=o.allow_changed_input, snapshot=o.snapshot, filter=o.filter,
            )  # fmt: skip
        finally:
            if resume_path:
                os.unlink(resume_path)
        logger.info("hydrofeed: file feed %s of %s to %d workers (coordinator %s)", job, o.uri, len(ranks), coord.addr)
        finished = False
        coord.notify_exit(ctl.cond)
        try:
            for i, r in enumerate(ranks):
                msg = {"t": "files", "job": job, "coordinator": coord.addr, "token": coord.token, "input": o.uri,
                       "data_rank": i, "workers": len(ranks), "hdfs_tokens": tokens,
                       "tls_ca": coord.tls_ca, "snapshot": coord.snapshot}  # fmt: skip
                msg.update(o.feeder_fields())
                ctl.send(gen, r, msg)
            t0 = last_t = time.monotonic()
            last_acked = -1
            next_probe = t0

            def feeders_done() -> bool:
                nodes = ctl.gen_nodes(gen)
                return all(r in nodes and nodes[r].feeders.get(job, {}).get("code") == 0 for r in ranks)

            while True:
                code = coord.poll()
                if code is None and feeders_done():
                    # Every feeder left after its end of feed, so every row was acked and no
                    # call to the coordinator is in flight: no need to wait for its linger.
                    coord.interrupt()
                    code = 0 if coord.state() else coord.poll()
                if code == 0:
                    finished = True
                    break
                self._check(gen, job, coord, code)
                now = time.monotonic()
                if now >= next_probe:
                    next_probe = now + 5.0
                    acked = coord.rows_acked()
                    if acked is not None and acked != last_acked:
                        if last_acked >= 0:
                            logger.info("hydrofeed: file feed %s: %d rows consumed, %.0f rows/s", job, acked, acked / max(now - t0, 1e-9))
                        last_acked, last_t = acked, now
                    elif now - last_t > o.feed_timeout:
                        raise TimeoutError(
                            f"hydrofeed: file feed of {o.uri}: no row consumed for feed_timeout={o.feed_timeout}s "
                            f"({max(last_acked, 0)} rows so far); the trainers stopped reading?"
                        )
                ctl.wait_for(
                    lambda: coord.poll() is not None or feeders_done() or g.gen != gen or g.failed_node_locked(gen) is not None,
                    0.2,
                )
            state: dict[str, Any] = json.loads(coord.state() or "{}")
            if not state.get("finished"):
                raise FeedFilesError(f"hydrofeed: the coordinator of file feed {job} stopped before the end of the feed: {state}")
            # The feeders leave once their trainer read the end of this feed.
            ctl.wait_for(lambda: all(job in ctl.gen_nodes(gen)[r].feeders for r in ranks if r in ctl.gen_nodes(gen)), 30)
            logger.info("hydrofeed: file feed %s done in %.1fs", job, time.monotonic() - t0)
            return state
        finally:
            if not finished:
                self.resume_state = coord.interrupt() or self.resume_state
            coord.close()

    def _check(self, gen: int, job: str, coord: Coordinator, code: int | None) -> None:
        """Raises if a feeder, the coordinator or a node of the feed failed."""
        from hydrofeed.spark import failures as _failures

        g = self.gang
        ctl = g.server

        def failed_feeder() -> tuple[int, dict[str, Any]] | None:
            for r, n in sorted(ctl.gen_nodes(gen).items()):
                f = n.feeders.get(job)
                if f is not None and f["code"] != 0 and not f["stopped"]:
                    return r, f
            return None

        with ctl.cond:
            bad = failed_feeder()
            node = g.failed_node_locked(gen)
        if bad is None and node is not None:
            # The trainer usually fails *because* its feeder did (PeerLostError): give the
            # feeder's report, which names the file and offset, a moment to arrive.
            ctl.wait_for(lambda: failed_feeder() is not None, 2.0)
            with ctl.cond:
                bad = failed_feeder()
        if bad is not None and node is not None and not _failures.lost_its_feeder(node):
            bad = None  # the trainer failed (killed, raised) and its feeder saw it go: blame the trainer
        if bad is not None:
            r, f = bad
            m = ctl.gen_nodes(gen)[r].meta
            errs = [x for x in f["tail"] if "rror" in x]
            why = _failures.error_summary(f["tail"]) or (errs[-1] if errs else f"exit code {f['code']}")
            tail = "\n".join("    " + x for x in f["tail"][-15:])
            raise FeedFilesError(
                f"hydrofeed: the feeder of rank {r} ({m.get('job_name')}:{m.get('task_index')} on {m.get('host')}) "
                f"failed (stage: reading/decoding {coord.uri}): {why}; last output lines:\n{tail}"
            )
        if node is not None:
            raise TrainerFailedError(node, _failures.describe(node))
        if g.gen != gen:
            raise RuntimeError("hydrofeed: the cluster restarted during the file feed")
        if code is not None:
            tail = "\n".join("    " + x for x in list(coord.tail)[-15:])
            raise FeedFilesError(f"hydrofeed: the coordinator exited with code {code} (stage: coordinating the file feed); last output lines:\n{tail}")
