//! Runs every fuzz target's check on stable: over the seed corpus in
//! `corpus/TARGET/` and over deterministic mutations of each seed (bytes
//! flipped, cut, repeated, spliced), so CI exercises the checks without a
//! fuzzer. A failure names the target and the input.

use std::path::Path;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that often matter to the formats and parsers.
const INTERESTING: &[u8] = b"\0\x01\x02\x03\x10\x20\x7f\x80\xff{}[]\"':,/=*@.\\-0123456789eE";

fn mutate(seed: &[u8], others: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            2 => v.truncate(at),
            3 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                let piece = v[at.min(end)..end].to_vec();
                v.splice(at..at, piece);
            }
            4 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            _ => {
                let other = &others[rng.below(others.len())];
                let from = rng.below(other.len());
                let end = (from + rng.below(32)).min(other.len());
                v.splice(at..at, other[from..end].iter().copied());
            }
        }
    }
    v
}

fn corpus_dir(target: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target)
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus_dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).expect("corpus file")).collect()
}

/// Seeds for the binary targets, made from the JSON seeds: the records a
/// store holds for each document (fragments, keys) and the files of both
/// whole-file formats holding them (first byte: 0 snapshot, 1 json).
fn derived_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use canopy_file::Format;
    let schema = canopy_core::Schemaless::default();
    let mut out = Vec::new();
    for doc in seeds("json") {
        let Ok(text) = String::from_utf8(doc) else { continue };
        let Ok(records) = canopy_store::stream::parse_fragments(&text, &schema, canopy_store::keys::Datastore::Running)
        else {
            continue;
        };
        let mut map = canopy_file::Map::new();
        for (k, v) in records {
            out.push(("store_key", k.clone()));
            out.push(("fragment", v.clone()));
            map.insert(k, v);
        }
        let formats: [&dyn Format; 2] = [&canopy_file::snapshot::SnapshotFormat, &canopy_file::json::JsonFormat];
        for (pick, f) in formats.into_iter().enumerate() {
            let mut file = vec![pick as u8];
            file.extend(f.encode(&map, 7).expect("a parsed document encodes"));
            out.push(("store_file", file));
        }
    }
    out
}

/// `CANOPY_FUZZ_WRITE_SEEDS=1 cargo test -p canopy-fuzz` writes the derived
/// seeds into `corpus/`, where cargo-fuzz starts from them too.
#[test]
fn derived_seeds_are_in_the_corpus() {
    let derived = derived_seeds();
    assert!(derived.iter().any(|(t, _)| *t == "store_file"), "no document of the json corpus parsed");
    if std::env::var_os("CANOPY_FUZZ_WRITE_SEEDS").is_some() {
        for (i, (target, bytes)) in derived.iter().enumerate() {
            std::fs::write(corpus_dir(target).join(format!("derived-{i:03}")), bytes).expect("write seed");
        }
    }
    for (target, bytes) in &derived {
        assert!(
            seeds(target).contains(bytes),
            "a derived {target} seed is missing: rerun with CANOPY_FUZZ_WRITE_SEEDS=1"
        );
    }
}

fn show(input: &[u8]) -> String {
    match std::str::from_utf8(input) {
        Ok(s) => format!("{s:?}"),
        Err(_) => format!("{input:02x?}"),
    }
}

#[test]
fn every_target_holds_on_its_corpus_and_mutations() {
    let rounds: usize = std::env::var("CANOPY_FUZZ_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for (name, check) in canopy_fuzz::targets() {
        let seeds = seeds(name);
        assert!(!seeds.is_empty(), "no seeds for {name}");
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
        for seed in &seeds {
            run(name, check, seed);
            for _ in 0..rounds {
                let input = mutate(seed, &seeds, &mut rng);
                run(name, check, &input);
            }
        }
    }
}

fn run(name: &str, check: fn(&[u8]), input: &[u8]) {
    if std::panic::catch_unwind(|| check(input)).is_err() {
        panic!("fuzz target `{name}` failed on input {}", show(input));
    }
}
