//! [`TempDir`]: the one scratch-directory helper of the workspace's tests and tools.

use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Numbers the directories of this process, so two made in the same nanosecond differ.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new, empty directory under the system temp dir (`$TMPDIR`, else `/tmp`), removed with
/// everything in it when the value is dropped (unless [`keep`](Self::keep) was called).
///
/// The name is `<prefix>-<pid>-<n>-<nanoseconds>`, unique per process, call and time, and the
/// directory is made with `mkdir` (never reused), so parallel tests and processes cannot
/// collide. It dereferences to its [`Path`], so `dir.join("x")` works.
///
/// ```
/// let dir = ibsim_harness::TempDir::new("my-test")?;
/// std::fs::write(dir.join("a.txt"), "x")?;
/// let path = dir.path().to_owned();
/// drop(dir);
/// assert!(!path.exists());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    /// Creates `<temp dir>/<prefix>-<pid>-<n>-<nanoseconds>`.
    ///
    /// # Errors
    /// The directory cannot be created (the error names it).
    pub fn new(prefix: &str) -> io::Result<TempDir> {
        let path = std::env::temp_dir().join(unique_name(prefix));
        std::fs::create_dir(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(TempDir { path, keep: false })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place when this value is dropped (e.g. to keep logs).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                eprintln!("ibsim-harness: removing {}: {e}", self.path.display());
            }
        }
    }
}

/// `<prefix>-<pid>-<n>-<nanoseconds>`: unique per process, call and time.
pub(crate) fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_differ() {
        let a = unique_name("umadrs");
        let b = unique_name("umadrs");
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("umadrs-{}-", std::process::id())));
    }

    #[test]
    fn removed_on_drop_unless_kept() {
        let dir = TempDir::new("umadrs-tempdir-test").unwrap();
        assert!(dir.is_dir());
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), "x").unwrap();
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists());

        let mut kept = TempDir::new("umadrs-tempdir-test").unwrap();
        kept.keep();
        let path = kept.path().to_owned();
        drop(kept);
        assert!(path.is_dir());
        std::fs::remove_dir(&path).unwrap();
    }

    #[test]
    fn two_dirs_differ() {
        let a = TempDir::new("umadrs-tempdir-test").unwrap();
        let b = TempDir::new("umadrs-tempdir-test").unwrap();
        assert_ne!(a.path(), b.path());
    }
}
