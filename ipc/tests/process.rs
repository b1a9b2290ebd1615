//! Multi-process tests: the test binary re-executes itself (`child` below, selected by the
//! `HF_IPC_CHILD` environment variable) as the other side of a ring.
#![cfg(not(loom))]

use hydrofeed_ipc::{connect, AttachError, Listener, NextError, ReserveError, RingConfig};
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The tests inspect this process's fds and mappings: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const T: Duration = Duration::from_secs(20);

fn template() -> &'static [u8] {
    static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..(2 << 20) / 8)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()
            })
            .collect()
    })
}

/// Frame `seq`: a window of the template, its first 8 bytes replaced by `seq`.
fn fill_frame(buf: &mut [u8], seq: u64) {
    let off = (seq as usize * 4160) % (1 << 20);
    buf.copy_from_slice(&template()[off..off + buf.len()]);
    let n = buf.len().min(8);
    buf[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
}

/// Running checksum over the u64 words of the frames, in order.
fn checksum(mut h: u64, bytes: &[u8]) -> u64 {
    for w in bytes.chunks_exact(8) {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

fn frame_len(seq: u64) -> usize {
    (1 << 20) - (seq as usize % 7) * 8
}

fn spawn_child(role: &str, sock: &Path) -> Child {
    spawn_child_from(&std::env::current_exe().unwrap(), role, sock, None)
}

fn spawn_child_from(exe: &Path, role: &str, sock: &Path, uid: Option<u32>) -> Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "child",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("HF_IPC_CHILD", role)
    .env("HF_IPC_SOCK", sock)
    .stdin(Stdio::null())
    .stdout(Stdio::piped());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd.spawn().expect("spawn child")
}

/// Not a test: the other process of the tests below (does nothing unless `HF_IPC_CHILD` is set).
#[test]
#[ignore = "helper process started by the other tests"]
fn child() {
    let Ok(role) = std::env::var("HF_IPC_CHILD") else {
        return;
    };
    let sock = PathBuf::from(std::env::var("HF_IPC_SOCK").unwrap());
    match role.as_str() {
        "consumer_checksum" => {
            let mut c = connect(&sock, T).expect("connect");
            let (mut frames, mut bytes, mut h) = (0u64, 0u64, 0xCBF2_9CE4_8422_2325u64);
            while let Some(l) = c.next(T).expect("next") {
                assert_eq!(l.len(), frame_len(frames), "frame {frames} length");
                assert_eq!(l.as_ptr() as usize % 64, 0);
                h = checksum(h, &l);
                frames += 1;
                bytes += l.len() as u64;
            }
            c.send_control(format!("{frames} {bytes} {h}").as_bytes())
                .expect("send");
        }
        "producer_stream" => {
            let l = Listener::bind(
                &sock,
                RingConfig {
                    capacity: 1 << 20,
                    max_frame: None,
                },
            )
            .expect("bind");
            let mut p = l.accept(T).expect("accept");
            let mut seq = 0u64;
            loop {
                match p.reserve(64 << 10, Duration::from_millis(100)) {
                    Ok(mut r) => {
                        fill_frame(&mut r, seq);
                        r.commit();
                        seq += 1;
                    }
                    Err(ReserveError::Timeout) => {}
                    Err(e) => panic!("producer: {e}"),
                }
            }
        }
        "consumer_hold" => {
            let mut c = connect(&sock, T).expect("connect");
            let held: Vec<_> = (0..10)
                .map(|_| c.next(T).expect("next").expect("frame"))
                .collect();
            c.send_control(b"ready").expect("send");
            std::thread::sleep(Duration::from_secs(60));
            drop(held);
        }
        "connect_expect" => {
            let r = connect(&sock, Duration::from_secs(2));
            println!("RESULT {:?}", r.err());
        }
        other => panic!("unknown child role {other}"),
    }
}

fn open_fds() -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let target = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            ))
        })
        .collect()
}

fn ring_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:hydrofeed-ring"))
        .count()
}

fn dev_shm() -> BTreeSet<std::ffi::OsString> {
    std::fs::read_dir("/dev/shm")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

fn sock_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("ring.sock")
}

