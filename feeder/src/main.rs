//! The `hydrofeed` command line.

use clap::Parser;

/// Keeps freed memory in the process instead of returning it to the kernel at once.
///
/// Decoded batches are tens of MiB each (a 8192-row batch of 784 float32 pixels is 25.7 MB), so
/// glibc's defaults serve every one of them from a fresh `mmap` and unmap it on free: every
/// batch page-faults its memory in again, and page faults on several decode threads serialise
/// on the address-space lock. Measured on `hydrofeed bench decode` (docs/arch/readers.md,
/// "Performance"): 72k page faults per Parquet pass instead of about 2k, and ORC rows/s up
/// 1.2x single-thread and 3x on all cores once the memory is kept. The process's footprint
/// stays flat (it is bounded by the feeder's memory budget), it just stops churning.
#[cfg(target_env = "gnu")]
fn retain_freed_memory() {
    // SAFETY: mallopt only sets allocator parameters; it is called once, before any thread
    // is started, with valid parameter numbers and values.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}

#[cfg(not(target_env = "gnu"))]
fn retain_freed_memory() {}

fn main() {
    retain_freed_memory();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HYDROFEED_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour only for a terminal, and never with NO_COLOR set (https://no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    if let Err(e) = hydrofeed_feeder::cli::run(hydrofeed_feeder::cli::Cli::parse()) {
        eprintln!("Error: {e:?}");
        std::process::exit(hydrofeed_feeder::cli::exit_code(&e));
    }
}
