//! libFuzzer entry point of the tfrecord reader: `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("tfrecord"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("tfrecord", hydrofeed_fuzz::tfrecord, data)
});
