//! Writes the `cps` suite's devices as one RFC 7951 JSON document to stdout,
//! for importing with `canopy import` (declare the lists of
//! `canopy_bench::suites::cps::LISTS` with `--list`).
//!
//! `cargo run --release -p canopy-bench --example cps_document -- [DEVICES] > devices.json`;
//! with `--yang` instead of a count, it writes the YANG module of the devices
//! (the one `canopy bench cps --mode http` uploads), to load with `canopy
//! schema add` before importing the document into a store with a schema.

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("--yang") {
        print!("{}", canopy_bench::suites::cps_http::yang());
        return Ok(());
    }
    let n: usize = std::env::args().nth(1).map_or(Ok(1000), |a| a.parse())?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut out = canopy_bench::suites::cps::write_document(n, out)?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}
