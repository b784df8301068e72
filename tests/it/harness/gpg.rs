//! GnuPG keys and simple signing signatures for the signature tests, made with gpg
//! itself: keys of any usage and lifetime (also in the past, with
//! `--faked-system-time`), signing subkeys, revocations, and signed messages.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::run_ok;

/// A GnuPG home and a directory for exported keys, in a test's directory.
pub struct Gpg {
    pub home: PathBuf,
    pub keys: PathBuf,
}

impl Gpg {
    pub fn new(dir: &Path) -> Gpg {
        let home = dir.join("gnupg");
        fs::create_dir_all(&home).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
        }
        let keys = dir.join("keys");
        fs::create_dir_all(&keys).unwrap();
        Gpg { home, keys }
    }

    /// gpg on this home, in batch mode, with the keys' empty passphrase.
    fn command(&self) -> Command {
        let mut c = Command::new("gpg");
        c.env("GNUPGHOME", &self.home).args([
            "--batch",
            "--yes",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
        ]);
        c
    }

    pub fn gpg(&self, args: &[&str]) -> Output {
        run_ok(self.command().args(args))
    }

    /// Fingerprints of the key whose user ID is `name`: primary first, then subkeys.
    pub fn fingerprints(&self, name: &str) -> Vec<String> {
        let out = self.gpg(&[
            "--with-colons",
            "--list-keys",
            &format!("<{name}@example.com>"),
        ]);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("fpr:"))
            .map(|l| l.split(':').nth(9).unwrap().to_string())
            .collect()
    }

    /// A key `name` (made at `faked` time, when given), usage `usage`, expiring `expire`.
    pub fn key(&self, name: &str, usage: &str, expire: &str, faked: Option<&str>) -> String {
        self.key_of(name, "rsa2048", usage, expire, faked)
    }

    /// [`Gpg::key`] of algorithm `algo`, as gpg's `--quick-gen-key` names them
    /// (`ed25519`, `nistp256`, `secp256k1`, `brainpoolP256r1`, `rsa4096`, `dsa2048`).
    pub fn key_of(
        &self,
        name: &str,
        algo: &str,
        usage: &str,
        expire: &str,
        faked: Option<&str>,
    ) -> String {
        let uid = format!("{name} <{name}@example.com>");
        let mut args = vec![];
        if let Some(t) = faked {
            args.extend(["--faked-system-time", t]);
        }
        args.extend(["--quick-gen-key", &uid, algo, usage, expire]);
        self.gpg(&args);
        self.fingerprints(name)[0].clone()
    }

    pub fn add_signing_subkey(&self, fpr: &str, expire: &str, faked: Option<&str>) -> String {
        let mut args = vec![];
        if let Some(t) = faked {
            args.extend(["--faked-system-time", t]);
        }
        args.extend(["--quick-add-key", fpr, "rsa2048", "sign", expire]);
        self.gpg(&args);
        let all = self.gpg(&["--with-colons", "--list-keys", fpr]);
        String::from_utf8(all.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("fpr:"))
            .map(|l| l.split(':').nth(9).unwrap().to_string())
            .next_back()
            .unwrap()
    }

    /// Revokes key `fpr` with the revocation certificate gpg made with it.
    pub fn revoke_key(&self, fpr: &str) {
        let rev = self.home.join(format!("openpgp-revocs.d/{fpr}.rev"));
        let text = fs::read_to_string(&rev).unwrap();
        // gpg writes ":-----BEGIN" so that the file is not imported by accident.
        let cert = self.home.join("revoke.asc");
        fs::write(&cert, text.replace(":-----BEGIN", "-----BEGIN")).unwrap();
        self.gpg(&["--import", cert.to_str().unwrap()]);
    }

    /// Revokes the first subkey of `fpr`.
    pub fn revoke_first_subkey(&self, fpr: &str) {
        let mut child = self
            .command()
            .args(["--command-fd", "0", "--status-fd", "2", "--edit-key", fpr])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"key 1\nrevkey\ny\n0\n\ny\nsave\n")
            .unwrap();
        assert!(child.wait().unwrap().success());
    }

    /// The armored public key `fpr` (with its revocations), as a file.
    pub fn export(&self, fpr: &str, file: &str) -> PathBuf {
        let out = self.gpg(&["--armor", "--export", fpr]);
        let p = self.keys.join(file);
        fs::write(&p, out.stdout).unwrap();
        p
    }

    /// Signs `payload` with `signers` (one `-u` each), plus `extra` gpg options.
    pub fn sign(&self, payload: &[u8], signers: &[&str], extra: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir_in(&self.keys).unwrap();
        let input = dir.path().join("payload");
        let output = dir.path().join("signature");
        fs::write(&input, payload).unwrap();
        let mut args: Vec<&str> = extra.to_vec();
        for s in signers {
            args.extend(["-u", s]);
        }
        args.extend([
            "--sign",
            "-o",
            output.to_str().unwrap(),
            input.to_str().unwrap(),
        ]);
        self.gpg(&args);
        fs::read(&output).unwrap()
    }
}

/// A key `name` that signs and never expires, in a GnuPG home of its own under `dir`:
/// (home, fingerprint, armored public key file).
pub fn signing_key(dir: &Path, name: &str) -> (PathBuf, String, PathBuf) {
    let g = Gpg::new(&dir.join(format!("gpg-{name}")));
    let fpr = g.key(name, "sign", "never", None);
    let public = g.export(&fpr, &format!("{name}.asc"));
    (g.home, fpr, public)
}
