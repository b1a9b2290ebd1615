//! libFuzzer entry point of the tfrecord decoder (`cargo fuzz run tfrecord`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hydrofeed_fuzz::tfrecord(data));
