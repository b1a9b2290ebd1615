//! TLS on the control plane, over real gRPC on loopback: certificates made here with rcgen
//! (CA A signs the coordinator's; CA B is another job's), the client's errors when a side's
//! certificate or TLS itself is missing or wrong, mutual TLS, and the CLI end to end:
//! `hydrofeed launch --tls` feeding every row to two trainers (this test binary re-run as the
//! trainer, `tls_trainer_child`), and a feeder started by hand with the wrong CA.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::service::{self, RunningService, ServiceOptions};
use hydrofeed_coord::tls::{ClientTls, PemFile, ServerTls, CA_ENV};
use hydrofeed_coord::token::{Token, TOKEN_ENV};
use hydrofeed_coord::{Config, Machine, Registration, Role, SplitInfo, Work};
use hydrofeed_error::Error;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Connect timeout of the clients here: every refusal must come back well within it.
const CONNECT: Duration = Duration::from_secs(10);

/// A CA: its certificate (PEM) and what signs with its key.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let pem = p.self_signed(&key).unwrap().pem();
    Ca {
        pem,
        issuer: Issuer::new(p, key),
    }
}

/// A certificate of `ca` for `names` (server) or for a client; its PEM and its key's.
fn leaf(ca: &Ca, names: &[&str], server: bool) -> (String, String) {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "leaf");
    p.use_authority_key_identifier_extension = true;
    p.key_usages.push(KeyUsagePurpose::DigitalSignature);
    p.extended_key_usages.push(if server {
        ExtendedKeyUsagePurpose::ServerAuth
    } else {
        ExtendedKeyUsagePurpose::ClientAuth
    });
    let key = KeyPair::generate().unwrap();
    (
        p.signed_by(&key, &ca.issuer).unwrap().pem(),
        key.serialize_pem(),
    )
}

/// The files of the tests: CA A, CA B, the coordinator's certificate (A), a client
/// certificate of each CA.
struct Certs {
    _dir: tempfile::TempDir,
    ca_a: PathBuf,
    ca_b: PathBuf,
    server: (PathBuf, PathBuf),
    client_a: (PathBuf, PathBuf),
    client_b: (PathBuf, PathBuf),
}

fn certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (a, b) = (ca("CA A"), ca("CA B"));
    let server = leaf(&a, &["127.0.0.1", "localhost"], true);
    let client_a = leaf(&a, &[], false);
    let client_b = leaf(&b, &[], false);
    Certs {
        ca_a: put("ca-a.pem", &a.pem),
        ca_b: put("ca-b.pem", &b.pem),
        server: (put("server.pem", &server.0), put("server.key", &server.1)),
        client_a: (
            put("client-a.pem", &client_a.0),
            put("client-a.key", &client_a.1),
        ),
        client_b: (
            put("client-b.pem", &client_b.0),
            put("client-b.key", &client_b.1),
        ),
        _dir: dir,
    }
}

fn start(token: &Token, tls: Option<ServerTls>) -> RunningService {
    let opts = ServiceOptions {
        ps: 0,
        evaluators: 0,
        reservation_timeout: Duration::from_secs(20),
        heartbeat_interval: Duration::from_millis(50),
        log_path: None,
        token: token.clone(),
        tls,
        filter_counts: None,
    };
    let m = Machine::new(vec![SplitInfo::new(0, 100)], Config::new(1, 10)).unwrap();
    service::spawn(m, opts, "127.0.0.1:0".parse().unwrap(), None).unwrap()
}

fn server_tls(c: &Certs, mutual: bool) -> ServerTls {
    ServerTls::from_files(&c.server.0, &c.server.1, mutual.then_some(c.ca_a.as_path())).unwrap()
}

fn client_tls(ca: &Path, identity: Option<&(PathBuf, PathBuf)>) -> ClientTls {
    let t = ClientTls::new(PemFile::read("--tls-ca", ca).unwrap()).unwrap();
    match identity {
        Some((c, k)) => t
            .with_identity(
                PemFile::read("--tls-cert", c).unwrap(),
                PemFile::read("--tls-key", k).unwrap(),
            )
            .unwrap(),
        None => t,
    }
}

