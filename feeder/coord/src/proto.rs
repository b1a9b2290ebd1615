//! Generated protocol types and gRPC stubs of `hydrofeed.coord.v1`, and the conversions between
//! them and the state machine's types (used by both the service and the client, so that the
//! client does not import the server).

#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("hydrofeed.coord.v1");

use hydrofeed_tfbridge::Piece;

use crate::machine::Stage as MStage;

/// The machine stage of a wire stage (unknown values: starting).
pub fn stage_of(s: i32) -> MStage {
    match Stage::try_from(s).unwrap_or(Stage::Unspecified) {
        Stage::Unspecified | Stage::Starting => MStage::Starting,
        Stage::Reading => MStage::Reading,
        Stage::Decoding => MStage::Decoding,
        Stage::WaitingRing => MStage::WaitingRing,
        Stage::TrainerIdle => MStage::TrainerIdle,
        Stage::WaitingWork => MStage::WaitingWork,
        Stage::Done => MStage::Done,
        Stage::TrainerGone => MStage::TrainerGone,
    }
}

/// The wire stage of a machine stage.
pub fn proto_stage(s: MStage) -> Stage {
    match s {
        MStage::Starting => Stage::Starting,
        MStage::Reading => Stage::Reading,
        MStage::Decoding => Stage::Decoding,
        MStage::WaitingRing => Stage::WaitingRing,
        MStage::TrainerIdle => Stage::TrainerIdle,
        MStage::WaitingWork => Stage::WaitingWork,
        MStage::Done => Stage::Done,
        MStage::TrainerGone => Stage::TrainerGone,
    }
}

/// The wire form of a fixed-order lease.
pub fn proto_order(o: &crate::OrderLease) -> OrderLease {
    OrderLease {
        data_epoch: o.segment.data_epoch,
        workers: o.segment.workers,
        chunk: o.segment.chunk,
        from: o.segment.from,
        to: o.segment.to,
        seed: o.seed,
        shuffle: o.shuffle,
        batch_size: o.batch_size,
        buffer: o.spec.buffer,
        cycle: o.spec.cycle,
        order_version: o.spec.version,
    }
}

/// The fixed-order lease of its wire form.
pub fn order_of(o: &OrderLease) -> crate::OrderLease {
    crate::OrderLease {
        segment: crate::Segment {
            data_epoch: o.data_epoch,
            workers: o.workers,
            chunk: o.chunk,
            from: o.from,
            to: o.to,
        },
        seed: o.seed,
        shuffle: o.shuffle,
        batch_size: o.batch_size,
        spec: crate::OrderSpec {
            buffer: o.buffer,
            cycle: o.cycle,
            // A coordinator that sends none deals version 1.
            version: o.order_version.max(1),
        },
    }
}

/// The wire form of a lineage piece (a trainer's rows read of one lease).
pub fn proto_piece(p: &Piece) -> LeaseRows {
    LeaseRows {
        lease: p.lease,
        split: p.split,
        rows: p.rows,
    }
}

/// The lineage piece of its wire form.
pub fn piece_of(r: &LeaseRows) -> Piece {
    Piece {
        lease: r.lease,
        split: r.split,
        rows: r.rows,
    }
}

/// The metrics message for a machine at `now_ms`.
pub fn metrics_reply(m: &crate::Machine, now_ms: u64) -> MetricsReply {
    let k = m.counters();
    MetricsReply {
        epoch: m.epoch(),
        rows_acked: k.rows_acked,
        rows_dropped: k.rows_dropped,
        rows_padded: k.rows_padded,
        rows_wrapped: k.rows_wrapped,
        assignments: k.assignments,
        stalls: k.stalls,
        deaths: k.deaths,
        finished: m.finished(),
        workers: m
            .ranks()
            .iter()
            .enumerate()
            .map(|(rank, r)| WorkerMetrics {
                rank: rank as u32,
                host: r.host.clone(),
                stage: proto_stage(r.stage) as i32,
                steps: m.steps_of(rank as u32),
                rows_acked: r.acked_total,
                alive: r.alive,
                silent_ms: if r.joined {
                    now_ms.saturating_sub(r.last_seen_ms)
                } else {
                    0
                },
            })
            .collect(),
        resumed: m
            .resumed_at()
            .map(|(epoch, steps)| Resumed { epoch, steps }),
        // The service's, not the machine's: `Shared::traffic`.
        session_messages: 0,
        unary_calls: 0,
    }
}
