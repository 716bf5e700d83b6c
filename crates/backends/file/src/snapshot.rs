//! canopy's binary snapshot format, version 1 (`docs/formats/snapshot.md`).
//!
//! ```text
//! header (44 bytes, little-endian):
//!   0  magic       89 43 4E 50 59 0D 0A 1A   ("\x89CNPY\r\n\x1a")
//!   8  version     u32 = 1
//!  12  flags       u32 = 0 (a reader refuses any flag it does not know)
//!  16  revision    u64
//!  24  entries     u64, in the whole file
//!  32  body length u64, bytes after the header
//!  40  CRC-32 of bytes 0..40
//! body: blocks, each
//!   payload length u32, entries u32, payload, CRC-32 of the 8 bytes before and the payload
//! payload: entries in strictly ascending key order, each
//!   varint shared, varint suffix length, suffix, varint value length, value
//! ```
//! A key is the first `shared` bytes of the previous key in the block, then the
//! suffix; the first entry of a block shares nothing, so blocks decode alone.

use crate::{Format, Map};
use canopy_store::error::{ErrorKind, Result, StoreError};

pub const MAGIC: [u8; 8] = *b"\x89CNPY\r\n\x1a";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 44;
/// Blocks are cut after the entry that makes their payload reach this size.
const BLOCK_TARGET: usize = 64 * 1024;

/// The `snapshot:` format.
pub struct SnapshotFormat;