/// Registers rank 0 and takes a lease: a client that gets here talked to the service.
fn register_and_lease(c: &mut CoordClient) {
    let reg = c
        .register(&Registration {
            rank: Some(0),
            host: "127.0.0.1".into(),
            port: 2222,
            gpus: vec![],
            role: Role::Worker,
        })
        .unwrap();
    assert_eq!(reg.rank, 0);
    let w = c.request_work(0, reg.incarnation, "127.0.0.1").unwrap();
    assert!(matches!(w, Work::Lease(_)), "{w:?}");
}

/// Connects with `tls` and expects a refusal: a `Coordinator` error (not a timeout) that
/// comes back within the connect timeout; returns its text.
fn refused(addr: &str, token: &Token, tls: Option<&ClientTls>) -> String {
    let t0 = Instant::now();
    let e = CoordClient::connect_tls(addr, token, CONNECT, tls).unwrap_err();
    assert!(t0.elapsed() < CONNECT, "took {:?}: {e}", t0.elapsed());
    assert!(matches!(e, Error::Coordinator(_)), "{e:?}");
    e.to_string()
}

#[test]
fn client_trusting_the_ca_completes_calls() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, Some(server_tls(&c, false)));
    let tls = client_tls(&c.ca_a, None);
    // A bare address with a CA means TLS; so does https://.
    let mut bare =
        CoordClient::connect_tls(&svc.addr.to_string(), &token, CONNECT, Some(&tls)).unwrap();
    register_and_lease(&mut bare);
    let https = format!("https://{}", svc.addr);
    let mut c2 = CoordClient::connect_tls(&https, &token, CONNECT, Some(&tls)).unwrap();
    assert_eq!(c2.state().unwrap().epoch, 0);
    // The token is still checked under TLS.
    let mut other =
        CoordClient::connect_tls(&https, &Token::generate().unwrap(), CONNECT, Some(&tls)).unwrap();
    let e = other.state().unwrap_err().to_string();
    assert!(e.contains("wrong token"), "{e}");
    svc.shutdown().unwrap();
}

#[test]
fn client_trusting_another_ca_is_refused_clearly() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, Some(server_tls(&c, false)));
    let e = refused(
        &svc.addr.to_string(),
        &token,
        Some(&client_tls(&c.ca_b, None)),
    );
    let want = format!(
        "TLS handshake with the coordinator at https://{} failed: its certificate is not signed \
         by the CA in --tls-ca {}",
        svc.addr,
        c.ca_b.display()
    );
    assert!(e.contains(&want), "{e}");
    assert!(e.contains("UnknownIssuer"), "{e}");
    // Nothing reached the state.
    assert!(svc
        .shared
        .with_machine(|m| m.ranks().iter().all(|r| !r.joined)));
    svc.shutdown().unwrap();
}

#[test]
fn certificate_for_another_name_is_refused_clearly() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, Some(server_tls(&c, false)));
    let tls = client_tls(&c.ca_a, None).with_domain("coordinator.example");
    let e = refused(&svc.addr.to_string(), &token, Some(&tls));
    assert!(e.contains(&svc.addr.to_string()), "{e}");
    assert!(
        e.contains("certificate is not issued to \"coordinator.example\""),
        "{e}"
    );
    svc.shutdown().unwrap();
}

#[test]
fn plain_client_of_a_tls_coordinator_is_refused_clearly() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, Some(server_tls(&c, false)));
    let e = refused(&svc.addr.to_string(), &token, None);
    assert!(
        e.contains(&format!(
            "the coordinator at http://{} speaks TLS and this client plain HTTP/2",
            svc.addr
        )),
        "{e}"
    );
    assert!(e.contains("--tls-ca"), "{e}");
    // The coordinator still serves the clients that do speak TLS.
    let mut ok = CoordClient::connect_tls(
        &svc.addr.to_string(),
        &token,
        CONNECT,
        Some(&client_tls(&c.ca_a, None)),
    )
    .unwrap();
    register_and_lease(&mut ok);
    svc.shutdown().unwrap();
}

