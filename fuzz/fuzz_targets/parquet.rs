//! libFuzzer entry point of the parquet decoder (`cargo fuzz run parquet`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hydrofeed_fuzz::parquet(data));
