//! libFuzzer entry point of the avro decoder (`cargo fuzz run avro`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hydrofeed_fuzz::avro(data));
