//! The users file of `canopy serve --users FILE`: who may read or write which
//! datastore. The format is described in `docs/server.md`:
//!
//! ```text
//! # comment
//! user  alice  $argon2id$v=19$m=19456,t=2,p=1$…$…  running=rw,candidate=rw,startup=ro,operational=ro
//! token ci-bot sha256:<64 hex digits>              *=ro
//! ```
//!
//! Passwords are kept as argon2id PHC strings (salted, slow). Tokens are
//! random 256-bit strings made by [`new_token`]; they are kept as their
//! SHA-256: a slow hash protects guessable secrets from a stolen file, and a
//! token has 2^256 possibilities, so a fast hash loses nothing and costs
//! nothing per request.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::Argon2;
use canopy::Datastore;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// What a user may do with one datastore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    #[default]
    None,
    /// `ro`: read.
    Read,
    /// `rw`: read and write.
    Write,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Read => "ro",
            Mode::Write => "rw",
        }
    }
}

/// What a user may do with each datastore. Text form: `DS=MODE` items
/// separated by commas, DS one of `running`, `candidate`, `startup`,
/// `operational` or `*` (all), MODE `rw`, `ro` or `none`; later items
/// override earlier ones (`*=ro,running=rw`); a datastore not named is
/// `none`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    modes: [Mode; 4],
}

fn slot(ds: Datastore) -> usize {
    usize::from(ds.code() - 1)
}

impl Access {
    /// The same mode on every datastore.
    pub fn all(mode: Mode) -> Access {
        Access { modes: [mode; 4] }
    }

    pub fn mode(&self, ds: Datastore) -> Mode {
        self.modes[slot(ds)]
    }

    /// Whether this access allows `need` on `ds`.
    pub fn allows(&self, ds: Datastore, need: Mode) -> bool {
        self.mode(ds) >= need
    }
}

impl FromStr for Access {
    type Err = String;

    fn from_str(text: &str) -> Result<Access, String> {
        let mut access = Access::default();
        if text.is_empty() {
            return Err("the access is empty (e.g. `*=ro` or `running=rw,operational=ro`)".into());
        }
        for item in text.split(',') {
            let (ds, mode) = item
                .split_once('=')
                .ok_or_else(|| format!("access item `{item}` is not DATASTORE=MODE (e.g. `running=rw`)"))?;
            let mode = match mode {
                "rw" => Mode::Write,
                "ro" => Mode::Read,
                "none" => Mode::None,
                other => return Err(format!("access item `{item}`: mode `{other}` is not rw, ro or none")),
            };
            if ds == "*" {
                access.modes = [mode; 4];
                continue;
            }
            let ds = Datastore::ALL.into_iter().find(|d| d.name() == ds).ok_or_else(|| {
                format!(
                    "access item `{item}`: no datastore `{ds}` (running, candidate, startup, operational or * for all)"
                )
            })?;
            access.modes[slot(ds)] = mode;
        }
        Ok(access)
    }
}

impl fmt::Display for Access {
    /// The shortest spelling: `*=MODE` when all are alike, else each
    /// datastore that has some access, in a fixed order (`*=none` for none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modes.iter().all(|m| *m == self.modes[0]) {
            return write!(f, "*={}", self.modes[0].name());
        }
        let order = [Datastore::Running, Datastore::Candidate, Datastore::Startup, Datastore::Operational];
        let mut first = true;
        for ds in order.into_iter().filter(|d| self.mode(*d) != Mode::None) {
            let sep = if first { "" } else { "," };
            write!(f, "{sep}{}={}", ds.name(), self.mode(ds).name())?;
            first = false;
        }
        Ok(())
    }
}

/// How an entry proves who it is.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// An argon2id PHC string (`$argon2id$v=19$m=…,t=…,p=…$SALT$HASH`).
    Password(String),
    /// The SHA-256 of a bearer token.
    Token([u8; 32]),
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Secret::Password(_) => f.write_str("Password(…)"),
            Secret::Token(_) => f.write_str("Token(…)"),
        }
    }
}

/// One line of the users file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub secret: Secret,
    pub access: Access,
}

impl Entry {
    fn kind(&self) -> &'static str {
        match self.secret {
            Secret::Password(_) => "user",
            Secret::Token(_) => "token",
        }
    }
}

