//! Uploads: `multipart/form-data` bodies and `.zip` archives of YANG files.

/// One part of a multipart body.
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub data: Vec<u8>,
}

/// The most a zip may hold, uncompressed.
const MAX_UNZIPPED: usize = 100 << 20;

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    (from..=hay.len() - needle.len()).find(|&i| &hay[i..i + needle.len()] == needle)
}

fn param(header: &str, name: &str) -> Option<String> {
    for piece in header.split(';').skip(1) {
        let (k, v) = piece.trim().split_once('=')?;
        if k.trim().eq_ignore_ascii_case(name) {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// The parts of a `multipart/form-data` body with the given Content-Type.
///
/// # Errors
/// A Content-Type without a boundary, or a body that is not multipart.
pub fn multipart(content_type: &str, body: &[u8]) -> Result<Vec<Part>, String> {
    if !content_type.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err(format!("expected a multipart/form-data body, got `{content_type}`"));
    }
    let boundary = param(content_type, "boundary").ok_or("multipart/form-data without a boundary")?;
    let delim = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut at = find(body, &delim, 0).ok_or("multipart body without its boundary")? + delim.len();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        if body[at..].starts_with(b"\r\n") {
            at += 2;
        }
        let head_end = find(body, b"\r\n\r\n", at).ok_or("multipart part without headers")?;
        let head = String::from_utf8_lossy(&body[at..head_end]).into_owned();
        let data_start = head_end + 4;
        let mut end_delim = b"\r\n".to_vec();
        end_delim.extend_from_slice(&delim);
        let data_end = find(body, &end_delim, data_start).ok_or("multipart part without an end")?;
        let mut name = String::new();
        let mut filename = None;
        for line in head.split("\r\n") {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().eq_ignore_ascii_case("content-disposition") {
                    name = param(v, "name").unwrap_or_default();
                    filename = param(v, "filename");
                }
            }
        }
        parts.push(Part { name, filename, data: body[data_start..data_end].to_vec() });
        at = data_end + end_delim.len();
    }
}

fn u16_at(b: &[u8], i: usize) -> Result<usize, String> {
    b.get(i..i + 2).map(|s| usize::from(u16::from_le_bytes([s[0], s[1]]))).ok_or_else(|| "truncated zip".into())
}

fn u32_at(b: &[u8], i: usize) -> Result<usize, String> {
    b.get(i..i + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize).ok_or_else(|| "truncated zip".into())
}

/// The files of a zip archive whose names end in `suffix`: (name, content).
/// Stored and deflated entries are read; anything else is an error.
///
/// # Errors
/// A damaged archive, an entry of another compression, or more than 100 MiB unpacked.
pub fn unzip(b: &[u8], suffix: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let eocd = (0..b.len().saturating_sub(21))
        .rev()
        .find(|&i| b[i..].starts_with(&[0x50, 0x4b, 0x05, 0x06]))
        .ok_or("not a zip archive (no end of central directory)")?;
    let count = u16_at(b, eocd + 10)?;
    let mut at = u32_at(b, eocd + 16)?;
    let mut out = Vec::new();
    let mut total = 0usize;
    for _ in 0..count {
        if !b.get(at..).is_some_and(|s| s.starts_with(&[0x50, 0x4b, 0x01, 0x02])) {
            return Err("damaged zip central directory".into());
        }
        let method = u16_at(b, at + 10)?;
        let csize = u32_at(b, at + 20)?;
        let usize_ = u32_at(b, at + 24)?;
        let (nlen, elen, clen) = (u16_at(b, at + 28)?, u16_at(b, at + 30)?, u16_at(b, at + 32)?);
        let local = u32_at(b, at + 42)?;
        let name = String::from_utf8_lossy(b.get(at + 46..at + 46 + nlen).ok_or("truncated zip")?).into_owned();
        at += 46 + nlen + elen + clen;
        let base = name.rsplit('/').next().unwrap_or(&name);
        if name.ends_with('/') || !name.ends_with(suffix) || base.starts_with("._") {
            continue;
        }
        if !b.get(local..).is_some_and(|s| s.starts_with(&[0x50, 0x4b, 0x03, 0x04])) {
            return Err(format!("damaged zip entry {name}"));
        }
        let start = local + 30 + u16_at(b, local + 26)? + u16_at(b, local + 28)?;
        let data = b.get(start..start + csize).ok_or("truncated zip entry")?;
        total = total.saturating_add(usize_);
        if total > MAX_UNZIPPED {
            return Err(format!("the zip unpacks to more than {MAX_UNZIPPED} bytes"));
        }
        let content = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, usize_.max(1))
                .map_err(|e| format!("zip entry {name}: {e:?}"))?,
            m => return Err(format!("zip entry {name}: compression method {m} is not supported")),
        };
        out.push((base.to_string(), content));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_parts() {
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.yang\"\r\n\r\nmodule a {}\r\n--XX--\r\n";
        let parts = multipart("multipart/form-data; boundary=XX", body).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].filename.as_deref(), Some("a.yang"));
        assert_eq!(parts[0].data, b"module a {}");
        assert!(multipart("multipart/form-data; boundary=XX", b"garbage").is_err());
        assert!(unzip(b"PK", ".yang").is_err());
        assert!(unzip(&[0u8; 64], ".yang").is_err());
    }
}
