//! The seed documents' own figures, as data, so the charts can draw them
//! beside canopy's: for each suite, each system the seed measured, each row as
//! the canopy suite names it, the seed's figure at each data set size.
//!
//! Figures are copied exactly from the seed documents (`seeds/000_*.txt` …
//! `004_*.txt` in the shared folder), in seconds or bytes. Where a seed's
//! figure has no canopy row that does the same work, or the units or the
//! statistic differ, it is left out; each suite's comment says what and why.
//! `tests/suites.rs` checks that every row named here is a row its suite
//! produces, with a cell of the same unit.

/// What a seed figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Bytes,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Bytes => "bytes",
        }
    }
}

/// One seed system's figures for one row of a suite.
#[derive(Clone, Copy, Debug)]
pub struct Series {
    /// The system as the seed names it ("JSON DS file", "quickdump v3").
    pub system: &'static str,
    /// The row as the canopy suite names it.
    pub row: &'static str,
    pub unit: Unit,
    /// (data set size as the suite counts it, figure), by increasing size.
    pub points: &'static [(u64, f64)],
}

/// A seed document's figures for one suite.
#[derive(Debug)]
pub struct Seed {
    /// The suite's name (`canopy bench SUITE`).
    pub suite: &'static str,
    /// Which seed document, and what it measured.
    pub document: &'static str,
    /// Grouped by system, systems in the document's order.
    pub series: &'static [Series],
}

impl Seed {
    /// The systems, in the document's order.
    pub fn systems(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for s in self.series {
            if !out.contains(&s.system) {
                out.push(s.system);
            }
        }
        out
    }

    /// Every system's figures for `row`, in the document's order.
    pub fn row<'a>(&'a self, row: &'a str) -> impl Iterator<Item = &'a Series> + 'a {
        self.series.iter().filter(move |s| s.row == row)
    }
}

/// The seed's figures for `suite`, if it has a seed document.
pub fn for_suite(suite: &str) -> Option<&'static Seed> {
    SEEDS.iter().find(|s| s.suite == suite)
}

const fn t(system: &'static str, row: &'static str, points: &'static [(u64, f64)]) -> Series {
    Series { system, row, unit: Unit::Seconds, points }
}

const fn b(system: &'static str, row: &'static str, points: &'static [(u64, f64)]) -> Series {
    Series { system, row, unit: Unit::Bytes, points }
}

/// Every suite's seed figures, in the order of [`crate::suites::ALL`].
pub static SEEDS: [Seed; 5] = [
    Seed {
        suite: "sysrepo",
        document: "seed 000: sysrepo's datastore plugin performance test (mean of 10 runs)",
        series: SYSREPO,
    },
    Seed {
        suite: "keyset",
        document: "seed 001: Elektra's benchmark_storage, dump and quickdump (hyperfine means)",
        series: KEYSET,
    },
    Seed { suite: "objects", document: "seed 002: Durus storages with 500,000 news items (2007)", series: OBJECTS },
    Seed { suite: "cps", document: "seed 003: ONAP CPS with openroadm devices (E2E REST durations)", series: CPS },
    Seed { suite: "rpm", document: "seed 004: rpm database backends with 2,506 packages", series: RPM },
];

