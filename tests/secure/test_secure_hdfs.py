"""Production HDFS: a kerberized MiniDFSCluster (MiniKdc in the JVM, `privacy` RPC protection,
encrypted data transfer) and an HA MiniDFSCluster (two NameNodes), real processes started from
Maven, read by `hydrofeed launch` as users run it.

Every file is written by Hadoop's own client (the cluster's JVM, as its superuser); every job
checks that each row arrives exactly once. Kerberos state (ticket caches, `KRB5_CONFIG`) lives in
the test's own directory, never in the machine's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minidfs as harness

pytestmark = [pytest.mark.hdfs, pytest.mark.secure, pytest.mark.timeout(900)]

TRAINER = str(Path(__file__).resolve().parents[2] / "python" / "tests" / "launch_trainer.py")
FILES, ROWS = 4, 2500
BATCH = 50


def cluster(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str):
    if shutil.which("kinit") is None:
        pytest.fail("kinit is not installed: `make test-secure` installs krb5-user")
    dfs = harness.start(tmp_path_factory.mktemp(name), harness.classpath_or_skip(),
                        flags=tuple(flags))
    try:
        local = tmp_path_factory.mktemp(f"{name}-data")
        for i in range(FILES):
            ids = pa.array(range(i * ROWS, (i + 1) * ROWS), pa.int64())
            t = pa.table({"id": ids, "x": pa.array([float(v) for v in range(ROWS)], pa.float32())})
            pq.write_table(t, local / f"part-{i}.parquet", row_group_size=500)
            dfs.control(f"put {local / f'part-{i}.parquet'} /data/part-{i}.parquet")
        yield dfs
    finally:
        dfs.stop()


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    """Kerberos, `privacy` on RPC and data transfer, `dfs.encrypt.data.transfer`."""
    yield from cluster(tmp_path_factory, "secure", "security", "privacy", "encrypt-data-transfer")


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory):
    """Two NameNodes behind nameservice `minidfs-ns`."""
    yield from cluster(tmp_path_factory, "ha", "ha")


def krb_env(dfs: harness.MiniDfs, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user of the secure cluster: its conf and KDC, an empty ticket cache
    of the test's own (`kinit` fills it), nothing inherited that names other credentials."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KRB5", "HADOOP_TOKEN", "HYDROFEED_KERBEROS"))}
    env.update(HADOOP_CONF_DIR=str(dfs.conf_dir), KRB5_CONFIG=str(dfs.conf_dir / "krb5.conf"),
               KRB5CCNAME=f"FILE:{tmp_path / 'krb5cc'}", OUT=str(tmp_path / "out"))
    env.update(extra)
    return env


def kinit(env: dict[str, str], keytab: Path, principal: str, *args: str) -> None:
    r = subprocess.run(["kinit", *args, "-kt", str(keytab), principal], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def launch(hf_bin: str, uri: str, env: dict[str, str], *flags: str,
           workers: int = 2) -> subprocess.CompletedProcess:
    Path(env["OUT"]).mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [hf_bin, *flags, "launch", "--workers", str(workers), "--input", uri,
         "--batch-size", str(BATCH), "--epochs", "1", "--", sys.executable, TRAINER],
        env=env, capture_output=True, text=True, timeout=300)


def ids_read(env: dict[str, str], workers: int = 2) -> list[int]:
    out = Path(env["OUT"])
    ids: list[int] = []
    for r in range(workers):
        for line in (out / f"rank-{r}.jsonl").read_text().splitlines():
            ids.extend(json.loads(line).get("ids", []))
    return ids


def assert_every_row_once(r: subprocess.CompletedProcess, env: dict[str, str]) -> None:
    assert r.returncode == 0, r.stderr[-4000:]
    ids = ids_read(env)
    assert len(ids) == len(set(ids)) == FILES * ROWS  # 10000 rows: 2 ranks x 100 steps x 50
    assert set(ids) == set(range(FILES * ROWS))


def assert_clear_login_error(r: subprocess.CompletedProcess, dfs: harness.MiniDfs,
                             *says: str) -> None:
    assert r.returncode != 0
    namenode = dfs.url.split("://", 1)[1]
    lines = [ln for ln in r.stderr.splitlines() if "cannot log in to the HDFS NameNode" in ln]
    assert lines, r.stderr[-4000:]
    assert namenode in lines[0] and "kinit" in lines[0], lines[0]
    for s in says:
        assert s in lines[0], lines[0]
    assert "Traceback" not in r.stderr and "GssMajorCodes" not in r.stderr


def test_ticket_cache_with_privacy_and_encrypted_transfer(hf_bin: str, secure, tmp_path: Path) -> None:
    conf = (secure.conf_dir / "core-site.xml").read_text()
    for key, value in [("hadoop.rpc.protection", "privacy"),
                       ("dfs.data.transfer.protection", "privacy"),
                       ("dfs.encrypt.data.transfer", "true"),
                       ("hadoop.security.authentication", "kerberos")]:
        assert f"<name>{key}</name><value>{value}</value>" in conf
    env = krb_env(secure, tmp_path)
    kinit(env, secure.conf_dir / "alice.keytab", "alice")
    assert_every_row_once(launch(hf_bin, secure.uri("/data"), env), env)


def test_keytab_flags_without_a_ticket(hf_bin: str, secure, tmp_path: Path) -> None:
    env = krb_env(secure, tmp_path)
    r = launch(hf_bin, secure.uri("/data"), env, "--principal", f"alice@{secure.realm}",
               "--keytab", str(secure.conf_dir / "alice.keytab"))
    assert_every_row_once(r, env)
    assert not (tmp_path / "krb5cc").exists()  # nothing was written to the ticket cache


def test_delegation_token_only(hf_bin: str, secure, tmp_path: Path) -> None:
    # As a Spark executor or YARN container runs: no ticket anywhere, only the tokens the
    # driver obtained, in the file HADOOP_TOKEN_FILE_LOCATION names.
    tokens = tmp_path / "tokens"
    secure.control(f"token {tokens} hdfs")
    env = krb_env(secure, tmp_path, HADOOP_TOKEN_FILE_LOCATION=str(tokens))
    assert_every_row_once(launch(hf_bin, secure.uri("/data"), env), env)


def test_viewfs_mount_on_the_secure_cluster(hf_bin: str, secure, tmp_path: Path) -> None:
    env = krb_env(secure, tmp_path)
    kinit(env, secure.conf_dir / "alice.keytab", "alice")
    assert_every_row_once(launch(hf_bin, "viewfs://minidfs-viewfs/mnt/data", env), env)


def test_wrong_keytab_is_one_clear_error(hf_bin: str, secure, tmp_path: Path) -> None:
    env = krb_env(secure, tmp_path)
    principal = f"alice@{secure.realm}"
    r = launch(hf_bin, secure.uri("/data"), env, "--principal", principal,
               "--keytab", str(secure.conf_dir / "bob.keytab"))
    assert_clear_login_error(r, secure, principal, "bob.keytab", "keytab holds no usable key")


def test_expired_ticket_is_one_clear_error(hf_bin: str, secure, tmp_path: Path) -> None:
    env = krb_env(secure, tmp_path)
    # The shortest lifetime MIT kinit asks for here is a few seconds.
    kinit(env, secure.conf_dir / "alice.keytab", "alice", "-l", "8s")
    time.sleep(10)
    r = launch(hf_bin, secure.uri("/data"), env)
    # The principal comes from the ticket cache's own header.
    assert_clear_login_error(r, secure, "expired", f"principal alice@{secure.realm}",
                             f"kinit alice@{secure.realm}")


def test_keytab_from_the_hadoop_configuration(hf_bin: str, secure, tmp_path: Path) -> None:
    """An admin's core-site.xml names the principal and keytab (hydrofeed.kerberos.*): no
    flags, no ticket."""
    conf = tmp_path / "conf"
    shutil.copytree(secure.conf_dir, conf, ignore=shutil.ignore_patterns("data", "kdc"))
    site = conf / "core-site.xml"
    extra = (f"<property><name>hydrofeed.kerberos.principal</name><value>alice@{secure.realm}"
             f"</value></property><property><name>hydrofeed.kerberos.keytab</name><value>"
             f"{secure.conf_dir / 'alice.keytab'}</value></property></configuration>")
    site.write_text(site.read_text().replace("</configuration>", extra))
    env = krb_env(secure, tmp_path, HADOOP_CONF_DIR=str(conf))
    assert_every_row_once(launch(hf_bin, secure.uri("/data"), env), env)
    assert not (tmp_path / "krb5cc").exists()


def test_no_credentials_is_one_clear_error(hf_bin: str, secure, tmp_path: Path) -> None:
    env = krb_env(secure, tmp_path)
    r = launch(hf_bin, secure.uri("/data"), env)
    assert_clear_login_error(r, secure, "KRB5CCNAME")


def test_namenode_failover_mid_read_loses_no_row(hf_bin: str, ha, tmp_path: Path) -> None:
    """The active NameNode hands over while the job reads: every row still comes once."""
    env = dict(os.environ, HADOOP_CONF_DIR=str(ha.conf_dir), OUT=str(tmp_path / "out"),
               SLOW="0.02")
    Path(env["OUT"]).mkdir()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", ha.uri("/data"), "--batch-size",
         str(BATCH), "--epochs", "2", "--", sys.executable, TRAINER],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    assert p.stderr is not None
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    reader.start()
    out = Path(env["OUT"])
    deadline = time.monotonic() + 120
    # The first batches have arrived: rows are being read when the NameNodes change roles.
    while not any('"ids"' in f.read_text() for f in out.glob("rank-*.jsonl")):
        assert p.poll() is None and time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    ha.control("failover")  # nn0 standby, nn1 active, while the job is reading
    rc = p.wait(timeout=300)
    reader.join(timeout=30)
    p.stderr.close()
    assert rc == 0, err[0][-4000:]
    ids = ids_read(env)
    assert sorted(ids) == sorted(list(range(FILES * ROWS)) * 2)  # two epochs, each row once


@pytest.mark.spark
def test_spark_file_mode_reads_with_the_drivers_delegation_tokens(hf_bin: str, secure,
                                                                   tmp_path: Path) -> None:
    """TFoS on a kerberized cluster: the driver has a login, the executors have none; the
    feeders read with the HDFS delegation tokens `train_files` obtained on the driver."""
    out = tmp_path / "out"
    out.mkdir()
    empty_cache = f"FILE:{tmp_path / 'no-ticket'}"
    env = krb_env(secure, tmp_path, KRB5CCNAME=empty_cache, HYDROFEED_BIN=hf_bin,
                  JAVA_TOOL_OPTIONS=f"-Djava.security.krb5.conf={secure.conf_dir / 'krb5.conf'}",
                  PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    principal = f"alice@{secure.realm}"
    p = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "spark_token_job.py"), secure.uri("/data"),
         principal, str(secure.conf_dir / "alice.keytab"), str(out)],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, (p.stdout + p.stderr)[-5000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["finished"] is True
    ids = [i for r in res["ranks"] for i in r["ids"]]
    assert sorted(ids) == list(range(FILES * ROWS))
    assert {r["krb5ccname"] for r in res["ranks"]} == {empty_cache}  # no ticket on executors
    assert not (tmp_path / "no-ticket").exists()
