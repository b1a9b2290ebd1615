//! The read flags (`--columns`, `--format`, `--skip-errors`, `--schema`): one [`ReadArgs`] that
//! every subcommand planning or reading an input flattens, turned into the readers'
//! [`ReadOptions`] in one place and handed to a child's command line in one place.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use hydrofeed_format::split::Format;
use hydrofeed_format::{OnError, OrcTimestamps, ReadOptions};

/// A file format as the command line names it: `--format` of every subcommand that reads, and
/// of `gen` and `bench decode`, which write or measure them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Apache Parquet.
    Parquet,
    /// Apache ORC.
    Orc,
    /// Avro object container files.
    Avro,
    /// TFRecord of tf.train.Example.
    Tfrecord,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Parquet => Format::Parquet,
            FormatArg::Orc => Format::Orc,
            FormatArg::Avro => Format::Avro,
            FormatArg::Tfrecord => Format::Tfrecord,
        }
    }
}

/// How ORC timestamps written in a zone other than UTC are read (`--orc-timestamps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OrcTimestampsArg {
    /// The instants the writer's zone gives their wall clocks, as Spark reads them (default).
    #[default]
    Instant,
    /// The writer's wall clocks read as UTC, as Hive and pyarrow.orc read them.
    Wall,
}

/// How an input is read: the flags of `hydrofeed inspect`, `serve`, `feeder`, `coordinator`
/// and `launch` (each flattens this struct), so they take the same flags with the same syntax
/// and meaning.
///
/// A coordinator and its feeders plan the same input, and the split ids and row counts they
/// plan must agree: the format and the schema decide them, the projection (`--columns`) and
/// `--skip-errors` do not (they change what a split yields, not which splits there are).
///
/// Options added later that change how an input is read (a table snapshot, image decoding)
/// go into this struct: [`ReadArgs::options`] turns them into [`ReadOptions`] and
/// [`ReadArgs::to_args`] hands them on to the feeder `launch` starts, so no subcommand or
/// child is left without them.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct ReadArgs {
    /// Columns to read, comma-separated (default: all; partition columns included).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Input format (when file names do not tell).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Skip corrupt records (counted and logged; `launch` names them in its summary) instead
    /// of failing.
    #[arg(long)]
    pub skip_errors: bool,
    /// The schema to read with (JSON as `hydrofeed inspect --json` prints it, or an Arrow IPC
    /// stream): for TFRecord instead of inferring it, for Avro as the reader schema.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// How ORC timestamps written in a zone other than UTC are read: `instant` (as Spark
    /// reads them) or `wall` (as Hive reads them).
    #[arg(long, value_enum, default_value_t)]
    pub orc_timestamps: OrcTimestampsArg,
    /// The snapshot of a table input (Delta Lake) to read: a version, or an RFC 3339 time
    /// (the newest commit at or before it). Default: the newest at planning time, which the
    /// job then keeps (its feeders and a resume read that one).
    #[arg(long, value_name = "VERSION|TIME")]
    pub snapshot: Option<String>,
    /// Read only the rows this predicate holds for: comparisons, IN, BETWEEN, IS NULL,
    /// AND/OR/NOT over columns and partition keys, with SQL's nulls (docs/formats.md,
    /// "Filters"); e.g. `--filter "label IN (1, 7) AND day >= '2026-01-01'"`.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Decode image columns into `uint8` (H, W, 3) tensor columns: `COLUMN=OP,...` per
    /// column, `;` between columns (docs/formats.md, "Images"); e.g.
    /// `--images image=resize:256,randcrop:224,flip`. With `gpu` among the operations the
    /// trainer decodes the JPEGs on its GPU (nvJPEG) and the feeder sends them with a plan.
    #[arg(long, value_name = "SPEC")]
    pub images: Option<String>,
}

impl ReadArgs {
    /// The reader options these flags describe (the schema file is read here; an error names
    /// it). Options no flag sets keep [`ReadOptions::default`]'s values.
    pub fn options(&self) -> anyhow::Result<ReadOptions> {
        Ok(ReadOptions {
            schema: self.schema.as_deref().map(schema_file).transpose()?,
            columns: self.columns.clone(),
            format: self.format.map(Format::from),
            on_error: if self.skip_errors {
                OnError::Skip
            } else {
                OnError::Raise
            },
            orc_timestamps: match self.orc_timestamps {
                OrcTimestampsArg::Instant => OrcTimestamps::Instant,
                OrcTimestampsArg::Wall => OrcTimestamps::Wall,
            },
            snapshot: self
                .snapshot
                .as_deref()
                .map(hydrofeed_format::delta::SnapshotSpec::parse)
                .transpose()?,
            filter: self
                .filter
                .as_deref()
                .map(hydrofeed_format::filter::Filter::parse)
                .transpose()?,
            images: match &self.images {
                Some(s) => hydrofeed_format::image::ImageSpec::parse_all(s)
                    .map_err(|e| anyhow::anyhow!("--images: {e}"))?,
                None => Vec::new(),
            },
            ..ReadOptions::default()
        })
    }

