//! `cargo fuzz run request`: see [`canopy_fuzz::request`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::request(data));