impl Format for SnapshotFormat {
    fn name(&self) -> &'static str {
        "snapshot"
    }

    fn encode(&self, map: &Map, revision: u64) -> Result<Vec<u8>> {
        encode(map, revision)
    }

    fn decode(&self, bytes: &[u8]) -> Result<(Map, u64)> {
        decode(bytes)
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn shared_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The snapshot file holding `map` at `revision`.
///
/// # Errors
/// `Unsupported` for one entry larger than a block can hold (4 GiB).
pub fn encode(map: &Map, revision: u64) -> Result<Vec<u8>> {
    let raw: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
    let mut out = Vec::with_capacity(HEADER_LEN + raw + raw / 8 + 64);
    out.resize(HEADER_LEN, 0);
    let mut block_start = out.len();
    let mut block_entries = 0u32;
    out.extend_from_slice(&[0; 8]);
    let mut prev: &[u8] = &[];
    for (k, v) in map {
        let shared = if block_entries == 0 { 0 } else { shared_len(prev, k) };
        put_varint(&mut out, shared as u64);
        put_varint(&mut out, (k.len() - shared) as u64);
        out.extend_from_slice(&k[shared..]);
        put_varint(&mut out, v.len() as u64);
        out.extend_from_slice(v);
        block_entries += 1;
        prev = k;
        if out.len() - block_start - 8 >= BLOCK_TARGET {
            finish_block(&mut out, block_start, block_entries)?;
            block_start = out.len();
            block_entries = 0;
            out.extend_from_slice(&[0; 8]);
        }
    }
    if block_entries > 0 {
        finish_block(&mut out, block_start, block_entries)?;
    } else {
        out.truncate(block_start);
    }
    let body = (out.len() - HEADER_LEN) as u64;
    let header = &mut out[..HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&0u32.to_le_bytes());
    header[16..24].copy_from_slice(&revision.to_le_bytes());
    header[24..32].copy_from_slice(&(map.len() as u64).to_le_bytes());
    header[32..40].copy_from_slice(&body.to_le_bytes());
    let crc = crc32fast::hash(&header[..40]);
    header[40..44].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

fn finish_block(out: &mut Vec<u8>, start: usize, entries: u32) -> Result<()> {
    let payload = u32::try_from(out.len() - start - 8).map_err(|_| {
        StoreError::new(ErrorKind::Unsupported, "an entry of 4 GiB or more does not fit in a snapshot block")
    })?;
    out[start..start + 4].copy_from_slice(&payload.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&entries.to_le_bytes());
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(())
}

fn corrupted(at: usize, why: impl std::fmt::Display) -> StoreError {
    StoreError::corrupted(format!("damaged snapshot file: {why} (at byte {at})"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The map and revision a snapshot file holds. Nothing is returned unless the
/// whole file checks out.
///
/// # Errors
/// `Corrupted` for a file that is not a snapshot or is damaged (truncated, a
/// checksum that does not match, entries out of order), `Unsupported` for a
/// newer format version or unknown flags.
pub fn decode(bytes: &[u8]) -> Result<(Map, u64)> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        let what =
            if bytes.is_empty() { "the file is empty" } else { "the file does not start with the snapshot magic" };
        return Err(StoreError::corrupted(format!("not a canopy snapshot file: {what}")));
    }
    if bytes.len() < HEADER_LEN {
        return Err(corrupted(bytes.len(), format!("truncated header ({} of {HEADER_LEN} bytes)", bytes.len())));
    }
    let version = u32_at(bytes, 8);
    if version > VERSION {
        return Err(StoreError::new(
            ErrorKind::Unsupported,
            format!("snapshot format version {version} is newer than this canopy reads ({VERSION})"),
        ));
    }
    if crc32fast::hash(&bytes[..40]) != u32_at(bytes, 40) {
        return Err(corrupted(40, "header checksum does not match"));
    }
    if version != VERSION {
        return Err(corrupted(8, format!("format version {version} does not exist")));
    }
    let flags = u32_at(bytes, 12);
    if flags != 0 {
        return Err(StoreError::new(
            ErrorKind::Unsupported,
            format!("snapshot flags {flags:#x} are unknown to this canopy"),
        ));
    }
    let revision = u64_at(bytes, 16);
    let entries = u64_at(bytes, 24);
    let body = u64_at(bytes, 32);
    let actual = (bytes.len() - HEADER_LEN) as u64;
    if actual != body {
        let why = if actual < body { "truncated" } else { "trailing bytes" };
        return Err(corrupted(bytes.len(), format!("{why}: the header says {body} bytes follow it, {actual} do")));
    }
    let mut pairs = Vec::with_capacity(entries.min(bytes.len() as u64 / 3) as usize);
    let mut at = HEADER_LEN;
    while at < bytes.len() {
        at = decode_block(bytes, at, &mut pairs)?;
    }
    if pairs.len() as u64 != entries {
        return Err(corrupted(at, format!("the header counts {entries} entries, the blocks hold {}", pairs.len())));
    }
    // Keys were checked to ascend, so this builds the tree without sorting.
    Ok((pairs.into_iter().collect(), revision))
}

/// Decodes the block at `start` into `pairs`; returns where the next begins.
fn decode_block(bytes: &[u8], start: usize, pairs: &mut Vec<(Vec<u8>, Vec<u8>)>) -> Result<usize> {
    if bytes.len() - start < 12 {
        return Err(corrupted(start, "truncated block"));
    }
    let len = u32_at(bytes, start) as usize;
    let count = u32_at(bytes, start + 4);
    let end = start + 8 + len;
    if bytes.len() < end + 4 {
        return Err(corrupted(start, format!("block of {len} bytes runs past the end of the file")));
    }
    if crc32fast::hash(&bytes[start..end]) != u32_at(bytes, end) {
        return Err(corrupted(start, "block checksum does not match"));
    }
    let mut r = Reader { bytes: &bytes[..end], at: start + 8 };
    let first = pairs.len();
    for i in 0..count {
        let shared = r.varint()?;
        let suffix = r.varint()?;
        let suffix = r.take(suffix)?;
        let key = match pairs.last() {
            Some((prev, _)) if i > 0 => {
                let shared = usize::try_from(shared).unwrap_or(usize::MAX);
                if shared > prev.len() {
                    return Err(corrupted(r.at, "a key shares more bytes than the previous key has"));
                }
                // Both keys start with the shared bytes: the suffixes decide the order.
                if suffix <= &prev[shared..] {
                    return Err(corrupted(r.at, "keys are not in ascending order"));
                }
                let mut key = Vec::with_capacity(shared + suffix.len());
                key.extend_from_slice(&prev[..shared]);
                key.extend_from_slice(suffix);
                key
            }
            _ if shared != 0 => return Err(corrupted(r.at, "the first key of a block shares a prefix")),
            Some((prev, _)) if suffix <= prev.as_slice() => {
                return Err(corrupted(r.at, "keys are not in ascending order"));
            }
            _ => suffix.to_vec(),
        };
        let value = r.varint()?;
        let value = r.take(value)?.to_vec();
        pairs.push((key, value));
    }
    if r.at != end {
        return Err(corrupted(r.at, format!("block holds bytes after its {count} entries")));
    }
    debug_assert_eq!(pairs.len() - first, count as usize);
    Ok(end + 4)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self.bytes.get(self.at).ok_or_else(|| corrupted(self.at, "entry runs past its block"))?;
            self.at += 1;
            if shift == 63 && b > 1 {
                break;
            }
            n |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(n);
            }
        }
        Err(corrupted(self.at, "length does not fit in 64 bits"))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(corrupted(self.at, "entry runs past its block"));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn encode_then_decode_round_trips(
            map in prop::collection::btree_map(
                prop::collection::vec(any::<u8>(), 0..40),
                prop::collection::vec(any::<u8>(), 0..300),
                0..600,
            ),
            revision in any::<u64>(),
        ) {
            let bytes = encode(&map, revision).unwrap();
            let (back, rev) = decode(&bytes).unwrap();
            prop_assert_eq!(rev, revision);
            prop_assert_eq!(back, map);
        }
    }

    #[test]
    fn shared_prefixes_keep_the_file_smaller_than_its_keys_and_values() {
        let map: Map = (0..10_000u32)
            .map(|i| (format!("\x10/perf:cont\x00\x01lst\x00\x01\x10{i:08}").into_bytes(), vec![b'v'; 20]))
            .collect();
        let raw: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
        let bytes = encode(&map, 7).unwrap();
        assert!(bytes.len() < raw * 2 / 3, "{} bytes for {raw} raw", bytes.len());
        assert!(encode(&Map::new(), 0).unwrap().len() == HEADER_LEN);
    }

    #[test]
    fn many_blocks_decode_alone() {
        let map: Map = (0..5000u32).map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 100])).collect();
        let bytes = encode(&map, 1).unwrap();
        let blocks = {
            let mut n = 0;
            let mut at = HEADER_LEN;
            while at < bytes.len() {
                at += 8 + u32_at(&bytes, at) as usize + 4;
                n += 1;
            }
            n
        };
        assert!(blocks > 5, "{blocks} blocks");
        assert_eq!(decode(&bytes).unwrap().0, map);
    }

    #[test]
    fn oversized_lengths_are_refused() {
        let mut r = Reader { bytes: &[0xFF; 11], at: 0 };
        assert_eq!(r.varint().unwrap_err().kind(), ErrorKind::Corrupted);
        let mut r = Reader { bytes: &[0x05, 1, 2], at: 0 };
        let n = r.varint().unwrap();
        assert_eq!(r.take(n).unwrap_err().kind(), ErrorKind::Corrupted);
    }
}
