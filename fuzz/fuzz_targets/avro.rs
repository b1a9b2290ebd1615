//! libFuzzer entry point of the avro reader: `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("avro"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("avro", hydrofeed_fuzz::avro, data)
});