impl fmt::Display for Entry {
    /// The entry's line in the file.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.secret {
            Secret::Password(phc) => write!(f, "user {} {phc} {}", self.name, self.access),
            Secret::Token(hash) => write!(f, "token {} sha256:{} {}", self.name, hex(hash), self.access),
        }
    }
}

/// A users file that cannot be read or is malformed; it names the file and,
/// where there is one, the line.
#[derive(Debug, thiserror::Error)]
#[error("users file {}{}: {message}", file.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct UsersError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// The entries of a users file, in file order, with the file's other lines
/// (comments, blank lines) kept for rewriting it.
#[derive(Clone, Debug)]
pub struct Users {
    file: PathBuf,
    /// Every line of the file; entries are also parsed in `entries`.
    lines: Vec<Line>,
    by_name: HashMap<String, usize>,
}

#[derive(Clone, Debug)]
enum Line {
    Other(String),
    Entry(Entry),
}

/// Whether `name` may name a user or token: letters, digits and `._@-`, so
/// that it needs no quoting in the file and has no `:` (HTTP Basic's
/// separator).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

fn parse_entry(text: &str) -> Result<Entry, String> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let kind = fields[0];
    if kind != "user" && kind != "token" {
        return Err(format!("`{kind}`: an entry starts with `user` or `token`"));
    }
    if fields.len() != 4 {
        let shape = if kind == "user" { "user NAME ARGON2ID-HASH ACCESS" } else { "token NAME sha256:HEX ACCESS" };
        return Err(format!("expected 4 fields ({shape}), found {}", fields.len()));
    }
    let name = fields[1];
    if !valid_name(name) {
        return Err(format!("name `{name}`: use letters, digits and . _ @ - (up to 128)"));
    }
    let secret = if kind == "user" {
        let phc = fields[2];
        let parsed =
            PasswordHash::new(phc).map_err(|e| format!("user {name}: the password hash is not a PHC string: {e}"))?;
        if parsed.algorithm.as_str() != "argon2id" {
            return Err(format!(
                "user {name}: the password hash is {}, not argon2id (make it with `canopy user add`)",
                parsed.algorithm
            ));
        }
        if parsed.salt.is_none() || parsed.hash.is_none() {
            return Err(format!("user {name}: the password hash has no salt or no hash"));
        }
        // The parameters must be ones argon2 accepts, or every login fails later.
        argon2::Params::try_from(&parsed).map_err(|e| format!("user {name}: the password hash's parameters: {e}"))?;
        Secret::Password(phc.to_string())
    } else {
        let hex_text = fields[2]
            .strip_prefix("sha256:")
            .ok_or_else(|| format!("token {name}: the hash is not `sha256:` and 64 hex digits"))?;
        Secret::Token(
            unhex(hex_text).ok_or_else(|| format!("token {name}: the hash is not `sha256:` and 64 hex digits"))?,
        )
    };
    let access = fields[3].parse().map_err(|e| format!("{kind} {name}: {e}"))?;
    Ok(Entry { name: name.to_string(), secret, access })
}

impl Users {
    /// An empty file at `file` (nothing read or written).
    pub fn empty(file: impl Into<PathBuf>) -> Users {
        Users { file: file.into(), lines: Vec::new(), by_name: HashMap::new() }
    }

