//! The five seed workloads, and the server under load. Each suite's `run` times exactly the work its seed
//! describes on one backend at one size and returns the rows in the seed's
//! order; see each module for what the rows time.

pub mod cps;
pub mod cps_http;
pub mod keyset;
pub mod objects;
pub mod rpm;
pub mod server;
pub mod sysrepo;

use crate::report::Layout;
use crate::runner::{HttpMode, Suite};

/// Every suite, in the order `canopy bench all` runs them.
pub static ALL: [Suite; 6] = [
    Suite {
        name: "sysrepo",
        title: "sysrepo's datastore plugin test (seed 000)",
        layout: Layout::PerBackend,
        seed_sizes: &[1000, 10_000, 100_000],
        small_size: 100,
        default_repeat: 10,
        run: sysrepo::run,
        notes: sysrepo::notes,
        http: None,
    },
    Suite {
        name: "keyset",
        title: "Elektra's keyset storage benchmark (seed 001)",
        layout: Layout::SideBySide,
        seed_sizes: &[2, 200, 2000, 200_000, 2_000_000],
        small_size: 200,
        default_repeat: 5,
        run: keyset::run,
        notes: keyset::notes,
        http: None,
    },
    Suite {
        name: "objects",
        title: "Durus storages with 500,000 news items (seed 002)",
        layout: Layout::SideBySide,
        seed_sizes: &[500_000],
        small_size: 500,
        default_repeat: 3,
        run: objects::run,
        notes: objects::notes,
        http: None,
    },
    Suite {
        name: "cps",
        title: "ONAP CPS with openroadm devices of 86 fragments (seed 003)",
        layout: Layout::SideBySide,
        seed_sizes: &[1000, 2000, 5000, 10_000],
        small_size: 8,
        default_repeat: 3,
        run: cps::run,
        notes: cps::notes,
        http: Some(HttpMode { run: cps_http::run, notes: cps_http::notes }),
    },
    Suite {
        name: "rpm",
        title: "rpm database backends with 2,506 packages (seed 004)",
        layout: Layout::SideBySide,
        seed_sizes: &[2506],
        small_size: 4,
        default_repeat: 1,
        run: rpm::run,
        notes: rpm::notes,
        http: None,
    },
    Suite {
        name: "server",
        title:
            "canopy serve under load: concurrent RESTCONF clients over loopback (beside seed 003's parallel clients)",
        layout: Layout::SideBySide,
        seed_sizes: &[1000, 10_000],
        small_size: 100,
        default_repeat: 3,
        run: server::run,
        notes: server::notes,
        http: None,
    },
];

/// A small deterministic generator (xorshift64*): the same data on every run
/// and machine, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal deviate (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `len` characters from `alphabet`.
    pub fn text(&mut self, alphabet: &[u8], len: usize) -> String {
        (0..len).map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char).collect()
    }

    /// A random permutation of `0..n` (Fisher–Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    }
}

pub const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// The store key (datastore prefix + path key) of a fragment of running.
pub fn fragment_key(path: &str) -> Vec<u8> {
    let p: canopy::Path = path.parse().expect("a valid path");
    let mut k = canopy_store::keys::data_prefix(canopy::Datastore::Running);
    k.extend(canopy_store::keys::path_key(&p).expect("a path with keys"));
    k
}

/// A list entry or container with these leaves.
pub fn container(leaves: &[(&str, canopy::Value)]) -> canopy::Container {
    let mut c = canopy::Container::default();
    for (name, v) in leaves {
        c.children.insert((*name).into(), canopy::Node::leaf(v.clone()));
    }
    c
}

pub fn s(v: impl Into<String>) -> canopy::Value {
    canopy::Value::String(v.into().into())
}

pub fn num(v: impl std::fmt::Display) -> canopy::Value {
    canopy::Value::Number(v.to_string().into())
}
