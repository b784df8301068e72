//! The local image cache: an OCI image layout that skopeo and umoci can read.
//!
//! Blobs are content-addressed under `blobs/sha256/`. A blob enters the cache only
//! once its digest has been checked: it is written to a temp file in the cache
//! directory and renamed into place, so a reader never sees a partial blob and two runs
//! that fetch the same blob at once both succeed.
//!
//! A reference resolved by a run that fetched only the layers it needed is recorded in
//! `mcd-inject-refs.json`; `pull` fetches every layer and then lists the reference in
//! `index.json` too. So `index.json` only names complete images, and the directory is
//! always a valid layout for skopeo and umoci. Entries are annotated with the full
//! reference (`host/repo:tag` or `host/repo@sha256:...`); updates of both files are
//! serialised by a lock file.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use tempfile::NamedTempFile;

use crate::image::{Digest, MAX_METADATA_BYTES};

/// The annotation that names an image in an OCI layout index.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
const LOCK_FILE: &str = ".mcd-inject.lock";
const INDEX: &str = "index.json";
/// References whose images may be incomplete here (same format as `index.json`).
const PARTIAL_REFS: &str = "mcd-inject-refs.json";
const TEMP_PREFIX: &str = ".partial-";

/// A descriptor as the cache index records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedRef {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
}

