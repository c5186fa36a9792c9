//! An initramfs for the real-kernel guest: host files at their own paths (so a dynamic
//! executable finds its libraries where `ldd` says), generated files, symlinks, written as
//! one uncompressed `newc` cpio archive (the format the kernel unpacks into its rootfs).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// What one path of the archive is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir,
    /// A file copied from the host when the archive is written.
    Host {
        from: PathBuf,
        mode: u32,
    },
    /// A file with these contents.
    Bytes {
        data: Vec<u8>,
        mode: u32,
    },
    Symlink(String),
}

/// The archive being put together; paths are absolute guest paths.
#[derive(Debug, Default)]
pub struct Initramfs {
    entries: BTreeMap<String, Entry>,
}

/// `path` as an archive name: relative, `/`-separated, no `.`/`..`.
fn name_of(path: &Path) -> Result<String, String> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(p) => parts.push(
                p.to_str()
                    .ok_or_else(|| format!("{}: not UTF-8", path.display()))?,
            ),
            _ => return Err(format!("{}: not a plain absolute path", path.display())),
        }
    }
    if parts.is_empty() {
        return Err("the root is not an entry".into());
    }
    Ok(parts.join("/"))
}

impl Initramfs {
    /// An archive holding the host's top-level usrmerge symlinks (`/lib` → `usr/lib`, …), so
    /// libraries named by either path resolve in the guest as on the host.
    pub fn new() -> Initramfs {
        let mut fs = Initramfs::default();
        for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
            if let Ok(target) = std::fs::read_link(Path::new("/").join(top)) {
                if let Some(t) = target.to_str() {
                    fs.entries
                        .insert(top.to_owned(), Entry::Symlink(t.to_owned()));
                }
            }
        }
        fs
    }

    fn parents(&mut self, name: &str) {
        let mut at = 0;
        while let Some(i) = name[at..].find('/') {
            let dir = &name[..at + i];
            self.entries.entry(dir.to_owned()).or_insert(Entry::Dir);
            at += i + 1;
        }
    }

    fn insert(&mut self, path: &Path, entry: Entry) -> Result<(), String> {
        let name = name_of(path)?;
        self.parents(&name);
        self.entries.insert(name, entry);
        Ok(())
    }

    /// An empty directory.
    pub fn dir(&mut self, path: impl AsRef<Path>) -> Result<(), String> {
        self.insert(path.as_ref(), Entry::Dir)
    }

    /// A file with `data`, mode `mode` (permission bits).
    pub fn bytes(
        &mut self,
        path: impl AsRef<Path>,
        data: impl Into<Vec<u8>>,
        mode: u32,
    ) -> Result<(), String> {
        self.insert(
            path.as_ref(),
            Entry::Bytes {
                data: data.into(),
                mode,
            },
        )
    }

    /// A symbolic link at `path` to `target`.
    pub fn symlink(&mut self, path: impl AsRef<Path>, target: &str) -> Result<(), String> {
        self.insert(path.as_ref(), Entry::Symlink(target.to_owned()))
    }

    /// The host file `from` at the guest path `to` (mode taken from the host file).
    pub fn copy(&mut self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<(), String> {
        let from = from.as_ref();
        let meta = std::fs::metadata(from).map_err(|e| format!("{}: {e}", from.display()))?;
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", from.display()));
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        self.insert(
            to.as_ref(),
            Entry::Host {
                from: from.to_owned(),
                mode,
            },
        )
    }

    /// The host file `path` at the same path in the guest: the file itself at its canonical
    /// path, and a symlink at `path` when that is a link to it (`libc.so.6` → the file).
    pub fn host_file(&mut self, path: impl AsRef<Path>) -> Result<(), String> {
        let path = path.as_ref();
        let canon = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.copy(&canon, &canon)?;
        // The link's own directory, resolved (usrmerge: /lib/x → /usr/lib/x).
        if let (Some(dir), Some(file)) = (path.parent(), path.file_name()) {
            let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let link = dir.join(file);
            if link != canon {
                let target = canon
                    .to_str()
                    .ok_or_else(|| format!("{}: not UTF-8", canon.display()))?;
                self.symlink(&link, target)?;
            }
        }
        Ok(())
    }

    /// A dynamic (or static) executable or library at its host path, with every library
    /// `ldd` says it loads.
    pub fn elf(&mut self, path: impl AsRef<Path>) -> Result<(), String> {
        let path = path.as_ref();
        self.host_file(path)?;
        for lib in ldd(path)? {
            self.host_file(&lib)?;
        }
        Ok(())
    }

    /// An executable or library at the guest path `to` (not its host path), with its
    /// libraries at their host paths.
    pub fn elf_at(&mut self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<(), String> {
        let from = from.as_ref();
        self.copy(from, to)?;
        for lib in ldd(from)? {
            self.host_file(&lib)?;
        }
        Ok(())
    }

    /// Writes the archive (uncompressed `newc`) to `out`.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for (ino, (name, entry)) in (1u32..).zip(&self.entries) {
            match entry {
                Entry::Dir => header(out, ino, 0o040_755, 2, 0, name)?,
                Entry::Symlink(target) => {
                    header(out, ino, 0o120_777, 1, target.len(), name)?;
                    out.write_all(target.as_bytes())?;
                    pad(out, target.len())?;
                }
                Entry::Bytes { data, mode } => {
                    header(out, ino, 0o100_000 | mode, 1, data.len(), name)?;
                    out.write_all(data)?;
                    pad(out, data.len())?;
                }
                Entry::Host { from, mode } => {
                    let mut file = std::fs::File::open(from)?;
                    let len = file.metadata()?.len();
                    let len = usize::try_from(len)
                        .ok()
                        .filter(|&l| u32::try_from(l).is_ok())
                        .ok_or_else(|| {
                            io::Error::other(format!("{}: too big for cpio", from.display()))
                        })?;
                    header(out, ino, 0o100_000 | mode, 1, len, name)?;
                    let copied = io::copy(&mut file, out)?;
                    if copied != len as u64 {
                        return Err(io::Error::other(format!(
                            "{}: changed while being archived",
                            from.display()
                        )));
                    }
                    pad(out, len)?;
                }
            }
        }
        header(out, 0, 0, 1, 0, "TRAILER!!!")
    }
}

