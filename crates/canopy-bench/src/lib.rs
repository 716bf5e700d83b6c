//! canopy's benchmark suites: the seed documents' workloads replayed against
//! every backend through the public library API (real durability settings,
//! real serialization), each beside the backend's raw engine doing the same
//! puts and gets, so the ratio is canopy's overhead over the nearest thing to
//! a physical limit on the machine.
//!
//! [`run`] is `canopy bench`, taking its arguments as [`BenchArgs`] (clap),
//! which the CLI flattens into its `bench` subcommand; [`runner`] runs the
//! suites; [`suites`] holds the five workloads; [`report`] renders markdown,
//! JSON and SVG; [`seeds`] holds the seed documents' own figures that the
//! charts draw beside canopy's.

mod command;
pub mod core_suite;
pub mod probe;
pub mod raw;
pub mod report;
pub mod runner;
pub mod seeds;
pub mod suites;
pub mod timing;

pub use command::{run, BenchArgs, BenchCommand, Error};