/// Seed 000: all 22 rows, named as canopy names them, for the three plugins
/// at 1,000 / 10,000 / 100,000 items. Nothing left out.
static SYSREPO: &[Series] = &[
    t("JSON DS file", "get tree", &[(1000, 0.001854), (10_000, 0.019634), (100_000, 0.257987)]),
    t("JSON DS file", "get item", &[(1000, 0.001778), (10_000, 0.017939), (100_000, 0.214855)]),
    t("JSON DS file", "get tree hash", &[(1000, 0.001265), (10_000, 0.014083), (100_000, 0.182746)]),
    t("JSON DS file", "get tree hash cached", &[(1000, 0.000011), (10_000, 0.000028), (100_000, 0.000405)]),
    t("JSON DS file", "get user ordered tree", &[(1000, 0.000771), (10_000, 0.007701), (100_000, 0.092115)]),
    t("JSON DS file", "get oper tree", &[(1000, 0.003297), (10_000, 0.031657), (100_000, 0.413835)]),
    t("JSON DS file", "create batch", &[(1000, 0.004387), (10_000, 0.047354), (100_000, 0.658496)]),
    t("JSON DS file", "create user ordered items", &[(1000, 0.007394), (10_000, 0.090858), (100_000, 0.964103)]),
    t("JSON DS file", "create all items", &[(1000, 0.009278), (10_000, 0.106988), (100_000, 1.214159)]),
    t("JSON DS file", "create all items oper", &[(1000, 0.009828), (10_000, 0.111167), (100_000, 1.233159)]),
    t("JSON DS file", "many oper change_subs", &[(1000, 0.268622), (10_000, 3.713649), (100_000, 42.937387)]),
    t("JSON DS file", "remove all items", &[(1000, 0.000290), (10_000, 0.003449), (100_000, 0.036810)]),
    t("JSON DS file", "remove all items cached", &[(1000, 0.000220), (10_000, 0.002566), (100_000, 0.043710)]),
    t("JSON DS file", "remove whole subtree", &[(1000, 0.000279), (10_000, 0.002902), (100_000, 0.036970)]),
    t("JSON DS file", "remove whole subtree cached", &[(1000, 0.000227), (10_000, 0.002584), (100_000, 0.044760)]),
    t("JSON DS file", "create an item", &[(1000, 0.002188), (10_000, 0.023081), (100_000, 0.262785)]),
    t("JSON DS file", "create an item cached", &[(1000, 0.001278), (10_000, 0.014541), (100_000, 0.234830)]),
    t("JSON DS file", "create an item oper", &[(1000, 0.003886), (10_000, 0.041899), (100_000, 0.778777)]),
    t("JSON DS file", "modify an item", &[(1000, 0.001398), (10_000, 0.015329), (100_000, 0.162250)]),
    t("JSON DS file", "modify an item cached", &[(1000, 0.000505), (10_000, 0.006262), (100_000, 0.107049)]),
    t("JSON DS file", "remove an item", &[(1000, 0.001403), (10_000, 0.015146), (100_000, 0.161752)]),
    t("JSON DS file", "remove an item cached", &[(1000, 0.000508), (10_000, 0.005578), (100_000, 0.105254)]),
    t("MONGO DS", "get tree", &[(1000, 0.003391), (10_000, 0.032961), (100_000, 0.419329)]),
    t("MONGO DS", "get item", &[(1000, 0.004908), (10_000, 0.032789), (100_000, 0.415434)]),
    t("MONGO DS", "get tree hash", &[(1000, 0.000210), (10_000, 0.000243), (100_000, 0.000278)]),
    t("MONGO DS", "get tree hash cached", &[(1000, 0.000091), (10_000, 0.000227), (100_000, 0.003688)]),
    t("MONGO DS", "get user ordered tree", &[(1000, 0.002773), (10_000, 0.026990), (100_000, 0.345308)]),
    t("MONGO DS", "get oper tree", &[(1000, 0.009505), (10_000, 0.034777), (100_000, 0.432859)]),
    t("MONGO DS", "create batch", &[(1000, 0.015844), (10_000, 0.151078), (100_000, 1.749139)]),
    t("MONGO DS", "create user ordered items", &[(1000, 0.116348), (10_000, 1.323064), (100_000, 14.456433)]),
    t("MONGO DS", "create all items", &[(1000, 0.019848), (10_000, 0.218437), (100_000, 2.360571)]),
    t("MONGO DS", "create all items oper", &[(1000, 0.017425), (10_000, 0.165269), (100_000, 1.890673)]),
    t("MONGO DS", "many oper change_subs", &[(1000, 0.656261), (10_000, 7.151995), (100_000, 80.463488)]),
    t("MONGO DS", "remove all items", &[(1000, 0.005498), (10_000, 0.039869), (100_000, 0.443124)]),
    t("MONGO DS", "remove all items cached", &[(1000, 0.005236), (10_000, 0.039474), (100_000, 0.482664)]),
    t("MONGO DS", "remove whole subtree", &[(1000, 0.002150), (10_000, 0.015050), (100_000, 0.194736)]),
    t("MONGO DS", "remove whole subtree cached", &[(1000, 0.001359), (10_000, 0.013198), (100_000, 0.167887)]),
    t("MONGO DS", "create an item", &[(1000, 0.004550), (10_000, 0.029860), (100_000, 0.381125)]),
    t("MONGO DS", "create an item cached", &[(1000, 0.000725), (10_000, 0.007017), (100_000, 0.171303)]),
    t("MONGO DS", "create an item oper", &[(1000, 0.003609), (10_000, 0.034413), (100_000, 0.716619)]),
    t("MONGO DS", "modify an item", &[(1000, 0.004212), (10_000, 0.028166), (100_000, 0.343846)]),
    t("MONGO DS", "modify an item cached", &[(1000, 0.000737), (10_000, 0.004840), (100_000, 0.100483)]),
    t("MONGO DS", "remove an item", &[(1000, 0.003979), (10_000, 0.026894), (100_000, 0.364858)]),
    t("MONGO DS", "remove an item cached", &[(1000, 0.000465), (10_000, 0.004642), (100_000, 0.109074)]),
    t("REDIS DS", "get tree", &[(1000, 0.008860), (10_000, 0.095244), (100_000, 1.260671)]),
    t("REDIS DS", "get item", &[(1000, 0.011593), (10_000, 0.093283), (100_000, 1.354169)]),
    t("REDIS DS", "get tree hash", &[(1000, 0.000079), (10_000, 0.000123), (100_000, 0.000126)]),
    t("REDIS DS", "get tree hash cached", &[(1000, 0.000055), (10_000, 0.000153), (100_000, 0.002517)]),
    t("REDIS DS", "get user ordered tree", &[(1000, 0.010339), (10_000, 0.148259), (100_000, 1.757068)]),
    t("REDIS DS", "get oper tree", &[(1000, 0.005808), (10_000, 0.040969), (100_000, 0.448883)]),
    t("REDIS DS", "create batch", &[(1000, 0.018640), (10_000, 0.220800), (100_000, 2.471534)]),
    t("REDIS DS", "create user ordered items", &[(1000, 0.055091), (10_000, 0.627265), (100_000, 5.911053)]),
    t("REDIS DS", "create all items", &[(1000, 0.023312), (10_000, 0.264463), (100_000, 3.006915)]),
    t("REDIS DS", "create all items oper", &[(1000, 0.023822), (10_000, 0.265828), (100_000, 3.160048)]),
    t("REDIS DS", "many oper change_subs", &[(1000, 0.534279), (10_000, 5.875323), (100_000, 68.550078)]),
    t("REDIS DS", "remove all items", &[(1000, 0.001734), (10_000, 0.021471), (100_000, 0.226741)]),
    t("REDIS DS", "remove all items cached", &[(1000, 0.000676), (10_000, 0.007099), (100_000, 0.083266)]),
    t("REDIS DS", "remove whole subtree", &[(1000, 0.001838), (10_000, 0.022487), (100_000, 0.222872)]),
    t("REDIS DS", "remove whole subtree cached", &[(1000, 0.000744), (10_000, 0.008592), (100_000, 0.093635)]),
    t("REDIS DS", "create an item", &[(1000, 0.009084), (10_000, 0.112921), (100_000, 1.344594)]),
    t("REDIS DS", "create an item cached", &[(1000, 0.000773), (10_000, 0.008093), (100_000, 0.166586)]),
    t("REDIS DS", "create an item oper", &[(1000, 0.003516), (10_000, 0.041982), (100_000, 0.694264)]),
    t("REDIS DS", "modify an item", &[(1000, 0.009051), (10_000, 0.131935), (100_000, 1.245561)]),
    t("REDIS DS", "modify an item cached", &[(1000, 0.000476), (10_000, 0.006567), (100_000, 0.108219)]),
    t("REDIS DS", "remove an item", &[(1000, 0.008450), (10_000, 0.113544), (100_000, 1.291421)]),
    t("REDIS DS", "remove an item cached", &[(1000, 0.000456), (10_000, 0.006064), (100_000, 0.100165)]),
];

