//! libFuzzer entry point of the parquet reader: `make fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: hydrofeed_fuzz::panics::init("parquet"), |data: &[u8]| {
    hydrofeed_fuzz::panics::run("parquet", hydrofeed_fuzz::parquet, data)
});
