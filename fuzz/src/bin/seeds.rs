//! Writes a target's seeds ([`hydrofeed_fuzz::seeds`]) into a corpus directory, one file each
//! (`seed-<n>`): `cargo run --bin seeds -- frame fuzz/corpus/frame`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, dir] = &args[..] else {
        eprintln!("usage: seeds <target> <dir>");
        std::process::exit(2);
    };
    if hydrofeed_fuzz::target(name).is_none() {
        eprintln!(
            "unknown target {name:?} (targets: {:?})",
            hydrofeed_fuzz::TARGETS
        );
        std::process::exit(2);
    }
    let dir = std::path::Path::new(dir);
    std::fs::create_dir_all(dir).expect("create the corpus directory");
    let seeds = hydrofeed_fuzz::seeds(name);
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i}")), s).expect("write a seed");
    }
    println!("{name}: {} seeds in {}", seeds.len(), dir.display());
}