/// Seed 001. "write keyset" takes the first table of each hyperfine
/// comparison, which times `benchmark_plugingetset` reading the keyset and
/// then writing it, starting a process, as `docs/benchmarks.md` sets it beside
/// canopy's write (so the seed's figure is more than the write alone); "read
/// keyset" takes the second, get-only, table. quickdump v1 appears in two
/// tables with last digits apart (200 keys read 0.0013 / 0.0014 s; 200,000
/// keys 0.8515 / 0.8516 s; 2,000,000 keys 8.8808 / 8.8809 s): these are the
/// first table's. "bytes on disk" takes the file sizes. Left out: the summary
/// table in µs (no key count given), and the raw data sizes (a property of
/// the keyset, not of a system).
#[rustfmt::skip]
static KEYSET: &[Series] = &[
    t("dump", "write keyset", &[(2, 0.0016), (200, 0.0091), (2000, 0.0770), (200_000, 10.7876)]),
    t("dump", "read keyset", &[(2, 0.0014), (200, 0.0032), (2000, 0.0179), (200_000, 1.6830), (2_000_000, 17.1814)]),
    b("dump", "bytes on disk", &[(2, 430.0), (200, 41206.0), (2000, 415807.0), (200_000, 42377809.0), (2_000_000, 427777810.0)]),
    t("quickdump v1", "write keyset", &[(2, 0.0006), (200, 0.0018), (2000, 0.0127), (200_000, 1.2640)]),
    t("quickdump v1", "read keyset", &[(2, 0.0005), (200, 0.0013), (2000, 0.0086), (200_000, 0.8515), (2_000_000, 8.8808)]),
    b("quickdump v1", "bytes on disk", &[(2, 412.0), (200, 40988.0), (2000, 413788.0), (200_000, 42177788.0), (2_000_000, 425777788.0)]),
    t("quickdump v2", "write keyset", &[(2, 0.0013), (200, 0.0018), (2000, 0.0112), (200_000, 1.2602), (2_000_000, 13.2104)]),
    t("quickdump v2", "read keyset", &[(2, 0.0006), (200, 0.0010), (2000, 0.0072), (200_000, 0.6413), (2_000_000, 6.3756)]),
    b("quickdump v2", "bytes on disk", &[(2, 380.0), (200, 23788.0), (2000, 381788.0), (200_000, 38977788.0), (2_000_000, 393777788.0)]),
    t("quickdump v3", "write keyset", &[(2, 0.0012), (200, 0.0017), (2000, 0.0106), (200_000, 1.1473), (2_000_000, 11.5082)]),
    t("quickdump v3", "read keyset", &[(2, 0.0006), (200, 0.0012), (2000, 0.0070), (200_000, 0.6288), (2_000_000, 6.2309)]),
    b("quickdump v3", "bytes on disk", &[(2, 240.0), (200, 23788.0), (2000, 241788.0), (200_000, 24977788.0), (2_000_000, 253777788.0)]),
];

