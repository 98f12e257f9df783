//! Reading a file the user names — a disk profile, a DiskSim file, a scenario script, a
//! queue trace — bounded: only a regular file, at most a stated number of bytes, UTF-8.
//!
//! Without it `iosched disk info /dev/zero` or `scenario /dev/urandom` read for ever at
//! 100 % CPU and grow to gigabytes, and a FIFO nobody writes to hangs the command. The
//! limits are far above any real input of each kind and are named in the error.

use std::io::Read;
use std::path::Path;

/// Disk profiles (TOML) and scenario scripts: the built-in profiles are a few KiB.
pub const MAX_PROFILE_BYTES: u64 = 16 << 20;
/// DiskSim parameter, model, seek and validation-trace files (the largest shipped is 0.5 MB).
pub const MAX_DISKSIM_BYTES: u64 = 64 << 20;
/// Queue traces (`--record` output): a long real run writes a few hundred MB.
pub const MAX_TRACE_BYTES: u64 = 2 << 30;

/// The text of `path`, if it is a regular file of at most `limit` bytes holding UTF-8.
/// Errors say which of those failed; the caller adds what the file was for.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind};
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("not a regular file (a {}); expected a text file", kind_of(&meta)),
        ));
    }
    if meta.len() > limit {
        return Err(Error::new(ErrorKind::InvalidData, too_big(meta.len(), limit)));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while we read it: read one byte past the limit at most.
    std::fs::File::open(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(Error::new(ErrorKind::InvalidData, too_big(bytes.len() as u64, limit)));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "byte {}: not UTF-8 text; expected a text file (is this the right file?)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_big(len: u64, limit: u64) -> String {
    format!("{len} bytes, more than the {} MiB read at most for a file of this kind", limit >> 20)
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_big_files_are_refused() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string();
        assert_eq!(e, "not a regular file (a character device); expected a text file");
        let e = read_text(Path::new("/"), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let d = std::env::temp_dir().join(format!("iosched-input-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("big.toml");
        std::fs::write(&f, vec![b'#'; 2 << 20]).unwrap();
        let e = read_text(&f, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("2097152 bytes, more than the 1 MiB"), "{e}");
        std::fs::write(&f, [b'a', 0xff, b'b']).unwrap();
        let e = read_text(&f, 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("byte 1: not UTF-8"), "{e}");
        std::fs::write(&f, "ok").unwrap();
        assert_eq!(read_text(&f, 1 << 20).unwrap(), "ok");
        let _ = std::fs::remove_dir_all(&d);
    }
}
