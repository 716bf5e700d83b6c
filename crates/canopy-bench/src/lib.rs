//! canopy's benchmark suites. Each suite times canopy as users run it (the
//! public library API, real durability settings, real serialization) beside
//! the backend's raw engine doing the same puts and gets with the same bytes,
//! so the ratio is canopy's overhead over the nearest thing to a physical
//! limit on the machine.

pub mod core_suite;
pub mod raw;
pub mod timing;
