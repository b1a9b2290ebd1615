"""Writes the Iceberg tables of ``test_iceberg_deletes.py`` with Apache Iceberg's own Java
library (``iceberg-spark-runtime`` from Maven, in the JVM of a local PySpark session) and
records Iceberg's own read of every snapshot.

Run as a separate process (``python spark_iceberg_writer.py OUT``). Each table ``OUT/<name>/``
is a Hadoop table (``metadata/version-hint.text``); ``OUT/done.json`` holds, for every table and
snapshot id, the rows Iceberg's generic reader (``IcebergGenerics``, which applies delete files)
returns at it, as sorted ``[id, k, x]`` lists, and the snapshot ids in commit order.

Why not Spark SQL: the newest runtime Maven serves is ``iceberg-spark-runtime-4.1_2.13:1.12.0``
(there is none for Spark 4.2), and Spark 4.2 refuses its catalogs: ``SparkCatalog`` fails to
load (``IncompatibleClassChangeError``: ``SparkView`` implements
``org.apache.spark.sql.connector.catalog.View``, a class in Spark 4.2), and, with bytecode
verification off, Spark refuses it as a catalog that "implements both TableCatalog and
ViewCatalog directly" (Spark 4.2 asks for ``RelationCatalog``); ``SparkSessionCatalog`` the
same. So the tables are written with the library Spark's writer itself calls: Parquet data files
(``GenericFileWriterFactory``), position delete files (format v2), deletion vectors in Puffin
files (format v3, ``BaseDVFileWriter``), equality delete files, each committed as Iceberg's
``RowDelta`` does.

Tables:

- ``pos``: format v2, unpartitioned, 3 data files; a position delete file over two of them and
  one over the third (``id % 10 = 3``); an append; a second delete (``id`` in 500..1499) whose
  file covers files already holding deletes.
- ``pos_part``: format v2, partitioned by ``k`` (identity), row groups of about 1,000 rows;
  deletes within each partition across row groups.
- ``dv``: format v3, 2 data files; deletion vectors (``id % 10 = 3``), then a second delete
  whose vectors hold the first's rows too and replace them (at most one per data file).
- ``eq``: format v2, unpartitioned, 2 data files; an equality delete file on ``id``; an append
  of ids it deleted (not deleted: the file is newer); an equality delete file on ``(id, k)``.
- ``pos_resume``: format v2, 12,000 rows in 3 data files; a position delete file, then another
  (for a resume after more deletes).
- ``eq_part``: format v2, partitioned by ``pad`` (identity, null in some rows), ``bucket(2, id)``
  and ``truncate(100, id)``; equality delete files in one partition (on ``k``, on ``id``), then
  the spec loses its fields: an append and an equality delete file of the unpartitioned spec
  (global), and one more of the first spec's partition.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
DV_DELETE = ("java.lang.String", "long", "org.apache.iceberg.PartitionSpec", "org.apache.iceberg.StructLike")


def method(obj: Any, name: str, types: tuple[str, ...]) -> Any:
    """The Java method `name` of parameter types `types` of `obj`'s class, to call with
    `invoke`: looked up once per call site, not per row (the lookup walks every method of the
    class over the gateway)."""
    for m in obj.getClass().getMethods():
        if m.getName() == name and tuple(t.getName() for t in m.getParameterTypes()) == types:
            return m
    raise AttributeError(f"{obj.getClass().getName()} has no method {name}{types}")


def invoke(gateway: Any, m: Any, obj: Any, *args: Any) -> Any:
    """Calls the Java method `m` (from `method`) on `obj` through reflection, which widens an
    ``Integer`` to a ``long`` parameter (py4j hands a small Python int over as an ``Integer``
    and finds no method taking a ``long``)."""
    a = gateway.new_array(gateway.jvm.java.lang.Object, len(args))
    for i, v in enumerate(args):
        a[i] = v
    return m.invoke(obj, a)


class Writer:
    """One Iceberg table written through the Java library (``jvm``: the py4j view of it)."""

    def __init__(self, jvm: Any, conf: Any, gateway: Any, location: str, version: int,
                 partitioned: bool | Any, props: dict[str, str] | None = None) -> None:
        ice = jvm.org.apache.iceberg
        self.jvm, self.ice, self.gateway = jvm, ice, gateway
        T = ice.types.Types
        fields = jvm.java.util.ArrayList()
        # int, not long: py4j hands a small Python int to an Object parameter as an Integer
        fields.add(T.NestedField.required(1, "id", T.IntegerType.get()))
        fields.add(T.NestedField.required(2, "k", T.IntegerType.get()))
        fields.add(T.NestedField.optional(3, "x", T.DoubleType.get()))
        fields.add(T.NestedField.optional(4, "pad", T.StringType.get()))
        schema = ice.Schema(fields)
        b = ice.PartitionSpec.builderFor(schema)
        # `partitioned`: by k (identity), or a function of the spec builder
        spec = (partitioned(b).build() if callable(partitioned)
                else b.identity("k").build() if partitioned else ice.PartitionSpec.unpartitioned())
        p = jvm.java.util.HashMap()
        p.put("format-version", str(version))
        for key, value in (props or {}).items():
            p.put(key, value)
        self.table = ice.hadoop.HadoopTables(conf).create(schema, spec, p, location)
        self.parquet = ice.FileFormat.PARQUET
        self.schema, self.spec = schema, spec
        self.writers = self._factory().build()
        self.task = 0
        # file path -> ids in row order: a row's position is its index
        self.files: dict[str, list[int]] = {}
        self.data_files: dict[str, Any] = {}

    def _factory(self) -> Any:
        b = getattr(self.ice.data, "GenericFileWriterFactory$Builder")(self.table)
        return b.dataFileFormat(self.parquet).deleteFileFormat(self.parquet)

    def _out(self, fmt: Any = None) -> Any:
        self.task += 1
        return self.ice.io.OutputFileFactory.builderFor(self.table, 1, self.task) \
            .format(fmt or self.parquet).build()

    def _partition(self, k: int | None) -> Any:
        if k is None:
            return None
        key = self.ice.PartitionKey(self.spec, self.schema)
        r = self.ice.data.GenericRecord.create(self.schema)
        r.setField("k", k)
        key.partition(r)
        return key

    def _record(self, row: dict[str, Any], schema: Any = None) -> Any:
        r = self.ice.data.GenericRecord.create(schema or self.schema)
        for n, v in row.items():
            r.setField(n, v)
        return r

    def _key_of(self, spec: Any, row: dict[str, Any]) -> Any:
        """The partition key (of `spec`) of the row `row`."""
        key = self.ice.PartitionKey(spec, self.schema)
        key.partition(self._record(row))
        return key.copy()

    def append_rows(self, rows: list[dict[str, Any]]) -> None:
        """Commits `rows`, one data file per partition of the table's current spec (a row holds
        every column)."""
        spec = self.table.spec()
        groups: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
        for row in rows:
            key = self._key_of(spec, row) if spec.isPartitioned() else None
            name = key.toPath() if key is not None else ""
            groups.setdefault(name, (key, []))[1].append(row)
        app = self.table.newAppend()
        for name in sorted(groups):
            key, group = groups[name]
            out = self._out().newOutputFile(spec, key) if key is not None \
                else self._out().newOutputFile()
            w = self.writers.newDataWriter(out, spec, key)
            for row in group:
                w.write(self._record(row))
            w.close()
            df = w.toDataFile()
            self.files[df.location()] = [r["id"] for r in group]
            app.appendFile(df)
        app.commit()

    def append(self, groups: list[list[int]], k: int | None = None) -> None:
        """Commits one data file per list of ids (rows in that order)."""
        app = self.table.newAppend()
        for ids in groups:
            part = self._partition(k)
            out = self._out().newOutputFile(self.spec, part) if part is not None \
                else self._out().newOutputFile()
            w = self.writers.newDataWriter(out, self.spec, part)
            # each row a copy of one holding the column all rows share: fewer gateway calls
            template = self.ice.data.GenericRecord.create(self.schema)
            template.setField("pad", "p" * 40)
            for i in ids:
                r = template.copy()
                r.setField("id", i)
                r.setField("k", i % 3)
                r.setField("x", float(i) / 3)
                w.write(r)
            w.close()
            df = w.toDataFile()
            self.files[df.location()] = list(ids)
            self.data_files[df.location()] = df
            app.appendFile(df)
        app.commit()

    def positions(self, pred: Any) -> dict[str, list[int]]:
        """The positions of the rows `pred` holds for, by data file."""
        out = {}
        for path, ids in self.files.items():
            pos = [p for p, i in enumerate(ids) if pred(i)]
            if pos:
                out[path] = pos
        return out

    def position_deletes(self, groups: list[dict[str, list[int]]], k: int | None = None) -> None:
        """Commits one position delete file per dict (data file -> positions)."""
        delta = self.table.newRowDelta()
        for g in groups:
            part = self._partition(k)
            out = self._out().newOutputFile(self.spec, part) if part is not None \
                else self._out().newOutputFile()
            w = self.writers.newPositionDeleteWriter(out, self.spec, part)
            create = self.ice.deletes.PositionDelete.create
            set_ = method(create(), "set", ("java.lang.CharSequence", "long"))
            for path in sorted(g):
                for pos in g[path]:
                    d = create()
                    invoke(self.gateway, set_, d, path, pos)
                    w.write(d)
            w.close()
            delta.addDeletes(w.toDeleteFile())
        delta.commit()

    def deletion_vectors(self, g: dict[str, list[int]], replaced: list[Any]) -> list[Any]:
        """Commits deletion vectors (one per data file of `g`, in one Puffin file) that replace
        the vectors `replaced`; returns the new ones."""
        jvm = self.jvm

        class NoPrevious:
            """The vectors hold every row deleted so far: nothing to merge."""

            def apply(self, path: Any) -> None:
                return None

            class Java:
                implements = ["java.util.function.Function"]

        w = self.ice.deletes.BaseDVFileWriter(self._out(self.ice.FileFormat.PUFFIN), NoPrevious())
        delete = method(w, "delete", DV_DELETE)
        for path in sorted(g):
            df = self.data_files[path]
            part = df.partition()
            for pos in g[path]:
                invoke(self.gateway, delete, w, path, pos, self.spec, part)
        w.close()
        new = list(w.result().deleteFiles())
        delta = self.table.newRowDelta()
        # the vectors replaced are this snapshot's: none was added concurrently
        delta.validateFromSnapshot(self.table.currentSnapshot().snapshotId())
        for d in new:
            delta.addDeletes(d)
        for d in replaced:
            delta.removeDeletes(d)
        delta.commit()
        return new

    def equality_deletes(self, keys: list[dict[str, int]], k: int | None = None,
                         spec_id: int | None = None, row: dict[str, Any] | None = None) -> None:
        """Commits an equality delete file of the rows `keys` (the columns of the first key,
        in the partition of ``k = k`` where given, or in that of the row `row` under the spec
        `spec_id`: unpartitioned where it has no fields)."""
        names = list(keys[0])
        cols = self.jvm.java.util.ArrayList()
        for n in names:
            cols.add(n)
        eq = self.schema.select(cols)
        field_ids = self.gateway.new_array(self.jvm.int, len(names))
        for j, n in enumerate(names):
            field_ids[j] = self.schema.findField(n).fieldId()
        f = self._factory().equalityFieldIds(field_ids).equalityDeleteRowSchema(eq).build()
        spec = self.table.specs().get(spec_id) if spec_id is not None else self.spec
        part = self._partition(k) if row is None else \
            self._key_of(spec, row) if spec.isPartitioned() else None
        out = self._out().newOutputFile(spec, part) if part is not None \
            else self._out().newOutputFile()
        w = f.newEqualityDeleteWriter(out, spec, part)
        for key in keys:
            r = self.ice.data.GenericRecord.create(eq)
            for n, v in key.items():
                r.setField(n, v)
            w.write(r)
        w.close()
        self.table.newRowDelta().addDeletes(w.toDeleteFile()).commit()

    def reads(self) -> dict[str, Any]:
        """Iceberg's generic read of every snapshot: sorted [id, k, x] rows, the order, and
        the metadata file each snapshot was first current in (``metadata``)."""
        self.table.refresh()
        snaps = [s.snapshotId() for s in self.table.snapshots()]
        out: dict[str, Any] = {"order": [str(s) for s in snaps], "metadata": {}}
        meta = self.table.operations().current()
        files = [e.file() for e in meta.previousFiles()] + [meta.metadataFileLocation()]
        for f in files:
            with open(f.removeprefix("file:")) as m:
                current = str(json.load(m).get("current-snapshot-id", -1))
            out["metadata"].setdefault(current, f.removeprefix("file:"))
        lists = getattr(self.jvm.org.apache.iceberg.relocated.com.google.common.collect, "Lists")
        for s in snaps:
            records = lists.newArrayList(self.ice.data.IcebergGenerics.read(self.table).useSnapshot(s).build())
            out[str(s)] = sorted(_fields(str(records.toString()), records.size()))
        return out


def _fields(text: str, n: int) -> list[list[Any]]:
    """``[id, k, x]`` of each record of a Java list's text, ``[Record(id, k, x, pad), ...]``
    (``GenericRecord.toString``; Java prints a double with the digits that make it again),
    taken in one call instead of five a row over the gateway."""
    rows = []
    for part in text[len("[Record("):-len(")]")].split("), Record(") if n else []:
        i, k, x = part.split(", ", 3)[:3]
        rows.append([int(i), int(k), None if x == "null" else float(x)])
    assert len(rows) == n, (len(rows), n)
    return rows


def main(out: str) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.java_gateway import ensure_callback_server_started
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars.packages", RUNTIME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .appName("hydrofeed-iceberg-writer")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    gw = spark.sparkContext._gateway
    ensure_callback_server_started(gw)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    done: dict[str, Any] = {}

    def table(name: str, version: int, partitioned: bool = False,
              props: dict[str, str] | None = None) -> Writer:
        return Writer(jvm, conf, gw, os.path.join(out, name), version, partitioned, props)

    t = table("pos", 2)
    t.append([list(range(0, 1000)), list(range(1000, 2000)), list(range(2000, 3000))])
    p = t.positions(lambda i: i % 10 == 3)
    first, second, third = sorted(p, key=lambda f: t.files[f][0])
    t.position_deletes([{first: p[first], second: p[second]}, {third: p[third]}])
    t.append([list(range(3000, 3500))])
    p = t.positions(lambda i: 500 <= i < 1500 and i % 10 != 3)
    t.position_deletes([p])
    done["pos"] = t.reads()

    t = table("pos_part", 2, partitioned=True,
              props={"write.parquet.row-group-size-bytes": "16384"})
    for k in range(3):
        t.append([[i for i in range(0, 9000) if i % 3 == k]], k=k)
    for k in range(3):
        p = t.positions(lambda i, k=k: i % 3 == k and (i % 9 == 4 or 2000 < i < 5000))
        t.position_deletes([p], k=k)
    done["pos_part"] = t.reads()

    t = table("dv", 3)
    t.append([list(range(0, 1500)), list(range(1500, 3000))])
    dvs = t.deletion_vectors(t.positions(lambda i: i % 10 == 3), [])
    t.deletion_vectors(t.positions(lambda i: i % 10 == 3 or 1000 <= i < 2000), dvs)
    done["dv"] = t.reads()

    t = table("eq", 2)
    t.append([list(range(0, 1000)), list(range(1000, 2000))])
    t.equality_deletes([{"id": i} for i in range(0, 2000) if i % 4 == 1])
    # Rows of ids deleted before, appended after: the delete is older than their file.
    t.append([list(range(0, 100))])
    # On (id, k): half the keys name another k, and delete nothing.
    t.equality_deletes([{"id": i, "k": i % 3 if i % 8 == 2 else (i + 1) % 3}
                        for i in range(0, 2000) if i % 4 == 2])
    done["eq"] = t.reads()

    # Partitioned by pad (identity: null, "a", "b"), bucket(2, id) and truncate(100, id): a
    # delete file of a partition deletes there only, rows of equal keys elsewhere stay.
    t = table("eq_part", 2, partitioned=lambda b: b.identity("pad").bucket("id", 2).truncate("id", 100))

    def row(i: int) -> dict[str, Any]:
        return {"id": i, "k": i % 3, "x": float(i) / 3, "pad": None if i % 5 == 0 else "ab"[i % 2]}

    t.append_rows([row(i) for i in range(0, 300)])
    # k = 1 in the partition of row 0 (pad null), ids 100..199 in that of row 101
    t.equality_deletes([{"k": 1}], spec_id=0, row=row(0))
    t.equality_deletes([{"id": i} for i in range(100, 200)], spec_id=0, row=row(101))
    # The spec loses its fields (spec 1, unpartitioned): its delete files apply everywhere.
    t.table.updateSpec().removeField("pad").removeField("id_bucket").removeField("id_trunc").commit()
    t.table.refresh()
    t.append_rows([row(i) for i in range(300, 330)])
    t.equality_deletes([{"id": i} for i in range(0, 330, 7)], spec_id=1)
    # A delete file of spec 0 after the change: spec 1's files (k = 2 too) are not in its partition.
    t.equality_deletes([{"k": 2}], spec_id=0, row=row(0))
    done["eq_part"] = t.reads()

    # For a resume: 12,000 rows in 3 files, position deletes, then more.
    t = table("pos_resume", 2)
    t.append([list(range(j * 4000, (j + 1) * 4000)) for j in range(3)])
    t.position_deletes([t.positions(lambda i: i % 10 == 3)])
    t.position_deletes([t.positions(lambda i: i % 10 == 7 or 5000 <= i < 7000)])
    done["pos_resume"] = t.reads()

    with open(os.path.join(out, "done.json"), "w") as f:
        json.dump(done, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
