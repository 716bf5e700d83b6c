//! Creating store files and directories with private permissions.
//!
//! Configuration often holds secrets, so every file a backend creates is
//! `0600` and every directory it creates `0700`, whatever the umask, unless the
//! store URL asks for another mode (`?mode=0640`). Existing files and
//! directories keep theirs.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The permissions of files a store creates: `0600` unless the URL says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMode(pub u32);

impl Default for FileMode {
    fn default() -> FileMode {
        FileMode(0o600)
    }
}

impl FileMode {
    /// The mode of directories: the file mode with search (`x`) permission
    /// wherever it grants read (`0640` → `0750`).
    pub fn dir_mode(self) -> u32 {
        self.0 | ((self.0 & 0o444) >> 2)
    }

    /// Creates `dir` and its missing parents with [`FileMode::dir_mode`].
    ///
    /// # Errors
    /// The operating system's.
    pub fn create_dir_all(self, dir: &Path) -> io::Result<()> {
        if dir.as_os_str().is_empty() || dir.is_dir() {
            return Ok(());
        }
        let mut b = fs::DirBuilder::new();
        b.recursive(true).mode(self.dir_mode());
        b.create(dir)?;
        // The umask may have taken bits away from the mode asked for.
        fs::set_permissions(dir, fs::Permissions::from_mode(self.dir_mode()))
    }

    /// Options that create a missing file with this mode (exactly: the umask
    /// does not apply, see [`FileMode::fix`]).
    pub fn options(self) -> fs::OpenOptions {
        let mut o = fs::OpenOptions::new();
        o.mode(self.0);
        o
    }

    /// Sets `file`'s permissions to this mode when they differ: `open(2)`
    /// applies the umask to the mode a file is created with, which may take
    /// bits away (`mode=0660` under umask 022).
    ///
    /// # Errors
    /// The operating system's.
    pub fn fix(self, file: &fs::File) -> io::Result<()> {
        if file.metadata()?.permissions().mode() & 0o7777 != self.0 {
            file.set_permissions(fs::Permissions::from_mode(self.0))?;
        }
        Ok(())
    }

    /// Creates `path` empty with this mode if it does not exist (so that a
    /// library that creates its own files, SQLite, finds it with the right
    /// mode and its side files follow it).
    ///
    /// # Errors
    /// The operating system's.
    pub fn precreate(self, path: &Path) -> io::Result<()> {
        match self.options().write(true).create_new(true).open(path) {
            Ok(f) => self.fix(&f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl std::str::FromStr for FileMode {
    type Err = String;

    /// An octal mode such as `0600` or `640`: read and write bits only, and
    /// the owner must be able to read and write.
    fn from_str(s: &str) -> Result<FileMode, String> {
        let bad = || format!("mode `{s}`: expected an octal file mode such as 0600 or 0640");
        let digits = s.strip_prefix("0o").unwrap_or(s);
        if digits.is_empty() || digits.len() > 4 {
            return Err(bad());
        }
        let m = u32::from_str_radix(digits, 8).map_err(|_| bad())?;
        if m & !0o666 != 0 {
            return Err(format!("mode `{s}`: only read and write bits (0666) may be set on store files"));
        }
        if m & 0o600 != 0o600 {
            return Err(format!("mode `{s}`: the owner must be able to read and write the store (0600)"));
        }
        Ok(FileMode(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_directories_get_search_bits() {
        assert_eq!("0600".parse::<FileMode>().unwrap(), FileMode(0o600));
        assert_eq!("640".parse::<FileMode>().unwrap().dir_mode(), 0o750);
        assert_eq!(FileMode::default().dir_mode(), 0o700);
        for bad in ["", "0x600", "0800", "0755", "0400", "06000", "rw"] {
            assert!(bad.parse::<FileMode>().is_err(), "{bad}");
        }
    }

    #[test]
    fn created_files_and_directories_are_private_whatever_the_umask() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b");
        FileMode::default().create_dir_all(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let f = dir.join("f");
        FileMode::default().precreate(&f).unwrap();
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        let g = dir.join("g");
        let mode = FileMode(0o660);
        let file = mode.options().write(true).create(true).truncate(true).open(&g).unwrap();
        mode.fix(&file).unwrap();
        assert_eq!(fs::metadata(&g).unwrap().permissions().mode() & 0o777, 0o660);
    }
}
