//! Profiling helper: repeats one heavy operation so a profiler can sample it.
//! `profile-read DIR N` imports N entries into DIR (if empty) and reads the
//! whole tree 10 times.

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = &args[1];
    let n: usize = args[2].parse()?;
    let what = args.get(3).map(String::as_str).unwrap_or("read");
    let store = canopy::Store::open(&format!("lmdb:{dir}?sync=off"))?;
    store.declare_list("/perf:cont/lst", canopy::ListInfo::keyed(["k1", "k2"]))?;
    let json = canopy_bench::core_suite::perf_json(n);
    if what == "import" {
        for i in 0..5 {
            let d = format!("{dir}/i{i}");
            let s = canopy::Store::open(&format!("lmdb:{d}?sync=off"))?;
            s.declare_list("/perf:cont/lst", canopy::ListInfo::keyed(["k1", "k2"]))?;
            let t = std::time::Instant::now();
            s.running().import(json.as_bytes(), canopy::Operation::Merge)?;
            eprintln!("import {:?}", t.elapsed());
        }
        return Ok(());
    }
    if store.running().count("/perf:cont/lst")? == 0 {
        store.running().import(json.as_bytes(), canopy::Operation::Merge)?;
    }
    for _ in 0..10 {
        let t = std::time::Instant::now();
        let tree = store.running().get("/", Default::default())?;
        let mut out = Vec::new();
        canopy_core::json::write_container(&mut out, &tree, &Default::default())?;
        eprintln!("{:?} {}", t.elapsed(), out.len());
    }
    Ok(())
}
