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
//!
//! A damaged cache heals itself online: a cached blob that fails its digest is removed
//! and fetched again, and an index file that cannot be parsed is rebuilt empty, each
//! with a warning. An `--offline` run cannot repair it and fails with a message that
//! says how to.

use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use oci_spec::image::{Descriptor, ImageIndex, MediaType};
use tempfile::NamedTempFile;

use crate::image::{Digest, MAX_METADATA_BYTES};
use crate::io::read_at_most;
use crate::warnings::{Warning, Warnings};

/// The annotation that names an image in an OCI layout index.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
const LOCK_FILE: &str = ".mcd-inject.lock";
const INDEX: &str = "index.json";
/// References whose images may be incomplete here (same format as `index.json`).
const PARTIAL_REFS: &str = "mcd-inject-refs.json";

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
    /// Offline runs report damage instead of repairing it.
    offline: bool,
    /// Where repairs are reported.
    warnings: Warnings,
}

/// How an offline run is told to repair the cache.
const REPAIR_HINT: &str = "run the same command without --offline, or \
    `mcd-inject pull --image IMAGE`, to repair the cache";

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

    /// Opens a cache directory for an online run, creating the layout when it does
    /// not exist yet.
    #[cfg(test)]
    pub fn open(root: &Path) -> Result<Self> {
        Self::open_with(root, false, &Warnings::default())
    }

    /// Opens a cache directory for an offline run (`offline`: damage is reported, not
    /// repaired) or an online one; repairs are reported in `warnings`.
    pub fn open_with(root: &Path, offline: bool, warnings: &Warnings) -> Result<Self> {
        let cache = Cache {
            root: root.to_path_buf(),
            offline,
            warnings: warnings.clone(),
        };
        let blobs = root.join("blobs").join("sha256");
        fs::create_dir_all(&blobs)
            .with_context(|| format!("creating the cache {}", root.display()))?;
        let _lock = cache.lock()?;
        if !root.join("oci-layout").exists() {
            cache.write_atomic("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        if !root.join(INDEX).exists() {
            cache.write_index(INDEX, &empty_index())?;
        }
        // Temp files of runs that were killed (their process is gone).
        crate::io::tempfiles::sweep_stale(root);
        if !offline {
            // Heal damaged index files now, under the lock (warnings say so).
            cache.read_index(INDEX)?;
            cache.read_index(PARTIAL_REFS)?;
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

    /// Reads a small cached blob whole and checks its digest. A damaged one is removed:
    /// online it is then reported missing (to be fetched again), offline it is an error.
    pub fn read_metadata(&self, digest: &Digest) -> Result<Option<Vec<u8>>> {
        let Some(f) = self.open_blob(digest)? else {
            return Ok(None);
        };
        let Some(bytes) = read_at_most(f, MAX_METADATA_BYTES)
            .with_context(|| format!("reading cached blob {digest}"))?
        else {
            self.damaged(digest, "it is larger than any manifest or config")?;
            return Ok(None);
        };
        let actual = Digest::of(&bytes);
        if &actual != digest {
            self.damaged(digest, &format!("its content hashes to {actual}"))?;
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    /// Opens a cached blob and checks its size and digest by reading it whole; the
    /// file comes back rewound, checked (its content cannot change under the open
    /// handle: blobs only ever enter the cache by rename). A damaged blob is removed:
    /// online it is reported missing (`None`, to be fetched again), offline it is an
    /// error that says how to repair the cache.
    pub fn open_verified(&self, digest: &Digest, size: u64) -> Result<Option<File>> {
        let Some(mut f) = self.open_blob(digest)? else {
            return Ok(None);
        };
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        let mut buf = vec![0; 1 << 20];
        let mut len = 0u64;
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).with_context(|| format!("reading cached blob {digest}")),
            };
            sha2::Digest::update(&mut hasher, &buf[..n]);
            len += n as u64;
        }
        if len != size {
            self.damaged(
                digest,
                &format!("it has {len} bytes, its descriptor says {size}"),
            )?;
            return Ok(None);
        }
        let actual = Digest::from_hasher(hasher);
        if &actual != digest {
            self.damaged(digest, &format!("its content hashes to {actual}"))?;
            return Ok(None);
        }
        f.seek(io::SeekFrom::Start(0))
            .with_context(|| format!("reading cached blob {digest}"))?;
        Ok(Some(f))
    }

    /// Deals with a cached blob that failed verification: removed; a warning online
    /// (the caller fetches it again), an error that says how to repair offline.
    fn damaged(&self, digest: &Digest, why: &str) -> Result<()> {
        let path = self.blob_path(digest);
        let _ = fs::remove_file(&path);
        if self.offline {
            bail!(
                "cached blob {digest} in {} was damaged ({why}) and has been removed; \
                 {REPAIR_HINT}",
                self.root.display()
            );
        }
        self.warnings.warn(Warning::CacheBlobDamaged {
            digest: digest.to_string(),
            cache: self.root.clone(),
            why: why.to_string(),
        });
        Ok(())
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
        crate::io::tempfiles::file_in(&self.root)
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
            let Some(m) = index
                .manifests()
                .iter()
                .find(|m| ref_name(m) == Some(reference))
            else {
                continue;
            };
            let digest = m
                .digest()
                .to_string()
                .parse()
                .with_context(|| format!("cache {file}: entry {reference}"))?;
            log::info!("cache entry: {reference} -> {digest} ({file})");
            return Ok(Some(CachedRef {
                media_type: m.media_type().to_string(),
                digest,
                size: m.size(),
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
        let digest: oci_spec::image::Digest = desc
            .digest
            .to_string()
            .parse()
            .with_context(|| format!("cache {file}: entry {reference}"))?;
        let mut entry =
            Descriptor::new(MediaType::from(desc.media_type.as_str()), desc.size, digest);
        entry.set_annotations(Some([(REF_NAME.to_string(), reference.to_string())].into()));
        let mut manifests = index.manifests().clone();
        manifests.retain(|m| ref_name(m) != Some(reference));
        manifests.push(entry);
        index.set_manifests(manifests);
        self.write_index(file, &index)
    }

    /// Reads an index file (an OCI image index); a damaged one is rebuilt empty online,
    /// and an error offline.
    fn read_index(&self, file: &str) -> Result<ImageIndex> {
        let path = self.root.join(file);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(empty_index()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        match serde_json::from_slice::<ImageIndex>(&bytes) {
            Ok(index) => Ok(index),
            Err(e) if self.offline => bail!(
                "the cache index {} is damaged (not an OCI image index: {e}); {REPAIR_HINT} \
                 (it is rebuilt, and images pulled before need pulling again)",
                path.display()
            ),
            Err(why) => {
                self.warnings.warn(Warning::CacheIndexRebuilt {
                    index: path.clone(),
                    why: why.to_string(),
                });
                let empty = empty_index();
                self.write_index(file, &empty)?;
                Ok(empty)
            }
        }
    }

    fn write_index(&self, file: &str, index: &ImageIndex) -> Result<()> {
        self.write_atomic(file, &serde_json::to_vec_pretty(index)?)
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

/// The reference an index entry is annotated with.
fn ref_name(entry: &Descriptor) -> Option<&str> {
    entry
        .annotations()
        .as_ref()?
        .get(REF_NAME)
        .map(String::as_str)
}

fn empty_index() -> ImageIndex {
    let mut index = ImageIndex::default();
    index.set_media_type(Some(MediaType::ImageIndex));
    index
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
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(crate::io::tempfiles::PREFIX)
            })
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn damaged_index_files_are_rebuilt_online_and_reported_offline() {
        let dir = tempfile::tempdir().unwrap();
        Cache::open(dir.path()).unwrap();
        for garbage in [
            &b"{ not json"[..],
            br#"{"manifests": 3}"#,
            br#"{"manifests": [{}]}"#,
            br#"{"schemaVersion": 2, "manifests": [{"mediaType": "a/b", "size": 1, "digest": "sha256:zz"}]}"#,
        ] {
            fs::write(dir.path().join(INDEX), garbage).unwrap();
            let offline = Cache::open_with(dir.path(), true, &Warnings::default()).unwrap();
            let e = offline.lookup("h/a:1").unwrap_err();
            assert!(format!("{e:#}").contains("without --offline"), "{e:#}");
            assert_eq!(fs::read(dir.path().join(INDEX)).unwrap(), garbage);
            let online = Cache::open_with(dir.path(), false, &Warnings::default()).unwrap();
            assert_eq!(online.lookup("h/a:1").unwrap(), None);
            assert!(online.read_index(INDEX).unwrap().manifests().is_empty());
            let healed: serde_json::Value =
                serde_json::from_slice(&fs::read(dir.path().join(INDEX)).unwrap()).unwrap();
            assert_eq!(
                healed,
                serde_json::json!({
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": []
                })
            );
        }
    }

    #[test]
    fn damaged_blobs_are_removed_and_missing_online_an_error_offline() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let d = Digest::of(b"hello");
        for offline in [false, true] {
            cache.put_bytes(&d, b"hello").unwrap();
            fs::write(cache.blob_path(&d), b"hellO").unwrap();
            let c = Cache::open_with(dir.path(), offline, &Warnings::default()).unwrap();
            let got = c.open_verified(&d, 5);
            assert_eq!(got.is_err(), offline);
            assert!(!cache.has_blob(&d));
            cache.put_bytes(&d, b"hello").unwrap();
            fs::write(cache.blob_path(&d), b"hell").unwrap();
            assert_eq!(c.read_metadata(&d).is_err(), offline);
            assert!(!cache.has_blob(&d));
        }
        cache.put_bytes(&d, b"hello").unwrap();
        let mut f = cache.open_verified(&d, 5).unwrap().unwrap();
        let mut back = String::new();
        f.read_to_string(&mut back).unwrap();
        assert_eq!(back, "hello");
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
        assert_eq!(partial.manifests().len(), 2);
        assert!(dir.path().join("oci-layout").is_file());
        // Only complete images are listed where skopeo and umoci look.
        assert!(cache.read_index(INDEX).unwrap().manifests().is_empty());
        cache.publish("h:5000/b:1", &desc(b"y")).unwrap();
        assert_eq!(cache.lookup("h:5000/b:1").unwrap(), Some(desc(b"y")));
        // The entry is an OCI descriptor, as other tools read it.
        let index: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.path().join(INDEX)).unwrap()).unwrap();
        assert_eq!(
            index["manifests"],
            serde_json::json!([{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": Digest::of(b"y").to_string(),
                "size": 1,
                "annotations": { REF_NAME: "h:5000/b:1" }
            }])
        );
    }
}
