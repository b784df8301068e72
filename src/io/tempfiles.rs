//! The temp files and directories of a run, and what happens to them when the run ends
//! early.
//!
//! Every temp file or directory the tool makes is named `.mcd-inject-PID-NS-XXXXXX`: the
//! tool's prefix, the id of the process that made it and the identity (inode) of its pid
//! namespace. A run remembers each directory it makes temp files in; when it is stopped
//! by SIGINT, SIGTERM or SIGHUP, or when `--timeout` expires, it removes its own entries
//! there before exiting. A run killed with SIGKILL cannot do that: the next run that
//! makes a temp file in the same directory (or opens the cache) removes the entries
//! whose process is gone. A process id means something only in its own pid namespace,
//! so entries made in another one (a container sharing the directory) are left alone
//! unless they have not changed for a day.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};
use std::time::Duration;

use tempfile::{NamedTempFile, TempDir};

/// What every temp file and directory of the tool is named with.
pub const PREFIX: &str = ".mcd-inject-";

/// The directories this run made temp entries in. Creating an entry and removing them
/// all on a signal are serialised by this lock, so that no entry is made after the
/// cleanup has run.
static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn dirs() -> MutexGuard<'static, Vec<PathBuf>> {
    DIRS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Entries of another pid namespace are swept only after this long without a change.
const FOREIGN_STALE: Duration = Duration::from_secs(24 * 3600);

/// The identity of this process's pid namespace (0 where /proc does not tell).
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    static NS: OnceLock<u64> = OnceLock::new();
    *NS.get_or_init(|| fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino()))
}

/// The name prefix of this process's temp entries.
fn own_prefix() -> String {
    format!("{PREFIX}{}-{}-", std::process::id(), pid_namespace())
}

/// The process id and pid namespace a temp entry's name carries, if it is one of the
/// tool's.
fn owner(name: &str) -> Option<(u32, u64)> {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, rest) = rest.split_once('-')?;
    let (ns, _) = rest.split_once('-')?;
    if !number(pid) || !number(ns) {
        return None;
    }
    Some((pid.parse().ok()?, ns.parse().ok()?))
}

/// Whether a process with this id exists (on this machine's process namespace).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    // EPERM means it exists but belongs to someone else.
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

fn remove(path: &Path) {
    let removed = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    // Someone else may have removed it first; nothing else can be done about a failure.
    let _ = removed;
}

/// Removes the temp entries in `dir` left by runs whose process is gone; returns how
/// many it removed.
pub fn sweep_stale(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let (me, ns) = (std::process::id(), pid_namespace());
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, their_ns)) = name.to_str().and_then(owner) else {
            continue;
        };
        let stale = if their_ns == ns {
            pid != me && !alive(pid)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > FOREIGN_STALE))
        };
        if stale {
            remove(&entry.path());
            removed += 1;
        }
    }
    removed
}

/// Notes that this run makes temp entries in `dir` (sweeping stale ones there the first
/// time), and returns the lock that keeps the cleanup from running meanwhile.
fn watch(dir: &Path) -> MutexGuard<'static, Vec<PathBuf>> {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut dirs = dirs();
    if !dirs.contains(&dir) {
        sweep_stale(&dir);
        dirs.push(dir);
    }
    dirs
}

/// A temp file in `dir`, named for this run.
pub fn file_in(dir: &Path) -> io::Result<NamedTempFile> {
    let _guard = watch(dir);
    tempfile::Builder::new()
        .prefix(&own_prefix())
        .tempfile_in(dir)
}

/// A temp directory in `dir`, named for this run.
pub fn dir_in(dir: &Path) -> io::Result<TempDir> {
    let _guard = watch(dir);
    tempfile::Builder::new()
        .prefix(&own_prefix())
        .tempdir_in(dir)
}

/// Removes every temp entry this run made, and keeps the lock so that no new one is
/// made: only for a process about to exit.
fn remove_own_and_hold() -> MutexGuard<'static, Vec<PathBuf>> {
    let dirs = dirs();
    let prefix = own_prefix();
    let mut seen = HashSet::new();
    for dir in dirs.iter().filter(|d| seen.insert(*d)) {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                remove(&entry.path());
            }
        }
    }
    dirs
}

/// Cleans up and exits the process with `code`, after printing `message` (if any).
pub fn exit_now(code: i32, message: Option<&str>) -> ! {
    let _hold = remove_own_and_hold();
    if let Some(m) = message {
        use io::Write as _;
        let _ = writeln!(io::stderr(), "{m}");
    }
    std::process::exit(code)
}

/// On SIGINT, SIGTERM or SIGHUP: remove this run's temp entries, then exit with
/// 128 + the signal number, as a shell reports a process killed by it.
pub fn install_signal_handlers() -> io::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        exit_now(128 + sig, None);
                    }
                });
            }
            Err(e) => result = Err(e),
        }
    });
    result
}

/// Ends the run with an error once `limit` has passed (`--timeout`), cleaning up first.
pub fn set_deadline(limit: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        exit_now(
            1,
            Some(&format!(
                "error: the run took longer than --timeout {} s; stopped, no output was written",
                limit.as_secs_f64()
            )),
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_names() {
        assert_eq!(owner(".mcd-inject-123-456-abc"), Some((123, 456)));
        assert_eq!(owner(".mcd-inject-123-456-"), Some((123, 456)));
        assert_eq!(owner(".mcd-inject-123-abc"), None);
        assert_eq!(owner(".mcd-inject.lock"), None);
        assert_eq!(owner(".mcd-inject--1-x"), None);
        assert_eq!(owner(".mcd-inject-12a-1-x"), None);
        assert_eq!(owner(".tmpABC"), None);
        let own = format!("{}x", own_prefix());
        assert_eq!(owner(&own), Some((std::process::id(), pid_namespace())));
    }

    #[test]
    fn stale_entries_of_dead_processes_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited: its id is free (until reused, which a short
        // test does not see in practice).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let ns = pid_namespace();
        let stale_file = dir.path().join(format!("{PREFIX}{dead}-{ns}-file"));
        let stale_dir = dir.path().join(format!("{PREFIX}{dead}-{ns}-dir"));
        // Another pid namespace's entry, recent: its process cannot be checked from here.
        let foreign = dir.path().join(format!("{PREFIX}{dead}-{}-x", ns + 1));
        fs::write(&foreign, b"x").unwrap();
        // ... and one that has not changed for two days.
        let abandoned = dir.path().join(format!("{PREFIX}{dead}-{}-y", ns + 1));
        fs::File::create(&abandoned)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - 2 * FOREIGN_STALE)
            .unwrap();
        fs::write(&stale_file, b"x").unwrap();
        fs::create_dir(&stale_dir).unwrap();
        fs::write(stale_dir.join("inner"), b"x").unwrap();
        let live = dir.path().join(format!("{PREFIX}1-{ns}-init"));
        let mine = file_in(dir.path()).unwrap();
        fs::write(&live, b"x").unwrap();
        let other = dir.path().join("keep.json");
        fs::write(&other, b"x").unwrap();
        assert_eq!(sweep_stale(dir.path()), 0);
        assert!(!abandoned.exists());
        fs::write(&stale_file, b"x").unwrap();
        fs::create_dir(&stale_dir).unwrap();
        assert_eq!(sweep_stale(dir.path()), 2);
        assert!(!stale_file.exists() && !stale_dir.exists());
        assert!(live.exists() && other.exists() && mine.path().exists() && foreign.exists());
        let name = mine
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        assert_eq!(owner(&name), Some((std::process::id(), ns)));
    }
}