#[test]
fn one_gib_crosses_processes_with_checksum() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = sock_path(&dir);
    let listener = Listener::bind(
        &path,
        RingConfig {
            capacity: 8 << 20,
            max_frame: None,
        },
    )
    .unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode");
    let mut child = spawn_child("consumer_checksum", &path);
    let mut p = listener.accept(T).expect("accept");
    assert_eq!(p.peer_pid(), child.id());
    let (mut seq, mut bytes, mut h) = (0u64, 0u64, 0xCBF2_9CE4_8422_2325u64);
    while bytes < 1 << 30 {
        let len = frame_len(seq);
        let mut r = p.reserve(len, T).expect("reserve");
        fill_frame(&mut r, seq);
        h = checksum(h, &r);
        r.commit();
        seq += 1;
        bytes += len as u64;
    }
    p.close();
    let msg = p
        .wait_control(T)
        .expect("control")
        .expect("checksum message");
    assert_eq!(
        String::from_utf8(msg).unwrap(),
        format!("{seq} {bytes} {h}")
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn producer_killed_consumer_gets_peer_lost_within_1s() {
    let _g = serial();
    let fds_before = open_fds();
    let shm_before = dev_shm();
    let dir = tempfile::tempdir().unwrap();
    let path = sock_path(&dir);
    let mut child = spawn_child("producer_stream", &path);
    let mut c = connect(&path, T).expect("connect");
    assert_eq!(c.peer_pid(), child.id());
    for seq in 0..100u64 {
        let l = c.next(T).expect("next").expect("frame");
        assert_eq!(&l[..8], &seq.to_le_bytes());
    }
    child.kill().unwrap();
    let killed = Instant::now();
    let err = loop {
        match c.next(Duration::from_millis(100)) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a killed producer does not close the ring"),
            Err(NextError::Timeout) => assert!(killed.elapsed() < T, "no PeerLost"),
            Err(e) => break e,
        }
    };
    let seen = killed.elapsed();
    assert_eq!(err, NextError::PeerLost);
    assert!(seen <= Duration::from_secs(1), "PeerLost after {seen:?}");
    child.wait().unwrap();
    drop(child);
    drop(c);
    assert_eq!(ring_mappings(), 0);
    assert_eq!(open_fds(), fds_before);
    assert_eq!(dev_shm(), shm_before);
}

#[test]
fn consumer_killed_producer_gets_peer_lost_within_1s_and_nothing_is_left() {
    let _g = serial();
    let fds_before = open_fds();
    let shm_before = dev_shm();
    let dir = tempfile::tempdir().unwrap();
    let path = sock_path(&dir);
    let listener = Listener::bind(
        &path,
        RingConfig {
            capacity: 1 << 20,
            max_frame: None,
        },
    )
    .unwrap();
    let mut child = spawn_child("consumer_hold", &path);
    let mut p = listener.accept(T).expect("accept");
    for seq in 0..10u64 {
        let mut r = p.reserve(1000, T).unwrap();
        fill_frame(&mut r, seq);
        r.commit();
    }
    assert_eq!(p.wait_control(T).unwrap().as_deref(), Some(&b"ready"[..]));
    assert!(p.check_peer().is_ok());
    assert_eq!(ring_mappings(), 1);
    child.kill().unwrap();
    let killed = Instant::now();
    let err = loop {
        match p.reserve(32 << 10, Duration::from_millis(100)) {
            Ok(r) => r.commit(),
            Err(ReserveError::Timeout) => assert!(killed.elapsed() < T, "no PeerLost"),
            Err(e) => break e,
        }
    };
    let seen = killed.elapsed();
    assert_eq!(err, ReserveError::PeerLost);
    assert!(seen <= Duration::from_secs(1), "PeerLost after {seen:?}");
    assert!(p.check_peer().is_err());
    child.wait().unwrap();
    drop(child);
    drop(p);
    drop(listener);
    assert!(!path.exists(), "socket file removed");
    assert_eq!(ring_mappings(), 0, "ring unmapped: the memfd is gone");
    assert_eq!(open_fds(), fds_before);
    assert_eq!(dev_shm(), shm_before);
}

#[test]
fn consumer_of_another_uid_is_refused() {
    let _g = serial();
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "SKIPPED consumer_of_another_uid_is_refused: needs root to run a child as uid 65534"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A copy of this binary that uid 65534 can execute.
    let exe = dir.path().join("child-exe");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = sock_path(&dir);
    let listener = Listener::bind(
        &path,
        RingConfig {
            capacity: 1 << 16,
            max_frame: None,
        },
    )
    .unwrap();

    // The 0600 socket file keeps the other user out.
    let child = spawn_child_from(&exe, "connect_expect", &path, Some(65534));
    let out = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains(&format!(
            "RESULT Some(Io {{ stage: Connect, errno: {} }})",
            libc::EACCES
        )),
        "child output: {out}"
    );
    assert_eq!(
        listener.accept(Duration::from_millis(100)).err(),
        Some(AttachError::Timeout)
    );

    // With the file opened up, SO_PEERCRED still refuses it, on both sides.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let child = spawn_child_from(&exe, "connect_expect", &path, Some(65534));
    assert_eq!(
        listener.accept(T).err(),
        Some(AttachError::PeerUid { uid: 65534 })
    );
    let out = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains("RESULT Some(PeerUid { uid: 0 })"),
        "child output: {out}"
    );
}

/// A fake producer: sends `hello` and a memfd holding `header` (sealed or not).
fn fake_producer(
    path: &Path,
    hello: [u8; 32],
    header: Vec<u8>,
    seal: bool,
) -> std::thread::JoinHandle<()> {
    use rustix::fs::{MemfdFlags, SealFlags};
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileExt;
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let fd = rustix::fs::memfd_create("fake", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
            .unwrap();
        let file = std::fs::File::from(fd);
        file.set_len(4096 + 65536).unwrap();
        file.write_all_at(&header, 0).unwrap();
        if seal {
            rustix::fs::fcntl_add_seals(
                &file,
                SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
            )
            .unwrap();
        }
        let fds = [file.as_fd()];
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut cmsg = rustix::net::SendAncillaryBuffer::new(&mut space);
        assert!(cmsg.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg(
            &stream,
            &[std::io::IoSlice::new(&hello)],
            &mut cmsg,
            rustix::net::SendFlags::NOSIGNAL,
        )
        .unwrap();
        // Wait for the consumer to hang up.
        let mut b = [0u8; 16];
        let _ = rustix::net::recv(&stream, &mut b, rustix::net::RecvFlags::empty());
    })
}