    /// The same flags as command-line arguments for a child `hydrofeed` (what `launch` gives
    /// its feeder): parsed again, they give back `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        if let Some(c) = &self.columns {
            args.push("--columns".into());
            args.push(c.join(",").into());
        }
        if let Some(f) = self.format {
            if let Some(v) = clap::ValueEnum::to_possible_value(&f) {
                args.push("--format".into());
                args.push(v.get_name().into());
            }
        }
        if self.skip_errors {
            args.push("--skip-errors".into());
        }
        if let Some(s) = &self.schema {
            args.push("--schema".into());
            args.push(s.into());
        }
        if self.orc_timestamps != OrcTimestampsArg::default() {
            args.push("--orc-timestamps".into());
            args.push("wall".into());
        }
        if let Some(s) = &self.snapshot {
            args.push("--snapshot".into());
            args.push(s.into());
        }
        if let Some(f) = &self.filter {
            args.push("--filter".into());
            args.push(f.into());
        }
        if let Some(i) = &self.images {
            args.push("--images".into());
            args.push(i.into());
        }
        args
    }
}

/// Reads the schema of `--schema FILE`: an Arrow IPC stream or file (pyarrow:
/// `pa.ipc.new_stream(f, schema).close()`), or JSON: a list of `{"name", "type", "nullable"}`
/// (types as `hydrofeed inspect` prints them, e.g. `Int64`, `List(Float32)`,
/// `FixedSizeList(784 x Float32)`, `Timestamp(µs, "UTC")`), or the whole object
/// `hydrofeed inspect --json` prints (its `schema` is taken).
fn schema_file(path: &Path) -> anyhow::Result<SchemaRef> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("reading the schema file {}", path.display()))?;
    schema_from_bytes(&bytes).with_context(|| format!("schema file {}", path.display()))
}