/// One `newc` header and the name (NUL-terminated, padded to 4 bytes).
fn header(
    out: &mut impl Write,
    ino: u32,
    mode: u32,
    nlink: u32,
    size: usize,
    name: &str,
) -> io::Result<()> {
    let namesize = name.len() + 1;
    let fields = [
        ino,
        mode,
        0,
        0,
        nlink,
        0,
        size as u32,
        0,
        0,
        0,
        0,
        namesize as u32,
        0,
    ];
    let mut h = String::with_capacity(110);
    h.push_str("070701");
    for f in fields {
        h.push_str(&format!("{f:08x}"));
    }
    out.write_all(h.as_bytes())?;
    out.write_all(name.as_bytes())?;
    out.write_all(&[0])?;
    pad(out, 110 + namesize)
}

fn pad(out: &mut impl Write, len: usize) -> io::Result<()> {
    let n = (4 - len % 4) % 4;
    out.write_all(&[0u8; 3][..n])
}

/// The libraries `ldd` lists for `path` (absolute paths; none for a static executable).
fn ldd(path: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("ldd")
        .arg(path)
        .output()
        .map_err(|e| format!("running ldd: {e} (install libc-bin)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&out.stderr).contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(format!(
            "ldd {}: {}{}",
            path.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    parse_ldd(&text)
}

/// The library paths of `ldd` output: `name => /path (addr)` and `/path (addr)` lines.
fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.contains("=> not found") {
            return Err(format!("ldd: a library is missing: {line}"));
        }
        let path = match line.split_once("=> ") {
            Some((_, rest)) => rest,
            None => line,
        };
        let path = path.split(" (").next().unwrap_or_default().trim();
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines() {
        let text = "\tlinux-vdso.so.1 (0x00007eff2b404000)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007eff2b07b000)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007eff2b406000)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").is_err());
    }

    #[test]
    fn names_are_relative_and_plain() {
        assert_eq!(name_of(Path::new("/usr/bin/x")).unwrap(), "usr/bin/x");
        assert!(name_of(Path::new("/usr/../etc")).is_err());
        assert!(name_of(Path::new("/")).is_err());
    }

    /// The archive as the kernel reads it: each header's fields, names and data at 4-byte
    /// boundaries, parents before children, and the trailer.
    #[test]
    fn newc_layout() {
        let mut fs = Initramfs::default();
        fs.bytes("/rk/init", "#!/bin/sh\n", 0o755).unwrap();
        fs.symlink("/bin", "usr/bin").unwrap();
        let mut out = Vec::new();
        fs.write(&mut out).unwrap();
        let mut at = 0;
        let mut names = Vec::new();
        loop {
            assert_eq!(&out[at..at + 6], b"070701", "magic at {at}");
            let field = |i: usize| {
                let s = std::str::from_utf8(&out[at + 6 + 8 * i..at + 14 + 8 * i]).unwrap();
                u32::from_str_radix(s, 16).unwrap() as usize
            };
            let (mode, size, namesize) = (field(1), field(6), field(11));
            let name = std::str::from_utf8(&out[at + 110..at + 110 + namesize - 1]).unwrap();
            names.push((name.to_owned(), mode));
            at = (at + 110 + namesize).div_ceil(4) * 4;
            if name == "TRAILER!!!" {
                break;
            }
            if name == "rk/init" {
                assert_eq!(&out[at..at + size], b"#!/bin/sh\n");
            }
            at = (at + size).div_ceil(4) * 4;
        }
        assert_eq!(at, out.len());
        assert_eq!(
            names,
            [
                ("bin".to_owned(), 0o120_777),
                ("rk".to_owned(), 0o040_755),
                ("rk/init".to_owned(), 0o100_755),
                ("TRAILER!!!".to_owned(), 0)
            ]
        );
    }
}
