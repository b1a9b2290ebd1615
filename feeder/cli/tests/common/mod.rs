//! What the CLI's integration tests share: a trainer written in Rust that `hydrofeed launch`
//! starts (the test binary run again as its own trainer).

// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use hydrofeed_ipc::connect;
use hydrofeed_tfbridge::{owned_buffer, Control, Frame, FrameDecoder};

/// What a trainer is told about its feed: a batch's epoch and ids, or the end of the feed with
/// the rows the feeder counted.
pub enum Got<'a> {
    /// A batch of `epoch`, its `id` column.
    Batch(u32, &'a [i64]),
    /// End of feed, with the rows delivered.
    End(u64),
}

/// Attaches to the ring at `HYDROFEED_FEED_SOCKET` (waiting up to 60 s for the feeder), says
/// hello with `batch_size`, and reads to the end of the feed, acking every frame (best effort,
/// as `hydrofeed.DataFeed` does: once every batch is acked the feeder may leave while markers
/// are still being read); `on` is told each batch and the end. A frame of error panics.
pub fn read_feed(batch_size: u64, mut on: impl FnMut(Got<'_>)) {
    let sock = std::env::var("HYDROFEED_FEED_SOCKET").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut c = loop {
        match connect(Path::new(&sock), Duration::from_secs(1)) {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("connect {sock}: {e}"),
        }
    };
    c.send_control(
        &Control::Hello {
            batch_size: Some(batch_size),
            pid: std::process::id(),
            first: true,
        }
        .to_bytes(),
    )
    .unwrap();
    let mut dec = FrameDecoder::new();
    let mut frames = 0u64;
    loop {
        if frames > 0 {
            let _ = c.send_control(
                &Control::Ack {
                    seq: frames - 1,
                    feed: None,
                }
                .to_bytes(),
            );
        }
        let l = c
            .next(Duration::from_secs(60))
            .unwrap()
            .expect("ring closed before end-of-feed");
        frames += 1;
        match dec.decode(&owned_buffer(l)).unwrap() {
            Frame::Batch(m, b) => {
                let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                on(Got::Batch(m.epoch, ids.values()));
            }
            Frame::EndOfFeed(m) => {
                let _ = c.send_control(
                    &Control::Ack {
                        seq: frames - 1,
                        feed: None,
                    }
                    .to_bytes(),
                );
                on(Got::End(m.rows));
                break;
            }
            Frame::Error(_, _, msg) => panic!("{msg}"),
            _ => {}
        }
    }
}
