//! What a trainer read per lease, for a feeder restarted under it ([`Control::Rejoin`]): the
//! sums of its batch frames' lineage pieces over the epoch being read and the one before it.
//!
//! Two epochs, not one: under the fixed order a rank that leased its share of an epoch is
//! dealt the next epoch's before the epoch closes, so the end-of-epoch frame comes when the
//! feeder got a lease of the next epoch, not when the coordinator has every ack of this one.
//! Only the next end of epoch (a lease two epochs on, dealt once this epoch closed) says
//! every lease before it is acked there.
//!
//! [`Control::Rejoin`]: crate::Control

use std::collections::HashMap;

use super::Piece;

/// Rows read per lease over the current epoch and the one before it.
#[derive(Debug, Clone, Default)]
pub struct Consumed {
    cur: HashMap<u64, Piece>,
    prev: HashMap<u64, Piece>,
}

impl Consumed {
    /// Adds one lineage piece of a batch frame read.
    pub fn add(&mut self, p: Piece) {
        self.cur
            .entry(p.lease)
            .or_insert(Piece { rows: 0, ..p })
            .rows += p.rows;
    }

    /// An end-of-epoch frame was read: the epoch before the one that ended is acked at the
    /// coordinator, and forgotten here.
    pub fn end_epoch(&mut self) {
        self.prev = std::mem::take(&mut self.cur);
    }

    /// Every lease read over the two epochs, with its rows, by lease id.
    pub fn pieces(&self) -> Vec<Piece> {
        let mut by: HashMap<u64, Piece> = self.prev.clone();
        for p in self.cur.values() {
            by.entry(p.lease).or_insert(Piece { rows: 0, ..*p }).rows += p.rows;
        }
        let mut v: Vec<Piece> = by.into_values().collect();
        v.sort_unstable_by_key(|p| p.lease);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(lease: u64, rows: u64) -> Piece {
        Piece {
            lease,
            split: 9,
            rows,
        }
    }

    /// A feeder restarted just after its trainer read an end of epoch is told the rows of that
    /// epoch's leases too (their last acks may not have reached the coordinator: the rank went
    /// ahead); the epoch before that one is forgotten at the next end of epoch.
    #[test]
    fn the_epoch_before_the_last_end_of_epoch_is_still_reported() {
        let mut c = Consumed::default();
        c.add(piece(1, 10));
        c.add(piece(1, 5));
        c.add(piece(2, 3));
        c.end_epoch();
        c.add(piece(3, 7));
        assert_eq!(c.pieces(), vec![piece(1, 15), piece(2, 3), piece(3, 7)]);
        c.end_epoch();
        assert_eq!(c.pieces(), vec![piece(3, 7)]);
        c.add(piece(4, 1));
        c.end_epoch();
        c.end_epoch();
        assert_eq!(c.pieces(), vec![]);
    }
}