const CREATE: &str = "create all items (commit every 10000, sync=commit)";
const START_BEFORE: &str = "start-up to first read before compaction (open + get item, in a fresh process)";
const START_AFTER: &str = "start-up to first read after compaction (open + get item, in a fresh process)";

/// Seed 002, all at 500,000 items; reads are the best of three after pack.
/// Left out: RAM (megabytes of an unstated unit and process), disk space (an
/// approximate range), PgsqlStorage's start-up (one figure, not said to be
/// before or after pack), BerkeleyDBStorage's 59 s pack (after deleting
/// objects to give it garbage: another workload), the ClientStorage rows
/// (through a StorageServer; canopy's rows are in-process) and stress.py (no
/// canopy row). BerkeleyDBStorage's 0.49 s start-up before pack is the seed's
/// figure although its author doubts it.
static OBJECTS: &[Series] = &[
    t("FileStorage2", CREATE, &[(500_000, 341.0)]),
    t("FileStorage2", START_BEFORE, &[(500_000, 12.316)]),
    t("FileStorage2", "compact", &[(500_000, 52.0)]),
    t("FileStorage2", START_AFTER, &[(500_000, 3.923)]),
    t("FileStorage2", "read item 123", &[(500_000, 0.006)]),
    t("FileStorage2", "read 10 random items", &[(500_000, 0.054)]),
    t("FileStorage2", "read 100 random items", &[(500_000, 0.304)]),
    t("FileStorage2", "read 1000 random items", &[(500_000, 2.005)]),
    t("ShelfStorage", CREATE, &[(500_000, 535.0)]),
    t("ShelfStorage", START_BEFORE, &[(500_000, 18.696)]),
    t("ShelfStorage", "compact", &[(500_000, 248.0)]),
    t("ShelfStorage", START_AFTER, &[(500_000, 0.006)]),
    t("ShelfStorage", "read item 123", &[(500_000, 0.007)]),
    t("ShelfStorage", "read 10 random items", &[(500_000, 0.059)]),
    t("ShelfStorage", "read 100 random items", &[(500_000, 0.323)]),
    t("ShelfStorage", "read 1000 random items", &[(500_000, 2.119)]),
    t("PgsqlStorage", CREATE, &[(500_000, 807.0)]),
    t("PgsqlStorage", "compact", &[(500_000, 122.0)]),
    t("PgsqlStorage", "read item 123", &[(500_000, 0.009)]),
    t("PgsqlStorage", "read 10 random items", &[(500_000, 0.072)]),
    t("PgsqlStorage", "read 100 random items", &[(500_000, 0.414)]),
    t("PgsqlStorage", "read 1000 random items", &[(500_000, 2.690)]),
    t("SqliteStorage", CREATE, &[(500_000, 607.0)]),
    t("SqliteStorage", START_BEFORE, &[(500_000, 0.011)]),
    t("SqliteStorage", "compact", &[(500_000, 84.0)]),
    t("SqliteStorage", START_AFTER, &[(500_000, 0.011)]),
    t("SqliteStorage", "read item 123", &[(500_000, 0.021)]),
    t("SqliteStorage", "read 10 random items", &[(500_000, 0.060)]),
    t("SqliteStorage", "read 100 random items", &[(500_000, 0.398)]),
    t("SqliteStorage", "read 1000 random items", &[(500_000, 2.491)]),
    t("BerkeleyDBStorage", CREATE, &[(500_000, 951.0)]),
    t("BerkeleyDBStorage", START_BEFORE, &[(500_000, 0.49)]),
    t("BerkeleyDBStorage", "compact", &[(500_000, 0.014)]),
    t("BerkeleyDBStorage", START_AFTER, &[(500_000, 0.081)]),
    t("BerkeleyDBStorage", "read item 123", &[(500_000, 0.008)]),
    t("BerkeleyDBStorage", "read 10 random items", &[(500_000, 0.042)]),
    t("BerkeleyDBStorage", "read 100 random items", &[(500_000, 0.343)]),
    t("BerkeleyDBStorage", "read 1000 random items", &[(500_000, 2.229)]),
];

