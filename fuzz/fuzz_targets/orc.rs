//! libFuzzer entry point of the orc decoder (`cargo fuzz run orc`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hydrofeed_fuzz::orc(data));
