//! Panic policy of the fuzz binaries.
//!
//! The readers and the frame decoder run third-party decoders under `catch_unwind` and turn
//! their panics into errors on purpose (a corrupt file or frame must not take the feeder or
//! the trainer down). libFuzzer's default hook aborts on every panic, caught or not, so it
//! would report those as crashes; [`install`] replaces it: a panic the code under test catches
//! is reported once per location (as `hydrofeed-fuzz: caught panic at ...`), and [`run`]
//! aborts (a crash for libFuzzer) with the message and the stack of a panic that escapes the
//! target. With `HYDROFEED_FUZZ_STRICT=1`, [`install`] keeps the aborting hook: every panic,
//! caught or not, is a crash.

use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

thread_local! {
    /// Panics during the current input: location, message, stack.
    static PANICS: RefCell<Vec<(String, String, Backtrace)>> = const { RefCell::new(Vec::new()) };
}

/// Locations of caught panics reported so far.
static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Whether every panic is a crash (`HYDROFEED_FUZZ_STRICT=1`).
pub fn strict() -> bool {
    std::env::var_os("HYDROFEED_FUZZ_STRICT").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Start of a libFuzzer binary running target `name`: [`install`], and with
/// `HYDROFEED_FUZZ_SEEDS=<dir>`, writes the target's seeds ([`crate::seeds`]) into `<dir>`
/// (`seed-<n>`, before libFuzzer reads its corpus directories).
pub fn init(name: &str) {
    install();
    alt_signal_stack();
    if let Some(dir) = std::env::var_os("HYDROFEED_FUZZ_SEEDS") {
        let dir = std::path::Path::new(&dir);
        std::fs::create_dir_all(dir).expect("create the seed directory");
        let seeds = crate::seeds(name);
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), s).expect("write a seed");
        }
        eprintln!(
            "hydrofeed-fuzz: {} {name} seeds in {}",
            seeds.len(),
            dir.display()
        );
    }
}

/// Lets libFuzzer's SIGSEGV handler run on its own stack, so that a stack overflow (deep
/// recursion in a decoder) is a crash with its input saved rather than a silent death: an
/// alternate signal stack, and a default SIGSEGV action flagged `SA_ONSTACK`, a flag libFuzzer
/// keeps when it installs its handler after this.
fn alt_signal_stack() {
    const SIZE: usize = 1 << 20;
    // SAFETY: a fresh anonymous mapping becomes this thread's signal stack for the life of
    // the process (never unmapped); the SIGSEGV action stays the default one until libFuzzer
    // replaces it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: SIZE,
        };
        if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            return;
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut());
    }
}

/// Installs the hook (see the module docs); a no-op under [`strict`].
pub fn install() {
    if strict() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_else(|| "?".into());
        let p = info.payload();
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        PANICS.with(|v| v.borrow_mut().push((loc, msg, Backtrace::force_capture())));
    }));
}

/// Runs `target` on one input: a panic that escapes it aborts the process after printing its
/// message and stack; panics caught inside are reported once per location.
pub fn run(name: &str, target: fn(&[u8]), data: &[u8]) {
    PANICS.with(|v| v.borrow_mut().clear());
    let escaped = catch_unwind(AssertUnwindSafe(|| target(data))).is_err();
    let panics = PANICS.with(|v| std::mem::take(&mut *v.borrow_mut()));
    if escaped {
        // Earlier panics of this input were caught (the last one escaped): they show the way in.
        for (loc, msg, _) in panics.iter().rev().skip(1).rev() {
            eprintln!("hydrofeed-fuzz: before it, a caught panic at {loc}: {msg}");
        }
        match panics.last() {
            Some((loc, msg, bt)) => {
                eprintln!("hydrofeed-fuzz: panic escaped the {name} target at {loc}: {msg}\n{bt}")
            }
            None => eprintln!("hydrofeed-fuzz: panic escaped the {name} target (see above)"),
        }
        std::process::abort();
    }
    for (loc, msg, _) in panics {
        let new = SEEN
            .lock()
            .map(|mut s| s.insert(loc.clone()))
            .unwrap_or(false);
        if new {
            eprintln!("hydrofeed-fuzz: caught panic at {loc} (the {name} target turned it into an error): {msg}");
        }
    }
}