fn header_bytes(magic: u64, version: u32, capacity: u64) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[0..8].copy_from_slice(&magic.to_le_bytes());
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..16].copy_from_slice(&4096u32.to_le_bytes());
    h[16..24].copy_from_slice(&capacity.to_le_bytes());
    h[24..32].copy_from_slice(&1024u64.to_le_bytes());
    h
}

#[test]
fn wrong_magic_version_or_seals_are_refused() {
    use hydrofeed_ipc::layout::{LAYOUT_VERSION, MAGIC};
    use hydrofeed_ipc::wire::Hello;
    let _g = serial();
    let hello = Hello {
        version: LAYOUT_VERSION,
        capacity: 65536,
        max_frame: 1024,
    }
    .encode();
    let cases = [
        (
            hello,
            header_bytes(MAGIC, LAYOUT_VERSION, 65536),
            true,
            None,
        ),
        (
            hello,
            header_bytes(u64::from_le_bytes(*b"NOTARING"), LAYOUT_VERSION, 65536),
            true,
            Some(AttachError::BadMagic),
        ),
        (
            hello,
            header_bytes(MAGIC, 99, 65536),
            true,
            Some(AttachError::BadVersion { found: 99 }),
        ),
        (
            hello,
            header_bytes(MAGIC, LAYOUT_VERSION, 65536),
            false,
            Some(AttachError::BadSeals),
        ),
        (
            hello,
            header_bytes(MAGIC, LAYOUT_VERSION, 1 << 20),
            true,
            Some(AttachError::BadGeometry),
        ),
        (
            Hello {
                version: 7,
                capacity: 65536,
                max_frame: 1024,
            }
            .encode(),
            header_bytes(MAGIC, LAYOUT_VERSION, 65536),
            true,
            Some(AttachError::BadVersion { found: 7 }),
        ),
        (
            [0u8; 32],
            header_bytes(MAGIC, LAYOUT_VERSION, 65536),
            true,
            Some(AttachError::Protocol),
        ),
    ];
    for (i, (hello, header, seal, want)) in cases.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let path = sock_path(&dir);
        let t = fake_producer(&path, hello, header, seal);
        let got = connect(&path, Duration::from_secs(5));
        assert_eq!(got.as_ref().err().copied(), want, "case {i}");
        drop(got);
        t.join().unwrap();
    }
}

#[test]
fn connect_to_nothing_times_out_with_a_clear_error() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let e = connect(&sock_path(&dir), Duration::from_millis(200)).unwrap_err();
    assert_eq!(
        e,
        AttachError::Io {
            stage: hydrofeed_ipc::AttachStage::Connect,
            errno: libc::ENOENT
        }
    );
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(e.to_string().contains("Connect"), "{e}");
}

#[test]
fn control_messages_flow_and_bind_refuses_a_live_socket() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = sock_path(&dir);
    let listener = Listener::bind(
        &path,
        RingConfig {
            capacity: 1 << 16,
            max_frame: None,
        },
    )
    .unwrap();
    assert_eq!(
        Listener::bind(&path, RingConfig::default()).err(),
        Some(AttachError::Io {
            stage: hydrofeed_ipc::AttachStage::Bind,
            errno: libc::EADDRINUSE
        })
    );
    let t = std::thread::spawn({
        let path = path.clone();
        move || {
            let mut c = connect(&path, T).unwrap();
            for i in 0..200u32 {
                let msg = vec![i as u8; (i as usize * 331) % 5000];
                c.send_control(&msg).unwrap();
            }
            assert_eq!(
                c.send_control(&vec![0; hydrofeed_ipc::MAX_CONTROL_MSG + 1]),
                Err(hydrofeed_ipc::ControlError::TooLarge)
            );
            c.close();
        }
    });
    let mut p = listener.accept(T).unwrap();
    for i in 0..200u32 {
        let msg = p.wait_control(T).unwrap().expect("message");
        assert_eq!(msg, vec![i as u8; (i as usize * 331) % 5000], "message {i}");
    }
    t.join().unwrap();
    assert_eq!(
        p.wait_control(T),
        Err(hydrofeed_ipc::ControlError::PeerLost)
    );
    assert_eq!(p.reserve(10, T).err(), Some(ReserveError::Closed));
    drop(p);
    drop(listener);
    assert!(!path.exists());
    // A stale socket file (left by a killed producer: nobody listens) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let again = Listener::bind(&path, RingConfig::default());
    assert!(again.is_ok(), "{again:?}");
}
