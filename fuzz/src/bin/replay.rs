//! Runs one fuzz target over files or directories of inputs (stable Rust):
//! `cargo run --bin replay -- tfrecord artifacts/tfrecord/`. Panics as under libFuzzer
//! ([`hydrofeed_fuzz::panics`]): a caught one is reported, one that escapes aborts with its
//! stack.

use std::path::Path;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(name) = args.next() else {
        eprintln!(
            "usage: replay <{}> <file or dir>...",
            hydrofeed_fuzz::TARGETS.join("|")
        );
        std::process::exit(2);
    };
    let Some(target) = hydrofeed_fuzz::target(&name) else {
        eprintln!("unknown target {name:?}");
        std::process::exit(2);
    };
    hydrofeed_fuzz::panics::install();
    let mut n = 0;
    for a in args {
        let p = Path::new(&a);
        let files: Vec<_> = if p.is_dir() {
            std::fs::read_dir(p)
                .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default()
        } else {
            vec![p.to_path_buf()]
        };
        for f in files {
            match std::fs::read(&f) {
                Ok(data) => {
                    eprintln!("{}", f.display());
                    hydrofeed_fuzz::panics::run(&name, target, &data);
                    n += 1;
                }
                Err(e) => eprintln!("{}: {e}", f.display()),
            }
        }
    }
    println!("{name}: ran {n} inputs, no panic escaped");
}
