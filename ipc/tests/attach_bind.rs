//! `Listener::bind` replaces only a stale socket file of ours; anything else at the path is
//! left alone and the bind is refused.

use hydrofeed_ipc::{AttachError, Listener, RingConfig};
use std::os::unix::fs::PermissionsExt;

fn cfg() -> RingConfig {
    RingConfig {
        capacity: 1 << 16,
        max_frame: None,
    }
}

#[test]
fn a_regular_file_is_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.sock");
    std::fs::write(&path, b"precious").unwrap();
    let r = Listener::bind(&path, cfg());
    assert!(
        matches!(r, Err(AttachError::PathInUse)),
        "bind over a regular file: {r:?}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn a_stale_socket_of_ours_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.sock");
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    drop(l); // the file stays, nobody listens
    assert!(path.exists());
    let l = Listener::bind(&path, cfg()).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    drop(l);
}

/// A stale socket owned by another user is not ours to remove (only root can make one here).
#[test]
fn a_socket_of_another_user_is_not_removed() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to give a socket file to another uid");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    std::os::unix::fs::chown(&path, Some(54321), None).unwrap();
    let r = Listener::bind(&path, cfg());
    assert!(
        matches!(r, Err(AttachError::PathInUse)),
        "bind over another user's socket: {r:?}"
    );
    assert!(path.exists());
}

/// Binders racing for the same stale socket file (feeders restarted at once): exactly one wins
/// and the file at the path is the winner's listening socket; no binder removes the socket
/// another has just bound.
#[test]
fn binders_racing_for_a_stale_socket_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.sock");
    for round in 0..300 {
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap()); // stale file
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
        let winners: Vec<Listener> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..6)
                .map(|_| {
                    let (b, p) = (barrier.clone(), path.clone());
                    s.spawn(move || {
                        b.wait();
                        Listener::bind(&p, cfg()).ok()
                    })
                })
                .collect();
            hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            winners.len(),
            1,
            "round {round}: {} binders won",
            winners.len()
        );
        assert!(
            std::os::unix::net::UnixStream::connect(&path).is_ok(),
            "round {round}: the socket file is not the winner's"
        );
        std::mem::forget(winners); // keep the file for the next round's stale start
        std::fs::remove_file(&path).ok();
    }
}

/// The producer may dial its consumer (a Spark feeding task dials the trainer): `offer` on the
/// dialling side and `take` on the accepting side make the same ring, frames one way and
/// control messages back; a peer that hangs up mid-handshake is `PeerLost`, not a hang.
#[test]
fn a_producer_that_dials_offers_its_ring() {
    use std::os::fd::OwnedFd;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trainer.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let trainer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut c = hydrofeed_ipc::take(OwnedFd::from(s), Duration::from_secs(5)).unwrap();
        let mut got = Vec::new();
        while let Some(slot) = c.next(Duration::from_secs(5)).unwrap() {
            got.push(slot.to_vec());
        }
        c.send_control(b"consumed").unwrap();
        // A second dialler that hangs up before offering: the handshake says so.
        let (s, _) = listener.accept().unwrap();
        let r = hydrofeed_ipc::take(OwnedFd::from(s), Duration::from_secs(5));
        (got, r.map(|_| ()))
    });
    let s = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let mut p = hydrofeed_ipc::offer(OwnedFd::from(s), cfg(), Duration::from_secs(5)).unwrap();
    for m in [&b"one"[..], b"two"] {
        let mut r = p.reserve(m.len(), Duration::from_secs(5)).unwrap();
        r.copy_from_slice(m);
        r.commit();
    }
    p.close();
    let reply = p.wait_control(Duration::from_secs(5)).unwrap();
    assert_eq!(reply.as_deref(), Some(&b"consumed"[..]));
    drop(std::os::unix::net::UnixStream::connect(&path).unwrap());
    let (got, second) = trainer.join().unwrap();
    assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
    assert!(matches!(second, Err(AttachError::PeerLost)), "{second:?}");
}