/// An OCI image layout used as a cache.
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The default cache directory: `$XDG_CACHE_HOME/mcd-inject`, else
    /// `~/.cache/mcd-inject`.
    pub fn default_dir() -> Result<PathBuf> {
        if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(d).join("mcd-inject"));
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .ok_or_else(|| anyhow!("neither XDG_CACHE_HOME nor HOME is set; pass --cache-dir"))?;
        Ok(PathBuf::from(home).join(".cache").join("mcd-inject"))
    }

    /// Opens a cache directory, creating the layout when it does not exist yet.
    pub fn open(root: &Path) -> Result<Self> {
        let cache = Cache {
            root: root.to_path_buf(),
        };
        let blobs = root.join("blobs").join("sha256");
        fs::create_dir_all(&blobs)
            .with_context(|| format!("creating the cache {}", root.display()))?;
        let _lock = cache.lock()?;
        if !root.join("oci-layout").exists() {
            cache.write_atomic("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        if !root.join("index.json").exists() {
            cache.write_atomic("index.json", &empty_index())?;
        }
        Ok(cache)
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a blob lives (whether or not it is there).
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join(digest.layout_path())
    }

    pub fn has_blob(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// Opens a cached blob; `None` when it is not cached.
    pub fn open_blob(&self, digest: &Digest) -> Result<Option<File>> {
        let path = self.blob_path(digest);
        match File::open(&path) {
            Ok(f) => {
                log::info!("cache hit: {}", path.display());
                Ok(Some(f))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                log::debug!("cache miss: {digest}");
                Ok(None)
            }
            Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
        }
    }

    /// Reads a small cached blob whole and checks its digest; a corrupt one is removed.
    pub fn read_metadata(&self, digest: &Digest) -> Result<Option<Vec<u8>>> {
        let Some(f) = self.open_blob(digest)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        f.take(MAX_METADATA_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading cached blob {digest}"))?;
        if bytes.len() as u64 > MAX_METADATA_BYTES || &Digest::of(&bytes) != digest {
            // Someone altered the cache: forget the blob, it will be fetched again.
            let _ = fs::remove_file(self.blob_path(digest));
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    /// Stores a whole blob after checking its digest.
    pub fn put_bytes(&self, digest: &Digest, bytes: &[u8]) -> Result<()> {
        let actual = Digest::of(bytes);
        if &actual != digest {
            bail!("refusing to cache blob {digest}: its content hashes to {actual}");
        }
        if self.has_blob(digest) {
            return Ok(());
        }
        let mut tmp = self.temp_blob()?;
        tmp.write_all(bytes)
            .with_context(|| format!("writing to the cache {}", self.root.display()))?;
        self.commit_blob(tmp, digest)
    }

    /// A temp file for a blob being fetched, in the cache so that the commit is a rename.
    pub fn temp_blob(&self) -> Result<NamedTempFile> {
        tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&self.root)
            .with_context(|| format!("creating a temp file in {}", self.root.display()))
    }

    /// Moves a complete temp file into place. The caller has checked its digest.
    /// There is no fsync: every read of a cached blob checks its digest again, so a
    /// blob damaged by a crash is caught, and waiting for the disk would cost more
    /// than the download.
    pub fn commit_blob(&self, tmp: NamedTempFile, digest: &Digest) -> Result<()> {
        let path = self.blob_path(digest);
        tmp.persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("storing blob {digest} in the cache"))?;
        log::info!("cache store: {}", path.display());
        Ok(())
    }

    /// The descriptor a full reference (`host/repo:tag`) names in the cache.
    pub fn lookup(&self, reference: &str) -> Result<Option<CachedRef>> {
        for file in [INDEX, PARTIAL_REFS] {
            let index = self.read_index(file)?;
            let found = index["manifests"].as_array().and_then(|ms| {
                ms.iter()
                    .find(|m| m["annotations"][REF_NAME].as_str() == Some(reference))
            });
            let Some(m) = found else {
                continue;
            };
            let digest = m["digest"]
                .as_str()
                .ok_or_else(|| anyhow!("cache {file}: entry {reference} has no digest"))?
                .parse()
                .with_context(|| format!("cache {file}: entry {reference}"))?;
            log::info!("cache entry: {reference} -> {digest} ({file})");
            return Ok(Some(CachedRef {
                media_type: m["mediaType"].as_str().unwrap_or_default().to_string(),
                digest,
                size: m["size"].as_u64().unwrap_or_default(),
            }));
        }
        Ok(None)
    }

    /// Records that `reference` names `desc`, whose layers may not all be here.
    pub fn tag(&self, reference: &str, desc: &CachedRef) -> Result<()> {
        self.record(PARTIAL_REFS, reference, desc)
    }

    /// Lists `reference` in `index.json`: every blob of its image is in the cache.
    pub fn publish(&self, reference: &str, desc: &CachedRef) -> Result<()> {
        self.record(INDEX, reference, desc)
    }

    fn record(&self, file: &str, reference: &str, desc: &CachedRef) -> Result<()> {
        let _lock = self.lock()?;
        let mut index = self.read_index(file)?;
        let manifests = index["manifests"]
            .as_array_mut()
            .ok_or_else(|| anyhow!("cache {file} has no manifests list"))?;
        manifests.retain(|m| m["annotations"][REF_NAME].as_str() != Some(reference));
        manifests.push(json!({
            "mediaType": desc.media_type,
            "digest": desc.digest.to_string(),
            "size": desc.size,
            "annotations": { REF_NAME: reference },
        }));
        let bytes = serde_json::to_vec_pretty(&index)?;
        self.write_atomic(file, &bytes)
    }

    fn read_index(&self, file: &str) -> Result<Value> {
        let path = self.root.join(file);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => empty_index(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let v: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        if !v["manifests"].is_array() {
            bail!("{} is not an OCI image index", path.display());
        }
        Ok(v)
    }

    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let mut tmp = self.temp_blob()?;
        tmp.write_all(bytes)?;
        tmp.persist(self.root.join(name))
            .map_err(|e| e.error)
            .with_context(|| format!("writing {name} in {}", self.root.display()))?;
        Ok(())
    }

    /// An exclusive lock on the cache index, held until the returned file is dropped.
    fn lock(&self) -> Result<File> {
        let path = self.root.join(LOCK_FILE);
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(f)
    }
}

fn empty_index() -> Vec<u8> {
    br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_enter_only_when_their_digest_matches() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let d = Digest::of(b"hello");
        assert!(cache.put_bytes(&d, b"hellO").is_err());
        assert!(!cache.has_blob(&d));
        cache.put_bytes(&d, b"hello").unwrap();
        assert_eq!(cache.read_metadata(&d).unwrap().unwrap(), b"hello");
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(TEMP_PREFIX))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn tags_replace_and_keep_other_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let desc = |b: &[u8]| CachedRef {
            media_type: "application/vnd.oci.image.manifest.v1+json".into(),
            digest: Digest::of(b),
            size: b.len() as u64,
        };
        cache.tag("h:5000/a:1", &desc(b"x")).unwrap();
        cache.tag("h:5000/b:1", &desc(b"y")).unwrap();
        cache.tag("h:5000/a:1", &desc(b"z")).unwrap();
        assert_eq!(cache.lookup("h:5000/a:1").unwrap(), Some(desc(b"z")));
        assert_eq!(cache.lookup("h:5000/b:1").unwrap(), Some(desc(b"y")));
        assert_eq!(cache.lookup("h:5000/c:1").unwrap(), None);
        let partial = cache.read_index(PARTIAL_REFS).unwrap();
        assert_eq!(partial["manifests"].as_array().unwrap().len(), 2);
        assert!(dir.path().join("oci-layout").is_file());
        // Only complete images are listed where skopeo and umoci look.
        assert_eq!(cache.read_index(INDEX).unwrap()["manifests"], json!([]));
        cache.publish("h:5000/b:1", &desc(b"y")).unwrap();
        assert_eq!(cache.lookup("h:5000/b:1").unwrap(), Some(desc(b"y")));
        assert_eq!(
            cache.read_index(INDEX).unwrap()["manifests"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}
