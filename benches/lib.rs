//! Benchmarks of hydrofeed: criterion benches under `benches/`, end-to-end benchmarks in the
//! `hydrofeed bench` CLI and `python -m hydrofeed.bench`.
