//! libFuzzer entry point of the trainer's frame decoder (a valid frame header over a hostile
//! Arrow IPC payload): `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("frame"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("frame", hydrofeed_fuzz::frame, data)
});
