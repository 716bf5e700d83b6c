//! `canopy-bench SUITE [options]`: runs a benchmark suite and prints its table.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("core") => canopy_bench::core_suite::main_with_args(&args[1..]),
        _ => Err(anyhow::anyhow!("usage: canopy-bench core [--size N] [--repeat R]")),
    };
    if let Err(e) = result {
        eprintln!("canopy-bench: {e:#}");
        std::process::exit(1);
    }
}
