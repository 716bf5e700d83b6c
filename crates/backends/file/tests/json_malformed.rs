//! Files the json backend refuses, with a clear error, never a panic and never
//! half loaded.

use std::fs;

use canopy_file::json::JsonFormat;
use canopy_file::FileBackend;
use canopy_store::{Backend, Batch, ErrorKind, SyncMode};

const STORE: &str =
    r#"{"canopy:store":{"format":1,"revision":3,"lists":{"/m:c/lst":{"keys":["k"],"user-ordered":false}}}"#;

#[test]
fn malformed_files_are_refused_with_what_and_where() {
    let cases: &[(&str, ErrorKind, &str)] = &[
        ("", ErrorKind::Corrupted, "line 1, column 1"),
        ("hello", ErrorKind::Corrupted, "an RFC 7951 document is a JSON object"),
        ("[]", ErrorKind::Corrupted, "line 1, column 1"),
        ("{}", ErrorKind::Corrupted, "must be `canopy:store`"),
        (r#"{"canopy:running":{}}"#, ErrorKind::Corrupted, "must be `canopy:store`"),
        (r#"{"canopy:store":{"revision":1,"lists":{}}}"#, ErrorKind::Corrupted, "`format` is missing"),
        (r#"{"canopy:store":{"format":2,"revision":1,"lists":{}}}"#, ErrorKind::Unsupported, "newer"),
        (r#"{"canopy:store":{"format":0,"revision":1,"lists":{}}}"#, ErrorKind::Corrupted, "does not exist"),
        (r#"{"canopy:store":{"format":1,"lists":{}}}"#, ErrorKind::Corrupted, "`revision`"),
        (r#"{"canopy:store":{"format":1,"revision":1}}"#, ErrorKind::Corrupted, "`lists` is missing"),
        (r#"{"canopy:store":{"format":1,"revision":1,"lists":{"/a":{"keys":1}}}}"#, ErrorKind::Corrupted, "list /a"),
        (
            &format!("{STORE},\n\"canopy:other\":{{}}}}"),
            ErrorKind::Corrupted,
            "unknown member `canopy:other` at line 2",
        ),
        (
            &format!("{STORE},\n\"canopy:running\":{{\"m:c\":{{\n  \"x\": nul}}}}}}"),
            ErrorKind::Corrupted,
            "canopy:running: invalid JSON at line 3, column 8",
        ),
        (
            &format!("{STORE},\n\"canopy:running\":{{\"m:c\":{{\"lst\":[{{\"v\":1}}]}}}}}}"),
            ErrorKind::Corrupted,
            "line 2, column 33: list entry is missing key leaf `k`",
        ),
        (&format!("{STORE},\"canopy:running\":[1]}}"), ErrorKind::Corrupted, "expected `{`"),
        (&format!("{STORE},\"canopy:raw\":{{\"1\":\"00\"}}}}"), ErrorKind::Corrupted, "not a hex key"),
        (&format!("{STORE},\"canopy:running\":{{}}}} x"), ErrorKind::Corrupted, "trailing data"),
        // Raw records may not stand in for what the rest of the file holds.
        (
            &format!("{STORE},\n\"canopy:raw\":{{\"1001\":\"0100000000\"}}}}"),
            ErrorKind::Corrupted,
            "line 2, column 14: key `1001` is a fragment of datastore running",
        ),
        (
            &format!("{STORE},\"canopy:raw\":{{\"1003\":\"0100000000\"}}}}"),
            ErrorKind::Corrupted,
            "key `1003` is a fragment of datastore candidate",
        ),
        (
            &format!("{STORE},\"canopy:raw\":{{\"2002610001800100\":\"\"}}}}"),
            ErrorKind::Corrupted,
            "key `2002610001800100` is an order-index record of datastore startup",
        ),
        (
            &format!("{STORE},\"canopy:raw\":{{\"00666f726d6174\":\"00000002\"}}}}"),
            ErrorKind::Corrupted,
            "key `00666f726d6174` is the layout record",
        ),
        (
            &format!("{STORE},\"canopy:raw\":{{\"007265766973696f6e\":\"0000000000000009\"}}}}"),
            ErrorKind::Corrupted,
            "key `007265766973696f6e` is the revision record",
        ),
        (
            &format!("{STORE},\"canopy:raw\":{{\"006c6973742f6d3a632f6c7374\":\"7b7d\"}}}}"),
            ErrorKind::Corrupted,
            "is the list record of /m:c/lst",
        ),
        ("{\"canopy:store\":\u{0}", ErrorKind::Corrupted, "line 1"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    for (text, kind, says) in cases {
        fs::write(&file, text).unwrap();
        let e = match FileBackend::open(&file, &JsonFormat, SyncMode::Off) {
            Ok(_) => panic!("opened {text:?}"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), *kind, "{text}: {e}");
        assert!(e.to_string().contains(says), "{text}: `{e}` does not say `{says}`");
        assert!(e.to_string().contains("store.json"), "{e}");
    }
    fs::write(&file, b"{\"canopy:store\":\xff}").unwrap();
    let e = FileBackend::open(&file, &JsonFormat, SyncMode::Off).err().expect("not UTF-8");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
}

#[test]
fn every_truncation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    {
        let b = FileBackend::open(&file, &JsonFormat, SyncMode::Off).unwrap();
        let mut batch = Batch::default();
        batch.put(b"\x00other".to_vec(), b"x".to_vec());
        b.apply(&batch).unwrap();
    }
    let whole = fs::read_to_string(&file).unwrap();
    // Trailing whitespace may go; anything more is refused.
    for len in 0..whole.trim_end().len() {
        fs::write(&file, &whole[..len]).unwrap();
        let e = FileBackend::open(&file, &JsonFormat, SyncMode::Off).err().unwrap_or_else(|| panic!("length {len}"));
        assert_eq!(e.kind(), ErrorKind::Corrupted, "length {len}: {e}");
    }
    fs::write(&file, &whole).unwrap();
    let b = FileBackend::open(&file, &JsonFormat, SyncMode::Off).unwrap();
    assert_eq!(b.snapshot().unwrap().get(b"\x00other").unwrap().as_deref(), Some(&b"x"[..]));
    assert!(b.check().unwrap().is_empty());
}

/// Records the file could not give back as they are (the layout record with
/// another version, a revision record) are refused when written, so the store
/// never writes a file it would refuse to open.
#[test]
fn records_the_file_implies_are_refused_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    let b = FileBackend::open(&file, &JsonFormat, SyncMode::Off).unwrap();
    let before = fs::read(&file).unwrap();
    for (k, v, says) in
        [(&b"\x00format"[..], &[0, 0, 0, 2][..], "layout"), (b"\x00revision", &[0, 0, 0, 0, 0, 0, 0, 9], "revision")]
    {
        let held = b.snapshot().unwrap().get(k).unwrap();
        let mut batch = Batch::default();
        batch.put(k.to_vec(), v.to_vec());
        let e = b.apply(&batch).expect_err(says);
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(fs::read(&file).unwrap(), before);
        assert_eq!(b.snapshot().unwrap().get(k).unwrap(), held);
    }
    // The file implies layout 1 and keeps no revision record.
    assert_eq!(b.snapshot().unwrap().get(b"\x00format").unwrap().as_deref(), Some(&[0, 0, 0, 1][..]));
    assert_eq!(b.snapshot().unwrap().get(b"\x00revision").unwrap(), None);
    assert!(b.check().unwrap().is_empty());
}

/// `check` on a file laid out by hand but holding the same data finds
/// nothing; a file replaced since (by another process or a person) is taken
/// up, by `check` as by a snapshot, and what it holds is what is read.
#[test]
fn check_compares_what_the_file_holds_not_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    let b = FileBackend::open(&file, &JsonFormat, SyncMode::Off).unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x00other".to_vec(), b"x".to_vec());
    batch.put(vec![0x10, 0x01], vec![1, 0, 0, 0]); // the root fragment of running: no data
    let mut data = vec![0x10, 0x01];
    data.extend_from_slice(b"m:c\x00\x01");
    batch.put(data.clone(), vec![1, 0, 0, 1, 1, b'l', 1, b's', 1, b'v', 0]);
    b.apply(&batch).unwrap();
    assert!(b.check().unwrap().is_empty());
    let text = fs::read_to_string(&file).unwrap();
    // Laid out by hand: other whitespace, the same records.
    replace(&file, &text.replace(":{", ": {").replace(',', ",\n  "));
    assert!(b.check().unwrap().is_empty(), "{:?}", b.check());
    // Other data, written by hand: taken up.
    replace(&file, &text.replace("\"l\":\"v\"", "\"l\":\"w\""));
    assert!(b.check().unwrap().is_empty(), "{:?}", b.check());
    assert_eq!(b.snapshot().unwrap().get(&data).unwrap(), Some(vec![1, 0, 0, 1, 1, b'l', 1, b's', 1, b'w', 0]));
    // Another revision: taken up, and the next commit follows it.
    replace(&file, &text.replace("\"revision\":1", "\"revision\":7"));
    assert_eq!(b.snapshot().unwrap().revision(), 7);
    assert_eq!(b.apply(&Batch::default()).unwrap(), 8);
    // A file that no longer decodes is reported, and the state kept.
    fs::write(&file, "{\"canopy:store\": ").unwrap();
    let problems = b.check().unwrap();
    assert!(problems.len() == 1 && problems[0].contains("store.json"), "{problems:?}");
}

/// Replaces `file` as a writer would: a new file renamed over it.
fn replace(file: &std::path::Path, text: &str) {
    let tmp = file.with_extension("hand");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, file).unwrap();
}