const ONE_DEVICE: &str = "get one device with all descendants (JSON)";
const WHOLE_TREE: &str = "get the whole tree (JSON)";

/// Seed 003: the E2E durations (the REST request, as a client sees it; the
/// table's unrounded figures) of the three code versions it measured.
/// Left out: the fragment-query and service parts of those durations (parts,
/// not systems), the parallel gets (mean response time against canopy's
/// latency percentiles and throughput), the 1,000 parallel requests (no canopy
/// row), and the object sizes (rounded, unit unclear).
#[rustfmt::skip]
static CPS: &[Series] = &[
    t("CPS baseline", ONE_DEVICE, &[(1000, 0.045614959), (2000, 0.054310303), (5000, 0.144935681), (10_000, 0.290671549)]),
    t("CPS baseline", WHOLE_TREE, &[(1000, 11.77267071), (2000, 28.45149836), (5000, 86.97307551), (10_000, 201.453437)]),
    t("CPS patch 133511/2", ONE_DEVICE, &[(1000, 0.054642542), (2000, 0.100691847), (5000, 0.22977974), (10_000, 0.213588816)]),
    t("CPS patch 133511/2", WHOLE_TREE, &[(1000, 0.545405404), (2000, 0.976134445), (5000, 2.52749303), (10_000, 6.97774575)]),
    t("CPS merged", ONE_DEVICE, &[(1000, 0.020945751), (2000, 0.030075068), (5000, 0.113882515), (10_000, 0.100853571)]),
    t("CPS merged", WHOLE_TREE, &[(1000, 2.954251872), (2000, 5.491693817), (5000, 11.02445057), (10_000, 25.35983212)]),
];

