//! `canopy-bench SUITE [options]`: the suites of `canopy bench` without the
//! CLI (`canopy-bench core …` runs the core suite).

use clap::Parser;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("core") => canopy_bench::core_suite::main_with_args(&args[1..]).map_err(canopy_bench::Error::from),
        _ => {
            let probe = std::env::current_exe().map(|p| vec![p.into_os_string()]).unwrap_or_default();
            canopy_bench::run(canopy_bench::BenchCommand::parse().args, probe)
        }
    };
    if let Err(e) = result {
        let code = if matches!(e, canopy_bench::Error::Interrupted) { 130 } else { 1 };
        eprintln!("canopy-bench: {:#}", anyhow::Error::from(e));
        std::process::exit(code);
    }
}
