//! libFuzzer entry point of the orc reader: `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("orc"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("orc", hydrofeed_fuzz::orc, data)
});