    /// Parses the text of the users file `file`.
    ///
    /// # Errors
    /// The first malformed line, by number.
    pub fn parse(file: impl Into<PathBuf>, text: &str) -> Result<Users, UsersError> {
        let mut users = Users::empty(file);
        let mut first_line: HashMap<String, usize> = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let number = i + 1;
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                users.lines.push(Line::Other(raw.to_string()));
                continue;
            }
            let bad = |message: String| UsersError { file: users.file.clone(), line: Some(number), message };
            let entry = parse_entry(t).map_err(bad)?;
            if let Some(before) = first_line.get(&entry.name) {
                return Err(bad(format!("`{}` is already defined on line {before}", entry.name)));
            }
            first_line.insert(entry.name.clone(), number);
            users.by_name.insert(entry.name.clone(), users.lines.len());
            users.lines.push(Line::Entry(entry));
        }
        Ok(users)
    }

    /// Reads and parses the users file `file`.
    ///
    /// # Errors
    /// The file cannot be read, is not UTF-8, or has a malformed line.
    pub fn load(file: &Path) -> Result<Users, UsersError> {
        let bytes = std::fs::read(file).map_err(|e| UsersError {
            file: file.to_path_buf(),
            line: None,
            message: format!("cannot read it: {e}"),
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
            UsersError { file: file.to_path_buf(), line: Some(line), message: "not UTF-8 text".into() }
        })?;
        Users::parse(file, &text)
    }

    /// Reads the users file `file`, or makes an empty one if there is none.
    ///
    /// # Errors
    /// As [`Users::load`], except that a missing file is not an error.
    pub fn load_or_empty(file: &Path) -> Result<Users, UsersError> {
        match std::fs::metadata(file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Users::empty(file)),
            _ => Users::load(file),
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        match &self.lines[*self.by_name.get(name)?] {
            Line::Entry(e) => Some(e),
            Line::Other(_) => None,
        }
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.lines.iter().filter_map(|l| match l {
            Line::Entry(e) => Some(e),
            Line::Other(_) => None,
        })
    }

    /// Puts `entry` in place of the entry of the same name and kind, or at the
    /// end; true when it replaced one.
    ///
    /// # Errors
    /// The name belongs to an entry of the other kind (a user and a token).
    pub fn put(&mut self, entry: Entry) -> Result<bool, String> {
        if let Some(&i) = self.by_name.get(&entry.name) {
            if let Line::Entry(old) = &self.lines[i] {
                if old.kind() != entry.kind() {
                    return Err(format!(
                        "`{}` is a {} in {}; remove it first",
                        entry.name,
                        old.kind(),
                        self.file.display()
                    ));
                }
            }
            self.lines[i] = Line::Entry(entry);
            return Ok(true);
        }
        self.by_name.insert(entry.name.clone(), self.lines.len());
        self.lines.push(Line::Entry(entry));
        Ok(false)
    }

    /// Removes the entry named `name`; false if there is none.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(i) = self.by_name.remove(name) else { return false };
        self.lines.remove(i);
        for v in self.by_name.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        true
    }

    /// The file's text: its comments and blank lines as they were, each entry
    /// as [`Entry`]'s `Display` writes it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::Other(t) => out.push_str(t),
                Line::Entry(e) => out.push_str(&e.to_string()),
            }
            out.push('\n');
        }
        out
    }

    /// Writes the file: a new file is made with mode 0600; an existing one is
    /// replaced whole (a new file renamed over it, with the old one's mode),
    /// so that a reader never sees half of it.
    ///
    /// # Errors
    /// I/O errors, naming the file.
    pub fn save(&self) -> Result<(), UsersError> {
        let fail = |what: &str, e: std::io::Error| UsersError {
            file: self.file.clone(),
            line: None,
            message: format!("cannot {what} it: {e}"),
        };
        let mode = match std::fs::metadata(&self.file) {
            Ok(m) => permissions_of(&m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0o600,
            Err(e) => return Err(fail("read", e)),
        };
        let dir = match self.file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = self.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written =
            write_private(&tmp, self.text().as_bytes(), mode).and_then(|()| std::fs::rename(&tmp, &self.file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail("write", e));
        }
        Ok(())
    }
}

