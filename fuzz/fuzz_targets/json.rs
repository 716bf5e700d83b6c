//! `cargo fuzz run json`: see [`canopy_fuzz::json`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::json(data));
