"""What runs on the executors: the barrier task that starts a node, and the node context.

Process tree on an executor, per node (rank = executor_id):

    python worker (barrier task)  --spawns-->  supervisor  --spawns-->  trainer (map_fun)
                                               |  TCP to the driver       |  Hub (feeding socket)
                                               |  output tail, exit code  |  TF_CONFIG, GPUs

The supervisor is a separate, light process (no TensorFlow) in its own session, so the node
survives the barrier task returning (InputMode.SPARK frees the task slot for the feeding tasks,
as TFoS's background mode does) and so a trainer killed by any signal, ``kill -9`` included, is
still reported to the driver with its exit status and the tail of its output.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any

from hydrofeed import _native

logger = logging.getLogger(__name__)

FEEDING_JOBS = ("chief", "master", "worker")  # TFoS's count of ctx.num_workers
NON_FEEDING_JOBS = ("ps", "evaluator")  # nodes that get no data feed
RUN_ROOT_ENV = "HYDROFEED_SPARK_DIR"
#: Prefix of the trainer's one-line error summary on its stderr. Here, not in
#: ``hydrofeed.spark.trainer``: the package must not import the module that the supervisor runs
#: with ``python -m`` (runpy warns when it is already in ``sys.modules``).
ERROR_PREFIX = "hydrofeed-error: "


def default_run_root() -> str:
    """``hydrofeed-spark-<uid>`` under ``$XDG_RUNTIME_DIR`` when set, else the temporary directory."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    base = xdg if xdg and os.path.isabs(xdg) and os.path.isdir(xdg) else tempfile.gettempdir()
    return os.path.join(base, f"hydrofeed-spark-{os.getuid()}")


def private_dir(path: str) -> str:
    """Creates ``path`` 0700, or accepts it only if it already is a directory (not a link) of this
    user that no one else can write or read: the nodes of one host meet at this predictable name,
    so a directory planted there beforehand must never be used (their sockets and specs would
    live in it)."""
    import stat

    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"{path}: not a private directory of this user (mode {stat.S_IMODE(st.st_mode):o}, "
            f"owner {st.st_uid}); remove it, or set {RUN_ROOT_ENV} to a directory of your own"
        )
    return path


def run_root() -> str:
    """Per-host, per-user directory holding every cluster's run directory (checked private)."""
    return private_dir(os.environ.get(RUN_ROOT_ENV) or default_run_root())


def run_dir(cluster_id: str, generation: int) -> str:
    """Per-host directory holding a cluster's feeding sockets and node specs."""
    return os.path.join(run_root(), f"{cluster_id}-g{generation}")


def sweep_stale(min_age_s: float = 600.0) -> int:
    """Removes what nodes killed without cleaning up (supervisor SIGKILLed, host crash) left in
    the run root: sockets nobody listens on, then specs and directories older than
    ``min_age_s`` with no live socket beside them. Returns the number of paths removed."""
    removed = 0
    root = run_root()
    now = time.time()
    try:
        dirs = [os.path.join(root, d) for d in os.listdir(root)]
    except FileNotFoundError:
        return 0
    for d in dirs:
        try:
            names = os.listdir(d)
            # Its age from before this sweep: our own unlinks below move its mtime to now.
            d_mtime = os.path.getmtime(d)
        except OSError:
            continue
        live = False
        for n in list(names):
            p = os.path.join(d, n)
            if n.startswith("feed-") and os.path.isdir(p):
                # a file-mode feeder's socket directory (the feeder died with its supervisor)
                try:
                    inner = [os.path.join(p, x) for x in os.listdir(p)]
                except OSError:
                    continue
                names.extend(os.path.relpath(x, d) for x in inner)
        for n in names:
            p = os.path.join(d, n)
            if n.endswith(".sock"):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(p)
                    live = True
                except ConnectionRefusedError:
                    try:
                        os.unlink(p)
                        removed += 1
                    except OSError:
                        pass
                except OSError:
                    live = True  # unsure: leave it
                finally:
                    s.close()
        if live:
            continue
        for n in sorted(names, reverse=True):  # files inside feed-* before the directory
            p = os.path.join(d, n)
            if n.startswith("feed-") and os.sep in n and not os.path.isdir(p):
                # what a dead feeder's supervisor wrote for it: the job CA, HDFS tokens, schema
                try:
                    os.unlink(p)
                    removed += 1
                except OSError:
                    pass
            elif n.startswith("feed-") and os.sep not in n:
                try:
                    os.rmdir(p)
                    removed += 1
                except OSError:
                    pass
        for n in names:
            p = os.path.join(d, n)
            try:
                if n.endswith(".spec") and now - os.path.getmtime(p) > min_age_s:
                    os.unlink(p)
                    removed += 1
            except OSError:
                pass
        try:
            if now - d_mtime >= min_age_s:
                os.rmdir(d)
                removed += 1
        except OSError:
            pass
    return removed


