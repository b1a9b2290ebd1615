//! `hydrofeed serve`: feed one trainer on this node from an input, without a coordinator.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use hydrofeed_ipc::RingConfig;

use hydrofeed_coord::OrderSpec;
use hydrofeed_feeder::serve::{serve, ServeOptions, ServeOrder};
use hydrofeed_format::split::Format;
use hydrofeed_format::{OnError, ReadOptions};

/// Input format (when file names do not tell).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ServeFormat {
    /// Apache Parquet.
    Parquet,
    /// Apache ORC.
    Orc,
    /// Avro object container files.
    Avro,
    /// TFRecord of tf.train.Example.
    Tfrecord,
}

/// Arguments of `hydrofeed serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: file, directory or glob (local path or hdfs:// URI).
    #[arg(long)]
    pub input: String,
    /// Unix socket the trainer connects to (also read from HYDROFEED_FEED_SOCKET).
    #[arg(long, env = "HYDROFEED_FEED_SOCKET")]
    pub socket: PathBuf,
    /// Rows per batch when the trainer does not ask for a size.
    #[arg(long, default_value_t = 256)]
    pub batch_size: usize,
    /// Passes over the input.
    #[arg(long, default_value_t = 1)]
    pub epochs: u32,
    /// Mix rows across files: the fixed order of one rank, this many rows permuted at a time
    /// (docs/arch/order.md). Without it, splits are read in plan order.
    #[arg(long)]
    pub shuffle_buffer: Option<u64>,
    /// Lanes every window of the shuffle buffer mixes (with --shuffle-buffer).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), requires = "shuffle_buffer")]
    pub cycle_length: Option<u32>,
    /// Seed of the order (with --shuffle-buffer); each epoch has its own order.
    #[arg(long, default_value_t = 0, requires = "shuffle_buffer")]
    pub seed: u64,
    /// Columns to read (comma separated); all by default.
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Input format.
    #[arg(long, value_enum)]
    pub format: Option<ServeFormat>,
    /// Skip corrupt records (counted and logged) instead of stopping with an error.
    #[arg(long)]
    pub skip_errors: bool,
    /// The schema to read with (JSON as `hydrofeed inspect --json` prints it, or an Arrow IPC
    /// stream): for TFRecord instead of inferring it, for Avro as the reader schema.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Ring capacity in MiB.
    #[arg(long, default_value_t = 64)]
    pub ring_mb: usize,
    /// Seconds to wait for a trainer to connect.
    #[arg(long, default_value_t = 300.0)]
    pub accept_timeout: f64,
    /// Seconds the ring may stay full before the trainer counts as stalled.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
    /// Threads decoding splits (0: one per CPU). Splits are decoded in parallel and handed
    /// to the trainer in plan order.
    #[arg(long, default_value_t = 0)]
    pub decode_threads: usize,
    /// MiB of decoded batches the threads may read ahead of the split being handed out.
    #[arg(long, default_value_t = 256)]
    pub read_ahead_mb: usize,
}

/// The reader options that the `--columns`, `--format`, `--skip-errors` and `--schema` flags
/// of `hydrofeed serve`, `feeder`, `coordinator` and `launch` describe.
pub(crate) fn read_options(
    columns: Option<Vec<String>>,
    format: Option<ServeFormat>,
    skip_errors: bool,
    schema: Option<&Path>,
) -> anyhow::Result<ReadOptions> {
    Ok(ReadOptions {
        schema: schema.map(schema_file).transpose()?,
        columns,
        format: format.map(|f| match f {
            ServeFormat::Parquet => Format::Parquet,
            ServeFormat::Orc => Format::Orc,
            ServeFormat::Avro => Format::Avro,
            ServeFormat::Tfrecord => Format::Tfrecord,
        }),
        on_error: if skip_errors {
            OnError::Skip
        } else {
            OnError::Raise
        },
        ..ReadOptions::default()
    })
}

/// Reads the schema of `--schema FILE`: an Arrow IPC stream or file (pyarrow:
/// `pa.ipc.new_stream(f, schema).close()`), or JSON: a list of `{"name", "type", "nullable"}`
/// (types as `hydrofeed inspect` prints them, e.g. `Int64`, `List(Float32)`,
/// `FixedSizeList(784 x Float32)`, `Timestamp(µs, "UTC")`), or the whole object
/// `hydrofeed inspect --json` prints (its `schema` is taken).
pub(crate) fn schema_file(path: &Path) -> anyhow::Result<SchemaRef> {
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

/// The socket path, for the signal handler.
static SOCKET: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    if let Some(p) = SOCKET.get() {
        // SAFETY: `stat` and `unlink` are async-signal-safe; `p` is a valid C string that
        // lives for the whole program (a `OnceLock` set before the handler was installed);
        // `st` is plain old data written by `stat`.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p.as_ptr(), &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
                libc::unlink(p.as_ptr());
            }
        }
    }
    // SAFETY: `_exit` is async-signal-safe.
    unsafe { libc::_exit(128 + sig) };
}

/// Ctrl-C and SIGTERM remove the socket file before exiting (the listener's own cleanup does
/// not run when a signal ends the process).
fn remove_socket_on_signals(socket: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(socket.as_os_str().as_bytes()) else {
        return;
    };
    if SOCKET.set(c).is_err() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only calls async-signal-safe functions (see there) and is a
        // valid `extern "C" fn(c_int)` for the whole program.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Runs `hydrofeed serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    remove_socket_on_signals(&args.socket);
    let opts = ServeOptions {
        input: args.input,
        socket: args.socket,
        batch_size: args.batch_size,
        epochs: args.epochs,
        read: read_options(
            args.columns,
            args.format,
            args.skip_errors,
            args.schema.as_deref(),
        )?,
        ring: RingConfig {
            capacity: args.ring_mb.max(1) << 20,
            max_frame: None,
        },
        accept_timeout: super::secs("--accept-timeout", args.accept_timeout)?
            .max(Duration::from_millis(100)),
        stall_timeout: super::secs("--stall-timeout", args.stall_timeout)?
            .max(Duration::from_millis(100)),
        order: args.shuffle_buffer.map(|buffer| ServeOrder {
            seed: args.seed,
            spec: OrderSpec {
                buffer,
                cycle: args.cycle_length.unwrap_or(OrderSpec::default().cycle),
            },
        }),
        decode_threads: args.decode_threads,
        read_ahead: args.read_ahead_mb.max(1) << 20,
    };
    let r = serve(&opts)?;
    eprintln!(
        "hydrofeed serve: {} rows in {} batches of {} ({} bytes)",
        r.rows, r.batches, r.batch_size, r.bytes
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