/// Seed 004: 2,506 packages; LMDB has no fsync-enabled rows (rpm's LMDB code
/// did not implement fsync). Left out: disk space after each operation (one
/// line per operation and order, not said to be after the fsync-disabled or
/// the fsync-enabled run).
static RPM: &[Series] = &[
    t("BDB", "add all (forward, sync=off)", &[(2506, 3.19)]),
    t("BDB", "add all (reverse, sync=off)", &[(2506, 3.21)]),
    t("BDB", "add all (random, sync=off)", &[(2506, 3.17)]),
    t("BDB", "add all (forward, sync=on)", &[(2506, 85.69)]),
    t("BDB", "add all (reverse, sync=on)", &[(2506, 88.58)]),
    t("BDB", "add all (random, sync=on)", &[(2506, 84.99)]),
    t("BDB", "erase all (forward, sync=off)", &[(2506, 3.74)]),
    t("BDB", "erase all (reverse, sync=off)", &[(2506, 3.70)]),
    t("BDB", "erase all (random, sync=off)", &[(2506, 3.70)]),
    t("BDB", "erase all (forward, sync=on)", &[(2506, 70.00)]),
    t("BDB", "erase all (reverse, sync=on)", &[(2506, 70.06)]),
    t("BDB", "erase all (random, sync=on)", &[(2506, 74.60)]),
    t("BDB", "update all (forward, sync=off)", &[(2506, 7.23)]),
    t("BDB", "update all (reverse, sync=off)", &[(2506, 7.31)]),
    t("BDB", "update all (random, sync=off)", &[(2506, 7.26)]),
    t("BDB", "update all (forward, sync=on)", &[(2506, 147.16)]),
    t("BDB", "update all (reverse, sync=on)", &[(2506, 150.98)]),
    t("BDB", "update all (random, sync=on)", &[(2506, 147.26)]),
    t("BDB", "dependency check", &[(2506, 4.82)]),
    t("NDB", "add all (forward, sync=off)", &[(2506, 1.05)]),
    t("NDB", "add all (reverse, sync=off)", &[(2506, 0.99)]),
    t("NDB", "add all (random, sync=off)", &[(2506, 1.04)]),
    t("NDB", "add all (forward, sync=on)", &[(2506, 46.91)]),
    t("NDB", "add all (reverse, sync=on)", &[(2506, 41.94)]),
    t("NDB", "add all (random, sync=on)", &[(2506, 42.09)]),
    t("NDB", "erase all (forward, sync=off)", &[(2506, 1.10)]),
    t("NDB", "erase all (reverse, sync=off)", &[(2506, 0.95)]),
    t("NDB", "erase all (random, sync=off)", &[(2506, 1.09)]),
    t("NDB", "erase all (forward, sync=on)", &[(2506, 42.47)]),
    t("NDB", "erase all (reverse, sync=on)", &[(2506, 30.93)]),
    t("NDB", "erase all (random, sync=on)", &[(2506, 36.13)]),
    t("NDB", "update all (forward, sync=off)", &[(2506, 2.34)]),
    t("NDB", "update all (reverse, sync=off)", &[(2506, 2.42)]),
    t("NDB", "update all (random, sync=off)", &[(2506, 2.61)]),
    t("NDB", "update all (forward, sync=on)", &[(2506, 78.17)]),
    t("NDB", "update all (reverse, sync=on)", &[(2506, 70.24)]),
    t("NDB", "update all (random, sync=on)", &[(2506, 72.18)]),
    t("NDB", "dependency check", &[(2506, 2.81)]),
    t("LMDB", "add all (forward, sync=off)", &[(2506, 1.06)]),
    t("LMDB", "add all (reverse, sync=off)", &[(2506, 1.03)]),
    t("LMDB", "add all (random, sync=off)", &[(2506, 1.03)]),
    t("LMDB", "erase all (forward, sync=off)", &[(2506, 1.13)]),
    t("LMDB", "erase all (reverse, sync=off)", &[(2506, 1.14)]),
    t("LMDB", "erase all (random, sync=off)", &[(2506, 1.13)]),
    t("LMDB", "update all (forward, sync=off)", &[(2506, 3.33)]),
    t("LMDB", "update all (reverse, sync=off)", &[(2506, 3.37)]),
    t("LMDB", "update all (random, sync=off)", &[(2506, 3.42)]),
    t("LMDB", "dependency check", &[(2506, 2.36)]),
    t("SQLITE", "add all (forward, sync=off)", &[(2506, 4.24)]),
    t("SQLITE", "add all (reverse, sync=off)", &[(2506, 4.28)]),
    t("SQLITE", "add all (random, sync=off)", &[(2506, 4.24)]),
    t("SQLITE", "add all (forward, sync=on)", &[(2506, 34.50)]),
    t("SQLITE", "add all (reverse, sync=on)", &[(2506, 38.03)]),
    t("SQLITE", "add all (random, sync=on)", &[(2506, 34.48)]),
    t("SQLITE", "erase all (forward, sync=off)", &[(2506, 19.58)]),
    t("SQLITE", "erase all (reverse, sync=off)", &[(2506, 19.59)]),
    t("SQLITE", "erase all (random, sync=off)", &[(2506, 20.52)]),
    t("SQLITE", "erase all (forward, sync=on)", &[(2506, 51.12)]),
    t("SQLITE", "erase all (reverse, sync=on)", &[(2506, 55.65)]),
    t("SQLITE", "erase all (random, sync=on)", &[(2506, 51.83)]),
    t("SQLITE", "update all (forward, sync=off)", &[(2506, 45.52)]),
    t("SQLITE", "update all (reverse, sync=off)", &[(2506, 45.84)]),
    t("SQLITE", "update all (random, sync=off)", &[(2506, 46.39)]),
    t("SQLITE", "update all (forward, sync=on)", &[(2506, 108.55)]),
    t("SQLITE", "update all (reverse, sync=on)", &[(2506, 114.18)]),
    t("SQLITE", "update all (random, sync=on)", &[(2506, 113.97)]),
    t("SQLITE", "dependency check", &[(2506, 12.50)]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ALL;

    #[test]
    fn every_suite_has_its_seed_in_order() {
        // The server suite has no seed document of its own (it stands beside seed 003's clients).
        let suites: Vec<&str> = ALL.iter().map(|s| s.name).filter(|n| *n != "server").collect();
        let seeds: Vec<&str> = SEEDS.iter().map(|s| s.suite).collect();
        assert_eq!(seeds, suites);
        assert!(for_suite("nosuch").is_none());
    }

    /// Sizes are the seed's own (the suite's seed sizes), increasing; figures
    /// positive; one series per system and row.
    #[test]
    fn figures_are_at_the_seed_sizes() {
        for (seed, suite) in SEEDS.iter().zip(ALL.iter()) {
            let mut seen = Vec::new();
            for s in seed.series {
                assert!(!s.points.is_empty(), "{} {}: no figures", s.system, s.row);
                assert!(s.points.windows(2).all(|w| w[0].0 < w[1].0), "{} {}: sizes not increasing", s.system, s.row);
                for &(size, v) in s.points {
                    assert!(suite.seed_sizes.contains(&size), "{} {} at {size}: not a seed size", s.system, s.row);
                    assert!(v > 0.0 && v.is_finite(), "{} {} at {size}: {v}", s.system, s.row);
                }
                assert!(!seen.contains(&(s.system, s.row)), "{} {} twice", s.system, s.row);
                seen.push((s.system, s.row));
            }
        }
    }

    #[test]
    fn sysrepo_has_every_row_of_every_plugin_at_three_sizes() {
        let seed = for_suite("sysrepo").unwrap();
        assert_eq!(seed.systems(), ["JSON DS file", "MONGO DS", "REDIS DS"]);
        for (row, _) in crate::suites::sysrepo::ROWS {
            let systems: Vec<&str> = seed.row(row).map(|s| s.system).collect();
            assert_eq!(systems, seed.systems(), "{row}");
            assert!(seed.row(row).all(|s| s.points.len() == 3), "{row}");
        }
        assert_eq!(seed.series.len(), 66);
    }
}
