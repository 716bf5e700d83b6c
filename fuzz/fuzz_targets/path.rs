//! `cargo fuzz run path`: see [`canopy_fuzz::path`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::path(data));
