//! `cargo fuzz run fragment`: see [`canopy_fuzz::fragment`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::fragment(data));
