//! `canopy-bench SUITE [options]`: the suites of `canopy bench` without the
//! CLI (`canopy-bench core …` runs the core suite).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("core") => canopy_bench::core_suite::main_with_args(&args[1..]),
        _ => {
            let probe = std::env::current_exe().map(|p| vec![p.into_os_string()]).unwrap_or_default();
            canopy_bench::runner::main(&args, probe)
        }
    };
    if let Err(e) = result {
        eprintln!("canopy-bench: {e:#}");
        let interrupted = e.chain().any(|c| c.is::<canopy_bench::runner::Interrupted>());
        std::process::exit(if interrupted { 130 } else { 1 });
    }
}
