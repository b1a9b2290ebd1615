//! The trainer's side of the ring ([`Consumer`]) against a producer that writes whatever it
//! likes into the shared memory, and the feeder's side ([`Producer`]) against a consumer that
//! does the same to its own line.
//!
//! A ring on a sealed memfd, mapped once per side ([`memfd_pair`], the path `connect` takes
//! without the socket). The input is a program run against it: the hostile side pokes the
//! header words (`head`, `tail`, the closed flags) and record headers and bytes through the
//! producer's mapping, as another process holding the memfd can; the consumer takes frames
//! (decoding some as the trainer does), holds and drops slots, detaches them; the producer
//! reserves and commits. Every slot must lie inside the consumer's payload and every
//! reservation inside the producer's; every byte of a held slot is read; nothing may panic.
//!
//! The mappings are found from the outside: the first reservation of a fresh ring starts one
//! record header (64 bytes) into the payload, and the payload starts [`HEADER_SIZE`] bytes
//! into the mapping (checked against the header's magic); the first slot likewise.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use hydrofeed_ipc::layout::{
    SlotHeader, SLOT_HEADER_SIZE, HEADER_SIZE, KIND_DATA, KIND_PAD, MAGIC,
};
use hydrofeed_ipc::{memfd_pair, Slot, RingConfig};
use hydrofeed_tfbridge::{owned_buffer, FrameDecoder};

/// Ring capacity: small, so that positions wrap often.
pub const CAP: usize = 8192;
/// Largest frame payload (the default: half the capacity minus a record header).
const MAX_FRAME: usize = CAP / 2 - SLOT_HEADER_SIZE;
/// Offsets of the header words a hostile producer rewrites (pinned in `ipc/src/layout.rs`).
const OFF_HEAD: usize = 64;
const OFF_TAIL: usize = 128;
const OFF_PRODUCER_CLOSED: usize = 324;
const OFF_CONSUMER_CLOSED: usize = 388;

/// Reads the input; missing bytes are 0.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (self.u32() as u64) | (self.u32() as u64) << 32
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// A ring position chosen by the input: near `cur` (forward or back, 64-byte steps), small and
/// aligned, small and unaligned, or anything.
fn position(inp: &mut Input<'_>, cur: u64) -> u64 {
    match inp.u8() % 4 {
        0 => cur.wrapping_add((inp.u8() as i8 as i64 * 64) as u64),
        1 => inp.u16() as u64 * 64,
        2 => inp.u16() as u64,
        _ => inp.u64(),
    }
}

/// Something the consumer holds: a slot, or a slot inside a decoded frame's buffer.
enum Held {
    Slot(Slot),
    Frame(arrow_buffer::Buffer),
}

impl Held {
    fn bytes(&self) -> &[u8] {
        match self {
            Held::Slot(l) => l,
            Held::Frame(b) => b.as_slice(),
        }
    }
}

/// Reads every byte (a slot that reaches past the mapping faults here).
fn touch(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| a.rotate_left(5) ^ x as u64)
}