/// Held by each test that counts `RssShmem`: the count is the whole process's, and the tests of
/// this file run in threads beside each other; one's 8 MiB ring in the other's count failed
/// the latter in most runs. The other tests make rings of 64 KiB, which the bounds allow for.
static COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn counting() -> std::sync::MutexGuard<'static, ()> {
    COUNTING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Shared memory resident in this process, in KiB (`RssShmem` of /proc/self/status).
fn rss_shmem_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("RssShmem:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `prepare` makes the next consumer's ring before it connects (its pages resident at once);
/// that consumer gets it, and a later consumer a ring of its own, never the first one's frames.
#[test]
fn a_prepared_ring_goes_to_the_next_consumer_alone() {
    use std::time::Duration;
    let _counting = counting();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sock");
    let big = RingConfig {
        capacity: 8 << 20,
        max_frame: None,
    };
    let l = Listener::bind(&path, big).unwrap();
    let before = rss_shmem_kib();
    l.prepare().unwrap();
    l.prepare().unwrap(); // one ring ready, not two
    let grew = rss_shmem_kib() as i64 - before as i64;
    // The count is the process's: the other tests of this file run in threads beside this one
    // and make and drop rings of 64 KiB meanwhile, so it may be off by a few of those
    // (8,060 KiB was seen); no ring is 0, two are 16 MiB.
    assert!(
        (6 << 10..12 << 10).contains(&grew),
        "prepare made {grew} KiB resident, not one 8 MiB ring"
    );
    let reader = |p: std::path::PathBuf| {
        std::thread::spawn(move || {
            let mut c = hydrofeed_ipc::connect(&p, Duration::from_secs(5)).unwrap();
            let mut got = Vec::new();
            while let Some(slot) = c.next(Duration::from_secs(5)).unwrap() {
                got.push(slot.to_vec());
            }
            got
        })
    };
    for word in [&b"first"[..], b"second"] {
        let t = reader(path.clone());
        let mut p = l.accept(Duration::from_secs(5)).unwrap();
        let mut r = p.reserve(word.len(), Duration::from_secs(5)).unwrap();
        r.copy_from_slice(word);
        r.commit();
        p.close();
        assert_eq!(t.join().unwrap(), vec![word.to_vec()]);
    }
}

/// A ring made by `offer` is made on the way of its first frame (a Spark feeding task's): its
/// pages are allocated as the producer first writes them, not all before the offer (64 MiB:
/// tens of milliseconds while the consumer waits), and `take` does not fault in the rest.
#[test]
fn an_offered_ring_allocates_its_pages_as_they_are_written() {
    use std::os::fd::OwnedFd;
    use std::time::Duration;
    let _counting = counting();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trainer.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let before = rss_shmem_kib();
    let trainer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        hydrofeed_ipc::take(OwnedFd::from(s), Duration::from_secs(5)).unwrap()
    });
    let s = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let big = RingConfig {
        capacity: 64 << 20,
        max_frame: None,
    };
    let mut p = hydrofeed_ipc::offer(OwnedFd::from(s), big, Duration::from_secs(5)).unwrap();
    let mut c = trainer.join().unwrap();
    let attached = rss_shmem_kib() - before;
    assert!(
        attached < 1024,
        "{attached} KiB of shared memory resident after the attach"
    );
    let frame = vec![7u8; 1 << 20];
    for _ in 0..4 {
        let mut r = p.reserve(frame.len(), Duration::from_secs(5)).unwrap();
        r.copy_from_slice(&frame);
        r.commit();
    }
    for _ in 0..4 {
        let slot = c.next(Duration::from_secs(5)).unwrap().expect("a frame");
        assert!(slot.iter().all(|b| *b == 7));
    }
    // Both mappings are in this process: each 4 MiB written is resident twice.
    let used = rss_shmem_kib() - before;
    assert!(
        (8 << 10..16 << 10).contains(&used),
        "{used} KiB resident after 4 MiB of frames"
    );
}
