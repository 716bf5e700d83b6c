//! `cargo fuzz run store_file`: see [`canopy_fuzz::store_file`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::store_file(data));