def local_host() -> str:
    """This host's address as peers should dial it.

    ``SPARK_LOCAL_IP`` wins (Spark's own knob); then the address of the default route (TFoS's
    UDP trick, which fails without a default route -- then we fall back instead of raising);
    then the host name's address."""
    ip = os.environ.get("SPARK_LOCAL_IP")
    if ip:
        return ip
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        return str(s.getsockname()[0])
    except OSError:
        pass
    finally:
        s.close()
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def hdfs_path(ctx: Any, path: str) -> str:
    """TFoS ``TFNode.hdfs_path``: absolute path with the default filesystem's scheme."""
    schemes = ("adl://", "file://", "hdfs://", "oss://", "s3://", "s3a://", "s3n://", "swift://", "viewfs://", "wasb://", "gs://", "abfs://")
    if path.startswith(schemes):
        return path
    if path.startswith("/"):
        absolute: str = ctx.defaultFS + path
        return absolute
    if ctx.defaultFS.startswith(("hdfs://", "viewfs://")):
        return f"{ctx.defaultFS}/user/{getpass.getuser()}/{path}"
    if ctx.defaultFS.startswith("file://"):
        return f"{ctx.defaultFS}/{ctx.working_dir[1:]}/{path}"
    return f"{ctx.defaultFS}/{path}"


class NodeContext:
    """The ``ctx`` handed to ``map_fun(args, ctx)``: TFoS ``TFNodeContext``'s fields and methods."""

    def __init__(
        self,
        executor_id: int,
        job_name: str,
        task_index: int,
        cluster_spec: dict[str, list[str]],
        defaultFS: str,
        working_dir: str,
        hub: Any = None,
        tmp_socket: socket.socket | None = None,
        num_gpus: int = 0,
    ) -> None:
        self.worker_num = executor_id  # TFoS's backwards-compatible alias
        self.executor_id = executor_id
        self.job_name = job_name
        self.task_index = task_index
        self.cluster_spec = cluster_spec
        self.num_workers = sum(len(v) for k, v in cluster_spec.items() if k in FEEDING_JOBS)
        self.defaultFS = defaultFS
        self.working_dir = working_dir
        self.tmp_socket = tmp_socket
        self.num_gpus = num_gpus
        self.mgr = hub  # TFoS scripts pass ctx.mgr to TFNode.DataFeed(mgr, ...)
        self._feed: Any = None

    def absolute_path(self, path: str) -> str:
        """``TFNode.hdfs_path(ctx, path)``."""
        return hdfs_path(self, path)

    def get_data_feed(self, train_mode: bool = True, qname_in: str = "input", qname_out: str = "output", input_mapping: dict[str, str] | None = None) -> Any:
        """The node's ``DataFeed`` (InputMode.SPARK, worker/chief nodes only)."""
        from hydrofeed.spark.feed import SparkDataFeed

        if qname_in != "input" or qname_out != "output":
            logger.warning("qname_in/qname_out are ignored: hydrofeed has one feed per node")
        if self._feed is None or self._feed.train_mode != train_mode or self._feed.input_mapping != input_mapping:
            self._feed = SparkDataFeed(self.mgr, train_mode, input_mapping)
        return self._feed

    def release_port(self) -> None:
        """Releases the port reserved for this node's TF server (``release_port=False``)."""
        if self.tmp_socket is not None:
            self.tmp_socket.close()
            self.tmp_socket = None
        else:
            logger.warning("release_port() invoked with no bound socket.")

    def export_saved_model(self, model: Any, export_dir: str, is_chief: bool | None = None) -> None:
        """TFoS ``compat.export_saved_model`` for TF2/Keras 3: the chief exports to ``export_dir``,
        the other nodes to a throwaway local directory (multi-worker strategies need every node
        to take part)."""
        if is_chief is None:
            is_chief = self.job_name in ("chief", "master") or (
                self.job_name == "worker" and self.task_index == 0 and not any(k in self.cluster_spec for k in ("chief", "master"))
            )
        target = export_dir if is_chief else tempfile.mkdtemp(prefix="hydrofeed-worker-model-")
        try:
            if hasattr(model, "export"):
                model.export(target)  # Keras 3: SavedModel for serving
            else:
                import tensorflow as tf

                tf.saved_model.save(model, target)
        finally:
            if not is_chief:
                # Only the chief's export is kept: the others took part in the save for the
                # multi-worker strategy's collectives.
                import shutil

                shutil.rmtree(target, ignore_errors=True)

    def start_cluster_server(self, num_gpus: int = 1, rdma: bool = False) -> Any:
        """TF1's ``tf.train.Server`` start-up does not exist in TF2."""
        raise NotImplementedError(
            "start_cluster_server() is TF1-only (tf.train.Server). In TF2 use a tf.distribute strategy, "
            "e.g. tf.distribute.MultiWorkerMirroredStrategy(): TF_CONFIG is already set for this node."
        )