/// The ring target.
pub fn ring(data: &[u8]) {
    let cfg = RingConfig {
        capacity: CAP,
        max_frame: None,
    };
    let (mut prod, mut cons) = memfd_pair(cfg).expect("memfd ring");
    let zero = Duration::ZERO;

    // Find both mappings through a first frame.
    let p_payload = {
        let mut r = prod.reserve(8, zero).expect("a fresh ring has space");
        r.copy_from_slice(b"hydrofee");
        let p = r.as_ptr() as usize - SLOT_HEADER_SIZE;
        r.commit();
        p
    };
    let base = (p_payload - HEADER_SIZE) as *mut u8;
    // SAFETY: the header page of the producer's mapping (checked: the magic is there).
    assert_eq!(
        unsafe { std::ptr::read_volatile(base as *const u64) },
        MAGIC
    );
    let c_payload = {
        let l = cons.next(zero).expect("first frame").expect("first frame");
        assert_eq!(&l[..], b"hydrofee");
        l.as_ptr() as usize - SLOT_HEADER_SIZE
    };
    let word64 = |off: usize| {
        // SAFETY: `off` is one of the 8-byte aligned header words, inside the header page.
        unsafe { &*(base.add(off) as *const AtomicU64) }
    };
    let word32 = |off: usize| {
        // SAFETY: as above, 4-byte aligned.
        unsafe { &*(base.add(off) as *const AtomicU32) }
    };
    let payload = |off: usize| {
        // SAFETY: `off < CAP`: inside the producer's payload.
        unsafe { base.add(HEADER_SIZE + off) }
    };

    let mut inp = Input(data);
    let mut held: Vec<Held> = Vec::new();
    let mut dec = FrameDecoder::new();
    let mut delivered = 1u64;
    for _ in 0..64 {
        if inp.0.is_empty() {
            break;
        }
        match inp.u8() % 10 {
            0 => {
                let cur = word64(OFF_HEAD).load(Ordering::Relaxed);
                let v = position(&mut inp, cur);
                word64(OFF_HEAD).store(v, Ordering::Release);
            }
            1 => {
                let cur = word64(OFF_TAIL).load(Ordering::Relaxed);
                let v = position(&mut inp, cur);
                word64(OFF_TAIL).store(v, Ordering::Release);
            }
            2 => {
                let v = inp.u8();
                let off = if v & 1 == 0 {
                    OFF_PRODUCER_CLOSED
                } else {
                    OFF_CONSUMER_CLOSED
                };
                word32(off).store((v >> 1 & 1) as u32, Ordering::Release);
            }
            3 => {
                // A record header at a 64-byte slot.
                let slot = inp.u8() as usize % (CAP / 64);
                let len = match inp.u8() % 5 {
                    0 => inp.u16() as u64,
                    1 => (MAX_FRAME as u64).wrapping_add(inp.u8() as i8 as u64),
                    2 => ((CAP - slot * 64 - SLOT_HEADER_SIZE) as u64)
                        .wrapping_add(inp.u8() as i8 as u64),
                    3 => u64::MAX - inp.u8() as u64,
                    _ => inp.u64(),
                };
                let kind = match inp.u8() % 3 {
                    0 => KIND_DATA,
                    1 => KIND_PAD,
                    _ => inp.u32(),
                };
                let s = inp.u8();
                let seq = if s & 0x80 == 0 {
                    delivered.wrapping_add((s & 3) as u64)
                } else {
                    inp.u64()
                };
                let hdr = SlotHeader {
                    len,
                    kind,
                    reserved: 0,
                    seq,
                };
                // SAFETY: a 64-byte aligned slot of the payload; the consumer reads record
                // headers by value (volatile), as another process would race it.
                unsafe { std::ptr::write_volatile(payload(slot * 64) as *mut SlotHeader, hdr) };
            }
            4 => {
                // Frame bytes at a slot: a frame header of the tfbridge format often.
                let off = inp.u16() as usize % CAP;
                let n = inp.u8() as usize;
                let b = inp.bytes(n.min(CAP - off));
                // SAFETY: `[off, off + b.len())` is inside the payload.
                unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), payload(off), b.len()) };
            }
            5 | 6 => {
                let decode = inp.u8() & 1 != 0;
                if let Ok(Some(l)) = cons.next(zero) {
                    let (p, n) = (l.as_ptr() as usize, l.len());
                    assert!(
                        p >= c_payload && p.saturating_add(n) <= c_payload + CAP,
                        "slot of {n} bytes at payload offset {} outside the {CAP}-byte \
                         payload",
                        p.wrapping_sub(c_payload) as isize
                    );
                    std::hint::black_box(touch(&l));
                    delivered += 1;
                    if decode {
                        let b = owned_buffer(l);
                        let _ = dec.decode(&b);
                        held.push(Held::Frame(b));
                    } else {
                        held.push(Held::Slot(l));
                    }
                }
            }
            7 => {
                if !held.is_empty() {
                    let i = inp.u8() as usize % held.len();
                    held.remove(i);
                }
            }
            8 => {
                // The producer, against whatever the consumer's line says.
                let len = inp.u16() as usize % CAP;
                let fill = inp.u8();
                let commit = inp.u8();
                if let Ok(mut r) = prod.reserve(len, zero) {
                    let (a, n) = (r.as_ptr() as usize, r.len());
                    assert!(
                        a >= p_payload && a.saturating_add(n) <= p_payload + CAP,
                        "reservation of {n} bytes at payload offset {} outside the {CAP}-byte \
                         payload",
                        a.wrapping_sub(p_payload) as isize
                    );
                    r.fill(fill);
                    match commit % 3 {
                        0 => r.commit(),
                        1 => r.commit_len(commit as usize % (n + 1)),
                        _ => {} // not committed: nothing is published
                    }
                }
            }
            _ => {
                // Detach: the held bytes keep their addresses and values, whatever the
                // producer writes into the ring afterwards.
                let before: Vec<(usize, Vec<u8>)> = held
                    .iter()
                    .map(|h| (h.bytes().as_ptr() as usize, h.bytes().to_vec()))
                    .collect();
                if cons.detach_held().is_ok() {
                    // SAFETY: the whole payload of the producer's mapping.
                    unsafe { std::ptr::write_bytes(payload(0), 0xee, CAP) };
                    for (h, (p, b)) in held.iter().zip(&before) {
                        assert_eq!(h.bytes().as_ptr() as usize, *p, "a detached slot moved");
                        assert!(h.bytes() == &b[..], "a detached slot changed");
                    }
                }
                break;
            }
        }
    }
    for h in &held {
        std::hint::black_box(touch(h.bytes()));
    }
}

/// Starting inputs: a few well-formed programs (frames published by the producer and taken
/// by the consumer, with and without decoding; a padding record; a detach).
pub fn seeds() -> Vec<Vec<u8>> {
    vec![
        vec![8, 0, 1, 0xab, 0, 5, 0, 5, 1, 7, 0],
        vec![8, 0, 1, 0xab, 0, 8, 0, 2, 0x11, 0, 5, 0, 5, 0, 9],
        vec![
            8, 0xc0, 0x0f, 1, 0, 8, 0xc0, 0x0f, 2, 0, 5, 1, 5, 1, 5, 1, 7, 0, 5, 1,
        ],
        vec![
            3, 2, 0, 64, 0, 0, 0, 0, 3, 2, 4, 0, 0x80, 0x00, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0,
        ],
    ]
}