#[test]
fn tls_client_of_a_plain_coordinator_is_refused_clearly() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, None);
    let e = refused(
        &svc.addr.to_string(),
        &token,
        Some(&client_tls(&c.ca_a, None)),
    );
    assert!(
        e.contains(&format!(
            "TLS handshake with the coordinator at https://{} failed",
            svc.addr
        )),
        "{e}"
    );
    assert!(e.contains("does not speak TLS"), "{e}");
    svc.shutdown().unwrap();
}

#[test]
fn mutual_tls_refuses_clients_without_a_certificate_of_its_ca() {
    let c = certs();
    let token = Token::generate().unwrap();
    let svc = start(&token, Some(server_tls(&c, true)));
    let addr = svc.addr.to_string();
    // No client certificate.
    let e = refused(&addr, &token, Some(&client_tls(&c.ca_a, None)));
    assert!(e.contains(&format!("https://{addr}")), "{e}");
    assert!(e.contains("it requires a client certificate"), "{e}");
    assert!(e.contains("--tls-cert"), "{e}");
    // A client certificate of another CA.
    let e = refused(&addr, &token, Some(&client_tls(&c.ca_a, Some(&c.client_b))));
    assert!(e.contains(&format!("https://{addr}")), "{e}");
    assert!(
        e.contains(&format!(
            "it refused the client certificate in --tls-cert {}",
            c.client_b.0.display()
        )),
        "{e}"
    );
    assert!(svc
        .shared
        .with_machine(|m| m.ranks().iter().all(|r| !r.joined)));
    // Its own CA's client certificate.
    let mut ok = CoordClient::connect_tls(
        &addr,
        &token,
        CONNECT,
        Some(&client_tls(&c.ca_a, Some(&c.client_a))),
    )
    .unwrap();
    register_and_lease(&mut ok);
    svc.shutdown().unwrap();
}

#[test]
fn https_address_without_a_ca_is_an_error() {
    let token = Token::generate().unwrap();
    let e = CoordClient::connect_tls("https://127.0.0.1:9", &token, CONNECT, None).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.to_string().contains(CA_ENV), "{e}");
}

#[test]
fn server_key_of_another_certificate_is_named() {
    let c = certs();
    let e = ServerTls::from_files(&c.server.0, &c.client_a.1, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "--tls-key {} does not go with the certificate in --tls-cert {}",
            c.client_a.1.display(),
            c.server.0.display()
        )),
        "{e}"
    );
}

// ---- the CLI end to end ----

const BATCH: usize = 50;

/// The trainer of `launch_tls_feeds_every_row` (a no-op when run as a normal test): checks
/// that `launch` handed it the job's TLS (an https:// address and the CA in the environment,
/// which the coordinator client picks up as `hydrofeed.DataFeed.state()` does), then reads
/// its feed to the end, acking every frame, and logs the ids it got.
#[test]
fn tls_trainer_child() {
    let Ok(out) = std::env::var("HF_TLS_TRAINER_OUT") else {
        return;
    };
    let rank: u32 = std::env::var("HYDROFEED_RANK").unwrap().parse().unwrap();
    let addr = std::env::var("HYDROFEED_COORDINATOR").unwrap();
    let ca = std::env::var(CA_ENV).unwrap();
    let token = Token::new(&std::env::var(TOKEN_ENV).unwrap()).unwrap();
    let hostport = addr.strip_prefix("https://").expect("an https:// address");
    // The client takes the CA (and, under mutual TLS, the certificate) from the environment.
    let mut c = CoordClient::connect(&addr, &token, CONNECT).unwrap();
    c.metrics().unwrap();
    // The coordinator really is TLS: a plain client is refused.
    let e = CoordClient::connect_tls(hostport, &token, CONNECT, None).unwrap_err();
    assert!(e.to_string().contains("speaks TLS"), "{e}");

    let mut lines = format!("ca {ca}\n");
    common::read_feed(BATCH as u64, |got| {
        if let common::Got::Batch(_, ids) = got {
            for v in ids {
                lines.push_str(&format!("{v}\n"));
            }
        }
    });
    std::fs::write(Path::new(&out).join(format!("rank-{rank}.txt")), lines).unwrap();
}

fn dataset(dir: &Path, rows: u64) -> PathBuf {
    let data = dir.join("data");
    write_dataset(
        &data,
        &GenOptions {
            format: Format::Tfrecord,
            rows,
            files: 3,
            ..Default::default()
        },
    )
    .unwrap();
    data
}