# ----------------------------------------------------------------------------- barrier task


def _gpus_from_spark() -> list[str]:
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None:
        return []
    res = tc.resources() or {}
    if "gpu" in res:
        return list(res["gpu"].addresses)
    return []


def _reserve_port() -> socket.socket:
    if "TENSORFLOW_PORT" in os.environ:
        port = int(os.environ["TENSORFLOW_PORT"])
    else:
        port = 0
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    return s


def cluster_spec_of(metas: list[dict[str, Any]]) -> dict[str, list[str]]:
    """{job: ["host:port", ...]} ordered by executor_id (then by task index within a job)."""
    spec: dict[str, list[str]] = {}
    seen = set()
    for m in sorted(metas, key=lambda m: m["executor_id"]):
        if m["executor_id"] in seen:
            raise RuntimeError(f"duplicate executor_id {m['executor_id']} in the barrier stage")
        seen.add(m["executor_id"])
        spec.setdefault(m["job_name"], []).append(f"{m['host']}:{m['port']}")
    return spec


def _gather(cluster_meta: dict[str, Any], generation: int, rank: int, n: int, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Every barrier task's meta, in rank order, from the driver's control server."""
    timeout = float(cluster_meta["reservation_timeout"])
    with socket.create_connection(tuple(cluster_meta["driver_addr"]), timeout=30) as s:
        s.settimeout(timeout + 30)
        msg = {"t": "gather", "token": cluster_meta["token"], "gen": generation, "rank": rank, "n": n, "meta": meta, "timeout": timeout}
        s.sendall((json.dumps(msg) + "\n").encode())
        line = s.makefile("rb").readline()
    reply = json.loads(line or b"{}")
    if "metas" not in reply:
        raise RuntimeError(f"hydrofeed: rendezvous at the driver {cluster_meta['driver_addr']} failed: {reply.get('error', 'no answer')}")
    metas: list[dict[str, Any]] = reply["metas"]
    return metas


def barrier_node_fn(
    cluster_meta: dict[str, Any], fn_bytes: bytes, tf_args: Any, generation: int
) -> Callable[[Iterable[int]], list[str]]:
    """Returns the function run by ``nodeRDD.barrier().mapPartitions``: one node per task."""

    def _node(it: Iterable[int]) -> list[str]:
        from pyspark import BarrierTaskContext

        executor_ids = list(it)
        executor_id = int(executor_ids[0])
        ctx = BarrierTaskContext.get()
        template = cluster_meta["cluster_template"]
        job_name, task_index = "default", -1
        for job, ids in template.items():
            if executor_id in ids:
                job_name, task_index = job, ids.index(executor_id)
                break
        host = local_host()
        port_sock = _reserve_port()
        gpus = _gpus_from_spark()
        sweep_stale()
        rdir = run_dir(cluster_meta["id"], generation)
        os.makedirs(rdir, mode=0o700, exist_ok=True)
        sock_path = os.path.join(rdir, f"rank{executor_id}.sock") if (
            cluster_meta["input_mode"] == 1 and job_name not in NON_FEEDING_JOBS
        ) else None
        meta = {
            "executor_id": executor_id,
            "host": host,
            "port": port_sock.getsockname()[1],
            "job_name": job_name,
            "task_index": task_index,
            "gpus": gpus,
            "sock": sock_path,
            "pid": os.getpid(),
        }
        # The rendezvous: every task learns every other task's host/port/GPUs from Spark itself;
        # no reservation server (TFoS) or application master (TonY) is needed.
        # Spark's allGather costs a fixed second (BarrierTaskContext polls its RPC future with
        # Thread.sleep(1000)): the driver's control server gathers instead; a one-node barrier
        # has nothing to gather.
        n_tasks = len(ctx.getTaskInfos())
        if n_tasks == 1:
            metas = [meta]
        else:
            metas = _gather(cluster_meta, generation, ctx.partitionId(), n_tasks, meta)
        spec = cluster_spec_of(metas)
        # Built by the same code as hydrofeed launch's TF_CONFIG ("environment": "cloud", as TFoS).
        tf_config = json.loads(_native.tf_config(json.dumps(spec), job_name, task_index, "cloud"))
        from pyspark import cloudpickle

        node_spec = {
            "fn": fn_bytes,
            "tf_args": cloudpickle.dumps(tf_args),
            "meta": meta,
            "cluster_spec": spec,
            "tf_config": tf_config,
            "cluster_meta": cluster_meta,
            "generation": generation,
            "port_fd": port_sock.fileno(),
        }

        spec_path = os.path.join(rdir, f"rank{executor_id}.spec")
        # Another node's supervisor on this host removes the run directory when it finds it empty
        # at exit (its trainer may already be done): (re)create it right before writing.
        for attempt in range(3):
            os.makedirs(rdir, mode=0o700, exist_ok=True)
            try:
                fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        # Plain pickle of plain values (fn and tf_args are cloudpickled bytes): the supervisor and
        # the trainer read it without importing pyspark (0.36 s each, on the start-up path).
        with os.fdopen(fd, "wb") as f:
            pickle.dump(node_spec, f)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        sup = subprocess.Popen(
            [sys.executable, "-m", "hydrofeed.spark.supervisor", spec_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            pass_fds=(port_sock.fileno(),),
            start_new_session=True,
        )
        port_sock.close()
        assert sup.stdout is not None
        line = _read_line(sup, float(cluster_meta["reservation_timeout"]))
        if not line.startswith("READY"):
            try:
                sup.kill()
            except OSError:
                pass
            raise RuntimeError(
                f"hydrofeed node {job_name}:{task_index} (executor {executor_id} on {host}) did not start: {line or 'no answer'}"
            )
        sup.stdout.close()
        if cluster_meta["input_mode"] == 1:
            # InputMode.SPARK: free the slot for feeding tasks; the supervisor reports to the driver.
            return [json.dumps(meta)]
        code = _wait(sup)
        if code != 0:
            raise RuntimeError(
                f"hydrofeed node {job_name}:{task_index} (executor {executor_id} on {host}) failed "
                f"with exit code {code}; the driver log has its output tail"
            )
        return [json.dumps(meta)]

    return _node


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    import select

    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([proc.stdout], [], [], 0.2)
        if r:
            ch = os.read(proc.stdout.fileno(), 4096)
            if not ch:
                break
            buf += ch
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0].decode(errors="replace")
        elif proc.poll() is not None:
            break
    return buf.decode(errors="replace") or (f"supervisor exited with code {proc.poll()}" if proc.poll() is not None else f"timed out after {timeout}s")


def _wait(proc: subprocess.Popen[bytes]) -> int:
    # Short waits so the task stays responsive to Spark's kill (barrier stage failure).
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue
