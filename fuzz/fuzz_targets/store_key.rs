//! `cargo fuzz run store_key`: see [`canopy_fuzz::store_key`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| canopy_fuzz::store_key(data));