#[test]
fn launch_tls_feeds_every_row() {
    let d = tempfile::tempdir().unwrap();
    // 2 workers x 50 rows a step: every row fits a step, nothing is dropped.
    let rows = 1000u64;
    let data = dataset(d.path(), rows);
    let me = std::env::current_exe().unwrap();
    for mode in [None, Some("mutual")] {
        let out = d.path().join(format!("out-{}", mode.unwrap_or("server")));
        std::fs::create_dir(&out).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydrofeed"));
        cmd.arg("launch").arg("--tls");
        if let Some(m) = mode {
            cmd.arg(m);
        }
        let r = cmd
            .args(["--workers", "2", "--batch-size"])
            .arg(BATCH.to_string())
            .arg("--input")
            .arg(&data)
            .arg("--")
            .arg(&me)
            .args([
                "--exact",
                "tls_trainer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("HF_TLS_TRAINER_OUT", &out)
            // The caller's TLS variables do not leak into the job.
            .env(CA_ENV, d.path().join("no-such-ca.pem"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{mode:?}: {stderr}");
        let mut ids: Vec<i64> = Vec::new();
        for rank in 0..2 {
            let text = std::fs::read_to_string(out.join(format!("rank-{rank}.txt"))).unwrap();
            let mut lines = text.lines();
            let ca = lines.next().unwrap().strip_prefix("ca ").unwrap();
            // The job's TLS files went with its directory.
            assert!(!Path::new(ca).exists(), "{ca} left behind");
            ids.extend(lines.map(|l| l.parse::<i64>().unwrap()));
        }
        ids.sort_unstable();
        assert_eq!(ids, (0..rows as i64).collect::<Vec<_>>(), "{mode:?}");
    }
}

#[test]
fn feeder_with_the_wrong_ca_exits_with_a_clear_error() {
    let c = certs();
    let d = tempfile::tempdir().unwrap();
    let data = dataset(d.path(), 100);
    let token = Token::generate().unwrap();
    let mut coord = Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(["coordinator", "--workers", "1", "--batch-size", "10"])
        .arg("--input")
        .arg(&data)
        .args(["--listen", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(&c.server.0)
        .arg("--tls-key")
        .arg(&c.server.1)
        .env(TOKEN_ENV, token.as_str())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(coord.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    // Keep reading its stdout: a closed pipe would end it at its next line.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let addr = line
        .trim()
        .strip_prefix("hydrofeed coordinator listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    let feeder = |ca_flag: bool, coordinator: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydrofeed"));
        cmd.arg("feeder")
            .arg("--input")
            .arg(&data)
            .args(["--coordinator", coordinator])
            .arg("--socket-dir")
            .arg(d.path().join("sock"))
            .args(["--accept-timeout", "5"])
            .env(TOKEN_ENV, token.as_str())
            .env_remove(CA_ENV);
        if ca_flag {
            cmd.arg("--tls-ca").arg(&c.ca_b);
        } else {
            cmd.env(CA_ENV, &c.ca_b);
        }
        let t0 = Instant::now();
        let r = cmd.output().unwrap();
        (r, t0.elapsed())
    };
    let https = format!("https://{addr}");
    for (ca_flag, coordinator, named) in [
        (
            true,
            https.as_str(),
            format!("--tls-ca {}", c.ca_b.display()),
        ),
        (
            false,
            addr.as_str(),
            format!("{CA_ENV}={}", c.ca_b.display()),
        ),
    ] {
        let (r, took) = feeder(ca_flag, coordinator);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{stderr}");
        // The feeder's own connect timeout is 30 s: the refusal comes well before it.
        assert!(took < Duration::from_secs(30), "took {took:?}: {stderr}");
        let want = format!(
            "TLS handshake with the coordinator at {https} failed: its certificate is not signed \
             by the CA in {named}"
        );
        assert!(stderr.contains(&want), "{stderr}");
        assert_eq!(
            stderr.matches("TLS handshake").count(),
            1,
            "one error: {stderr}"
        );
    }
    let _ = coord.kill();
    let _ = coord.wait();
}