fn schema_from_bytes(bytes: &[u8]) -> anyhow::Result<SchemaRef> {
    if bytes.starts_with(b"ARROW1") {
        let r = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)?;
        return Ok(r.schema());
    }
    if bytes.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
        let r = arrow_ipc::reader::StreamReader::try_new(bytes, None)?;
        return Ok(r.schema());
    }
    let v: serde_json::Value =
        serde_json::from_slice(bytes).context("neither an Arrow IPC stream or file nor JSON")?;
    let list = match &v {
        serde_json::Value::Object(o) => o
            .get("schema")
            .context("a JSON object without \"schema\"")?,
        other => other,
    };
    let list = list
        .as_array()
        .context("JSON schema: expected a list of {\"name\", \"type\", \"nullable\"}")?;
    let mut fields = Vec::with_capacity(list.len());
    for (i, f) in list.iter().enumerate() {
        let name = f
            .get("name")
            .and_then(|n| n.as_str())
            .with_context(|| format!("field {i}: no \"name\""))?;
        let ty = f
            .get("type")
            .and_then(|t| t.as_str())
            .with_context(|| format!("field {name:?}: no \"type\""))?;
        let ty: DataType = ty
            .parse()
            .map_err(|e| anyhow::anyhow!("field {name:?}: type {ty:?}: {e}"))?;
        let nullable = f.get("nullable").and_then(|n| n.as_bool()).unwrap_or(true);
        fields.push(Field::new(name, ty, nullable));
    }
    anyhow::ensure!(!fields.is_empty(), "the schema has no field");
    Ok(Arc::new(Schema::new(fields)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    use crate::{Cli, Command};

    /// The read flags alone, as a subcommand flattens them.
    #[derive(Debug, clap::Parser)]
    struct Only {
        #[command(flatten)]
        read: ReadArgs,
    }

    fn parse(flags: &[&str]) -> ReadArgs {
        Only::try_parse_from(std::iter::once("x").chain(flags.iter().copied()))
            .unwrap()
            .read
    }

    fn json_schema(dir: &Path) -> PathBuf {
        let p = dir.join("schema.json");
        std::fs::write(&p, r#"[{"name": "x", "type": "Int64", "nullable": false}]"#).unwrap();
        p
    }

    /// Every flag set (the schema file written into `dir`).
    fn every_flag(dir: &Path) -> ReadArgs {
        ReadArgs {
            columns: Some(vec!["label".into(), "image".into()]),
            format: Some(FormatArg::Avro),
            skip_errors: true,
            schema: Some(json_schema(dir)),
            orc_timestamps: OrcTimestampsArg::Wall,
            snapshot: Some("7".into()),
            filter: Some("label IN (1, 7) AND id >= -3".into()),
            images: Some("image=resize:256,randcrop:224,flip;thumb=size:32x32".into()),
        }
    }

    #[test]
    fn images_parse_into_read_options_or_are_named() {
        let o = parse(&["--images", "image=resize:256,crop:224"])
            .options()
            .unwrap();
        assert_eq!(o.images.len(), 1);
        assert_eq!(o.images[0].column, "image");
        assert_eq!(o.images[0].out_size(), (224, 224));
        let e = parse(&["--images", "image=resize:256"])
            .options()
            .unwrap_err();
        assert!(format!("{e:#}").contains("--images"), "{e:#}");
    }

    #[test]
    fn flags_parse_into_read_options() {
        let d = tempfile::tempdir().unwrap();
        let schema = json_schema(d.path());
        let read = parse(&[
            "--columns",
            "label,image",
            "--format",
            "tfrecord",
            "--skip-errors",
            "--schema",
            schema.to_str().unwrap(),
            "--orc-timestamps",
            "wall",
            "--filter",
            "label = 3",
        ]);
        let o = read.options().unwrap();
        assert_eq!(o.filter.as_ref().map(|f| f.text()), Some("label = 3"));
        assert_eq!(o.orc_timestamps, OrcTimestamps::Wall);
        assert_eq!(o.columns, Some(vec!["label".into(), "image".into()]));
        assert_eq!(o.format, Some(Format::Tfrecord));
        assert_eq!(o.on_error, OnError::Skip);
        let s = o.schema.unwrap();
        assert_eq!(s.fields().len(), 1);
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        // What no flag sets stays the readers' default.
        let dflt = ReadOptions::default();
        assert_eq!(
            (o.batch_rows, o.split_bytes),
            (dflt.batch_rows, dflt.split_bytes)
        );
    }

    #[test]
    fn no_flags_read_everything_and_raise() {
        let read = parse(&[]);
        assert_eq!(read, ReadArgs::default());
        let o = read.options().unwrap();
        assert!(o.columns.is_none() && o.format.is_none() && o.schema.is_none());
        assert_eq!(o.on_error, OnError::Raise);
        assert_eq!(o.orc_timestamps, OrcTimestamps::Instant);
        assert!(read.to_args().is_empty());
    }

    #[test]
    fn a_filter_that_does_not_parse_is_named() {
        let read = parse(&["--filter", "label =="]);
        let e = read.options().unwrap_err();
        assert!(format!("{e:#}").contains("filter \"label ==\""), "{e:#}");
    }

    #[test]
    fn a_missing_schema_file_is_named() {
        let read = parse(&["--schema", "/nonexistent/schema.json"]);
        let e = read.options().unwrap_err();
        assert!(
            format!("{e:#}").contains("/nonexistent/schema.json"),
            "{e:#}"
        );
    }

    #[test]
    fn to_args_parse_back_to_the_same_flags() {
        let d = tempfile::tempdir().unwrap();
        let all = every_flag(d.path());
        let cases = [
            ReadArgs::default(),
            all.clone(),
            ReadArgs {
                columns: Some(vec!["id".into()]),
                ..ReadArgs::default()
            },
            ReadArgs {
                format: Some(FormatArg::Orc),
                skip_errors: true,
                ..ReadArgs::default()
            },
        ];
        for read in cases {
            let back =
                Only::try_parse_from(std::iter::once(OsString::from("x")).chain(read.to_args()))
                    .unwrap()
                    .read;
            assert_eq!(back, read);
        }
        // Every format by its flag value.
        for f in [
            FormatArg::Parquet,
            FormatArg::Orc,
            FormatArg::Avro,
            FormatArg::Tfrecord,
        ] {
            let read = ReadArgs {
                format: Some(f),
                ..ReadArgs::default()
            };
            let args = read.to_args();
            assert_eq!(args[1], OsString::from(Format::from(f).name()));
            let back = Only::try_parse_from(std::iter::once(OsString::from("x")).chain(args))
                .unwrap()
                .read;
            assert_eq!(back, read);
        }
    }

    /// A `hydrofeed` command line with the read flags of `read` after `head`.
    fn cli(head: &[&str], read: &ReadArgs) -> Command {
        let head = std::iter::once("hydrofeed")
            .chain(head.iter().copied())
            .map(OsString::from);
        Cli::try_parse_from(head.chain(read.to_args()))
            .unwrap()
            .command
    }

    #[test]
    fn every_planning_subcommand_takes_the_read_flags() {
        let d = tempfile::tempdir().unwrap();
        let read = every_flag(d.path());
        let got = [
            match cli(&["inspect", "data"], &read) {
                Command::Inspect(a) => a.read,
                c => panic!("{c:?}"),
            },
            match cli(
                &[
                    "coordinator",
                    "--input",
                    "data",
                    "--workers",
                    "2",
                    "--batch-size",
                    "8",
                ],
                &read,
            ) {
                Command::Coordinator(a) => a.read,
                c => panic!("{c:?}"),
            },
            match cli(&["serve", "--input", "data", "--socket", "s.sock"], &read) {
                Command::Serve(a) => a.read,
                c => panic!("{c:?}"),
            },
            // As `launch` starts its feeder: the flags after the others.
            match cli(
                &[
                    "feeder",
                    "--input",
                    "data",
                    "--coordinator",
                    "127.0.0.1:1",
                    "--socket-dir",
                    "d",
                ],
                &read,
            ) {
                Command::Feeder(a) => a.read,
                c => panic!("{c:?}"),
            },
        ];
        for g in got {
            assert_eq!(g, read);
        }
        // `launch`: the flags before the trainer command.
        let mut line: Vec<OsString> = ["hydrofeed", "launch", "--workers", "2", "--input", "data"]
            .into_iter()
            .map(OsString::from)
            .collect();
        line.extend(read.to_args());
        line.extend(["--", "python", "train.py"].map(OsString::from));
        match Cli::try_parse_from(line).unwrap().command {
            Command::Launch(a) => assert_eq!(a.read, read),
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn a_projection_or_skipping_plans_the_same_splits() {
        use hydrofeed_format::gen::{write_dataset, GenOptions};
        let d = tempfile::tempdir().unwrap();
        for format in [Format::Parquet, Format::Tfrecord] {
            let data = d.path().join(format.name());
            write_dataset(
                &data,
                &GenOptions {
                    format,
                    rows: 900,
                    files: 3,
                    ..Default::default()
                },
            )
            .unwrap();
            let input = data.to_str().unwrap();
            let storage = hydrofeed_storage::open_storage(input).unwrap();
            let splits = |read: &ReadArgs| {
                let plan =
                    hydrofeed_format::plan(&storage, input, &read.options().unwrap()).unwrap();
                crate::split_infos(&plan)
                    .iter()
                    .map(|s| (s.id, s.rows))
                    .collect::<Vec<_>>()
            };
            let all = splits(&ReadArgs::default());
            assert_eq!(all.iter().map(|s| s.1).sum::<u64>(), 900);
            let projected = ReadArgs {
                columns: Some(vec!["label".into()]),
                skip_errors: true,
                ..ReadArgs::default()
            };
            assert_eq!(splits(&projected), all, "{format:?}");
        }
    }

    #[test]
    fn schema_json_takes_the_types_inspect_prints() {
        let s = Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new_list("v", Field::new_list_field(DataType::Float32, true), true),
            Field::new(
                "img",
                DataType::FixedSizeList(
                    Arc::new(Field::new_list_field(DataType::Float32, true)),
                    4,
                ),
                true,
            ),
            Field::new(
                "t",
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("s", DataType::Utf8, true),
        ]);
        // as `hydrofeed inspect --json` prints it
        let list: Vec<serde_json::Value> = s
            .fields()
            .iter()
            .map(|f| serde_json::json!({"name": f.name(), "type": f.data_type().to_string(), "nullable": f.is_nullable()}))
            .collect();
        let got = schema_from_bytes(serde_json::to_string(&list).unwrap().as_bytes()).unwrap();
        assert_eq!(got.as_ref(), &s);
        let whole = serde_json::json!({"input": "x", "schema": list});
        let got = schema_from_bytes(whole.to_string().as_bytes()).unwrap();
        assert_eq!(got.as_ref(), &s);
    }

    #[test]
    fn schema_ipc_stream_is_read_exactly() {
        let s = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
        let mut buf = Vec::new();
        arrow_ipc::writer::StreamWriter::try_new(&mut buf, &s)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(schema_from_bytes(&buf).unwrap().as_ref(), &s);
    }

    #[test]
    fn schema_errors_name_the_field() {
        let e = schema_from_bytes(br#"[{"name": "x", "type": "Int65"}]"#).unwrap_err();
        assert!(format!("{e:#}").contains("\"x\""), "{e:#}");
        let e = schema_from_bytes(b"not json").unwrap_err();
        assert!(format!("{e:#}").contains("Arrow IPC"), "{e:#}");
    }
}
