//! libFuzzer entry point of both ends of the ring against a hostile peer: `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("ring"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("ring", hydrofeed_fuzz::ring, data)
});