#[cfg(unix)]
fn permissions_of(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permissions_of(_: &std::fs::Metadata) -> u32 {
    0o600
}

/// Writes `bytes` to a new file `path` created with `mode` (not widened by
/// the umask's absence: the file never exists with looser permissions), and
/// syncs it.
fn write_private(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(path)?;
    #[cfg(unix)]
    {
        // The umask may have narrowed `mode`; the old file's mode is wanted.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    f.write_all(bytes)?;
    f.sync_all()
}

/// A user entry for `password`: a new random salt, argon2id with the crate's
/// default cost (19 MiB, 2 passes: OWASP's recommended minimum).
///
/// # Errors
/// The hasher fails (it does not for a password of sane length).
pub fn user_entry(name: &str, password: &str, access: Access) -> Result<Entry, String> {
    let mut salt = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    let phc = Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| e.to_string())?;
    Ok(Entry { name: name.to_string(), secret: Secret::Password(phc.to_string()), access })
}

/// A new bearer token (64 hex digits: 256 random bits) and its entry, which
/// keeps only its hash.
pub fn new_token(name: &str, access: Access) -> (String, Entry) {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = hex(&bytes);
    let entry = Entry { name: name.to_string(), secret: Secret::Token(sha256(token.as_bytes())), access };
    (token, entry)
}

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let t = text.as_bytes();
    if t.len() != 64 {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let mut out = [0u8; 32];
    for (i, pair) in t.chunks(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A well-formed argon2id PHC string with small parameters (its hash is of
    // no password; these tests only parse it).
    const PHC: &str = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$zN7pRZbF7zLmNfFX/yVdmA";

    fn parse(text: &str) -> Result<Users, UsersError> {
        Users::parse("users.txt", text)
    }

    fn refused(text: &str) -> UsersError {
        parse(text).expect_err("malformed")
    }

    #[test]
    fn access_specs() {
        let a: Access = "running=rw,candidate=rw,startup=ro,operational=ro".parse().unwrap();
        assert!(a.allows(Datastore::Running, Mode::Write));
        assert!(a.allows(Datastore::Startup, Mode::Read));
        assert!(!a.allows(Datastore::Startup, Mode::Write));
        assert_eq!(a.to_string(), "running=rw,candidate=rw,startup=ro,operational=ro");
        let b: Access = "*=ro,running=rw".parse().unwrap();
        assert_eq!(b.mode(Datastore::Running), Mode::Write);
        assert_eq!(b.mode(Datastore::Operational), Mode::Read);
        let c: Access = "running=ro".parse().unwrap();
        assert_eq!(c.mode(Datastore::Candidate), Mode::None);
        assert_eq!(c.to_string(), "running=ro");
        assert_eq!("*=rw".parse::<Access>().unwrap(), Access::all(Mode::Write));
        assert_eq!("*=none".parse::<Access>().unwrap().to_string(), "*=none");
        assert_eq!(
            "*=rw,startup=none".parse::<Access>().unwrap().to_string(),
            "running=rw,candidate=rw,operational=rw"
        );
        for bad in ["", "running", "running=rx", "runing=rw", "running=rw,", "=rw", "*=ro;running=rw"] {
            assert!(bad.parse::<Access>().is_err(), "{bad}");
        }
        let e = "runing=rw".parse::<Access>().unwrap_err();
        assert!(e.contains("no datastore `runing`"), "{e}");
    }

    #[test]
    fn a_file_with_users_tokens_and_comments() {
        let token = format!("sha256:{}", "ab".repeat(32));
        let text = format!(
            "# canopy users\n\nuser alice {PHC} running=rw,candidate=rw,startup=ro,operational=ro\n  token ci-bot {token} *=ro  \n# end\n"
        );
        let users = parse(&text).unwrap();
        let alice = users.get("alice").unwrap();
        assert_eq!(alice.secret, Secret::Password(PHC.into()));
        assert!(alice.access.allows(Datastore::Candidate, Mode::Write));
        let bot = users.get("ci-bot").unwrap();
        assert_eq!(bot.secret, Secret::Token([0xab; 32]));
        assert_eq!(bot.access, Access::all(Mode::Read));
        assert_eq!(users.entries().count(), 2);
        assert!(users.get("bob").is_none());
        // Rewritten, comments and blank lines stay; entries are normalized.
        let again = users.text();
        assert!(again.starts_with("# canopy users\n\nuser alice "), "{again}");
        assert!(again.contains(&format!("\ntoken ci-bot {token} *=ro\n# end\n")), "{again}");
        assert_eq!(parse(&again).unwrap().entries().count(), 2);
        assert_eq!(parse("").unwrap().entries().count(), 0);
    }

    #[test]
    fn malformed_lines_are_named() {
        let ok = format!("user alice {PHC} *=rw\n");
        let cases = [
            (format!("{ok}frob bob x *=rw\n"), 2, "starts with `user` or `token`"),
            (format!("{ok}user bob {PHC}\n"), 2, "expected 4 fields"),
            (format!("{ok}user bob {PHC} *=rw extra\n"), 2, "expected 4 fields"),
            (format!("# c\nuser b:ob {PHC} *=rw\n"), 2, "name `b:ob`"),
            ("user bob secret *=rw\n".into(), 1, "not a PHC string"),
            ("user bob $2b$12$abcdefghijklmnopqrstuu *=rw\n".into(), 1, "not a PHC string"),
            ("user bob $argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$zN7pRZbF7zLmNfFX/yVdmA *=rw\n".into(), 1, "not argon2id"),
            ("user bob $argon2id$v=19$m=1,t=1,p=1$c2FsdHNhbHQ$zN7pRZbF7zLmNfFX/yVdmA *=rw\n".into(), 1, "parameters"),
            (format!("user bob {PHC} running=rx\n"), 1, "mode `rx`"),
            (format!("user bob {PHC} runing=rw\n"), 1, "no datastore `runing`"),
            ("token t sha256:abc *=ro\n".into(), 1, "64 hex digits"),
            (format!("token t {} *=ro\n", "ab".repeat(32)), 1, "64 hex digits"),
            (format!("token t sha256:{} *=ro\n", "zz".repeat(32)), 1, "64 hex digits"),
            (format!("{ok}\n\ntoken alice sha256:{} *=ro\n", "00".repeat(32)), 4, "already defined on line 1"),
        ];
        for (text, line, needle) in cases {
            let e = refused(&text);
            assert_eq!(e.line, Some(line), "{text}: {e}");
            let shown = e.to_string();
            assert!(shown.starts_with(&format!("users file users.txt, line {line}: ")), "{shown}");
            assert!(shown.contains(needle), "{text}: {shown}");
        }
    }

    #[test]
    fn put_replaces_in_place_and_remove_keeps_the_rest() {
        let mut users = parse(&format!("# head\nuser a {PHC} *=ro\n# mid\nuser b {PHC} *=ro\n")).unwrap();
        let (token, t) = new_token("t", Access::all(Mode::Read));
        assert_eq!(token.len(), 64);
        assert_eq!(t.secret, Secret::Token(sha256(token.as_bytes())));
        assert!(!users.put(t).unwrap());
        let a2 = Entry { name: "a".into(), secret: Secret::Password(PHC.into()), access: Access::all(Mode::Write) };
        assert!(users.put(a2).unwrap());
        let clash = Entry { name: "t".into(), secret: Secret::Password(PHC.into()), access: Access::default() };
        assert!(users.put(clash).unwrap_err().contains("is a token"));
        assert!(users.remove("b"));
        assert!(!users.remove("b"));
        let text = users.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# head");
        assert_eq!(lines[1], format!("user a {PHC} *=rw"));
        assert_eq!(lines[2], "# mid");
        assert!(lines[3].starts_with("token t sha256:"), "{text}");
        assert_eq!(lines.len(), 4);
        assert_eq!(users.get("t").map(|e| e.name.as_str()), Some("t"));
        assert!(users.remove("a"));
        assert_eq!(users.get("t").map(|e| e.name.as_str()), Some("t"));
    }

    #[test]
    fn a_new_user_entry_verifies_its_password() {
        use argon2::password_hash::PasswordVerifier;
        let e = user_entry("alice", "pw", Access::all(Mode::Read)).unwrap();
        let Secret::Password(phc) = &e.secret else { panic!("a password") };
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        let hash = PasswordHash::new(phc).unwrap();
        assert!(Argon2::default().verify_password(b"pw", &hash).is_ok());
        assert!(Argon2::default().verify_password(b"pW", &hash).is_err());
        // Round trip through the file.
        let users = parse(&format!("{e}\n")).unwrap();
        assert_eq!(users.get("alice"), Some(&e));
    }

    #[test]
    fn save_makes_a_private_file_and_keeps_an_existing_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("users");
        let mut users = Users::load_or_empty(&file).unwrap();
        users.put(new_token("t", Access::all(Mode::Read)).1).unwrap();
        users.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&file), 0o600);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            users.save().unwrap();
            assert_eq!(mode(&file), 0o640);
        }
        assert_eq!(Users::load(&file).unwrap().entries().count(), 1);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        let e = Users::load(&dir.path().join("none")).unwrap_err();
        assert!(e.to_string().contains("cannot read it"), "{e}");
    }
}
