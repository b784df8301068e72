//! Images from registries (`docker://`), through the local cache. The only module that
//! talks to registries; whether an image may be used is [`crate::trust`]'s to decide.
//!
//! [`crate::transport::open`] resolves a `docker://` reference to one image manifest
//! (following an index by platform), verifies every document against its digest, and
//! keeps manifests and configs in the local cache (an OCI layout). Layers are fetched
//! only when the layer scanner asks for them, streamed to it while they are written to
//! the cache; they enter the cache only once their digest has been checked. With
//! `offline` the network is never used.

pub(crate) mod auth;
pub(crate) mod cache;
mod client;
pub(crate) mod mirrors;
pub(crate) mod progress;
mod verify;

use std::io::{self, Read};
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use oci_spec::image::ImageManifest;

use crate::image::oci::{
    check_blob, choose_platform, descriptor_digest, layers_of, parse_document, ConfigFacts,
    Document,
};
use crate::image::{
    BlobSource, Digest, DockerRef, Image, ImageInfo, ImageRef, LayerInfo, Platform,
};
use crate::registry::cache::{Cache, CachedRef};
use crate::trust::{self, Policy, PolicyRejected};
use crate::warnings::{Warning, Warnings};
pub use auth::{AuthFiles, Credentials};
#[doc(hidden)]
pub use client::parse_challenge;
use client::Client;
pub use client::RetryPolicy;
pub use mirrors::{Endpoint, Mirrors};
pub use progress::ProgressMode;

const MAX_INDEX_DEPTH: usize = 8;

/// How to reach registries and where to cache what they send.
#[derive(Clone, Debug)]
pub struct RegistryOptions {
    /// Where credentials are looked for.
    pub auth_files: AuthFiles,
    /// Verify TLS certificates (and refuse plain http). On by default, for every host.
    pub tls_verify: bool,
    /// Extra CA certificates (`*.crt`).
    pub cert_dir: Option<PathBuf>,
    /// The cache directory; `None` for the default (`$XDG_CACHE_HOME/mcd-inject`, else `~/.cache/mcd-inject`).
    pub cache_dir: Option<PathBuf>,
    /// Use only the cache.
    pub offline: bool,
    /// Progress on stderr.
    pub progress: ProgressMode,
    /// Retries and timeouts.
    pub retry: RetryPolicy,
    /// Mirrors to try before (or instead of) the source ([`Mirrors`]).
    pub mirrors: Mirrors,
    /// The signature policy images must satisfy ([`Policy`]); `None` accepts anything.
    pub policy: Option<Policy>,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            auth_files: AuthFiles::default(),
            tls_verify: true,
            cert_dir: None,
            cache_dir: None,
            offline: false,
            progress: ProgressMode::Quiet,
            retry: RetryPolicy::default(),
            mirrors: Mirrors::default(),
            policy: None,
        }
    }
}

impl RegistryOptions {
    fn cache(&self, warnings: &Warnings) -> Result<Cache> {
        let dir = match &self.cache_dir {
            Some(d) => d.clone(),
            None => Cache::default_dir()?,
        };
        Cache::open_with(&dir, self.offline, warnings)
    }
}

/// The name a reference gets in the cache index: `host/repo:tag` or `host/repo@digest`.
fn cache_name(r: &DockerRef) -> String {
    match (&r.digest, &r.tag) {
        (Some(d), _) => format!("{}/{}@{d}", r.registry, r.repository),
        (None, Some(t)) => format!("{}/{}:{t}", r.registry, r.repository),
        (None, None) => format!("{}/{}:latest", r.registry, r.repository),
    }
}

/// Where the documents of one image come from: the cache, then (online) the registry.
struct Fetcher {
    reference: DockerRef,
    cache: Cache,
    client: Option<Client>,
}

impl Fetcher {
    fn offline_error(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{what} of {} is not in the cache {} and --offline forbids the network; \
             run `mcd-inject pull --image {}` while online first",
            self.reference,
            self.cache.root().display(),
            self.reference
        )
    }

    fn client(&self, what: &str) -> Result<&Client> {
        self.client.as_ref().ok_or_else(|| self.offline_error(what))
    }

    /// The top document the reference names: its digest and bytes.
    fn top(&self) -> Result<(Digest, Vec<u8>)> {
        let r = &self.reference;
        if let Some(d) = &r.digest {
            return self.by_digest(d, None, &format!("manifest {d}"));
        }
        let tag = r.tag.as_deref().unwrap_or("latest");
        let what = format!("tag {tag:?}");
        match &self.client {
            None => {
                let cached = self
                    .cache
                    .lookup(&cache_name(r))?
                    .ok_or_else(|| self.offline_error(&what))?;
                self.by_digest(&cached.digest, Some(cached.size), &what)
            }
            Some(c) => {
                let (bytes, claimed) = c.manifest(tag, &what)?;
                let digest = Digest::of(&bytes);
                if let Some(claimed) = claimed {
                    if claimed != digest.to_string() {
                        bail!("{r}: the registry says the manifest is {claimed}, its content hashes to {digest}");
                    }
                }
                self.cache.put_bytes(&digest, &bytes)?;
                Ok((digest, bytes))
            }
        }
    }

    /// A manifest, index or config by digest, verified; cached ones are not fetched.
    fn by_digest(
        &self,
        digest: &Digest,
        size: Option<u64>,
        what: &str,
    ) -> Result<(Digest, Vec<u8>)> {
        let where_ = self.reference.to_string();
        if let Some(bytes) = self.cache.read_metadata(digest)? {
            check_blob(&bytes, digest, size, &where_)?;
            return Ok((digest.clone(), bytes));
        }
        let client = self.client(what)?;
        let bytes = if what.starts_with("config") {
            client.small_blob(digest)?
        } else {
            client.manifest(&digest.to_string(), what)?.0
        };
        check_blob(&bytes, digest, size, &where_)
            .with_context(|| format!("{what} does not match the digest that names it"))?;
        self.cache.put_bytes(digest, &bytes)?;
        Ok((digest.clone(), bytes))
    }
}

/// Sigstore attachments come from the endpoint that served the image, and are kept in the
/// cache (the manifest under `HOST/REPO:sha256-HEX.sig` of the source reference, among
/// the partial references) for `--offline` runs, which read them from there.
impl trust::AttachmentSource for Fetcher {
    fn tagged_manifest(&self, tag: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let what = format!("sigstore attachments {tag:?}");
        let r = &self.reference;
        let name = format!("{}/{}:{tag}", r.registry, r.repository);
        let Some(client) = &self.client else {
            let cached = self
                .cache
                .lookup(&name)?
                .ok_or_else(|| self.offline_error(&what))?;
            let (_, bytes) = self.by_digest(&cached.digest, Some(cached.size), &what)?;
            return Ok(Some((bytes, Some(cached.media_type))));
        };
        let got = client.manifest_if_any(tag, &what)?;
        if let Some((bytes, media_type)) = &got {
            let digest = Digest::of(bytes);
            self.cache.put_bytes(&digest, bytes)?;
            let entry = CachedRef {
                media_type: media_type.clone().unwrap_or_default(),
                digest,
                size: bytes.len() as u64,
            };
            self.cache.tag(&name, &entry)?;
        }
        Ok(got)
    }

    fn blob(&self, digest: &Digest) -> Result<Vec<u8>> {
        if let Some(bytes) = self.cache.read_metadata(digest)? {
            return Ok(bytes);
        }
        let what = format!("sigstore signature {digest}");
        let bytes = self.client(&what)?.small_blob(digest)?;
        if Digest::of(&bytes) == *digest {
            self.cache.put_bytes(digest, &bytes)?;
        }
        Ok(bytes)
    }
}

/// The media type to record for a top-level document.
fn media_type_of(bytes: &[u8], doc: &Document) -> String {
    let declared = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["mediaType"].as_str().map(str::to_string));
    declared.unwrap_or_else(|| {
        match doc {
            Document::Index(_) => "application/vnd.oci.image.index.v1+json",
            Document::Manifest(_) => "application/vnd.oci.image.manifest.v1+json",
        }
        .to_string()
    })
}

/// Opens an image from a registry (or, offline, from the cache). With mirrors, the
/// endpoints [`Mirrors::endpoints`] gives are tried in order; the first that serves the
/// manifest and config serves the layers too. The error names every endpoint tried.
pub(crate) fn open(
    reference: &ImageRef,
    docker: &DockerRef,
    platform: &Platform,
    ropts: &RegistryOptions,
    warnings: &Warnings,
) -> Result<Image> {
    if ropts.offline {
        let fetcher = Fetcher {
            reference: docker.clone(),
            cache: ropts.cache(warnings)?,
            client: None,
        };
        return open_with(
            reference, docker, docker, platform, ropts, fetcher, None, None,
        );
    }
    let endpoints = ropts.mirrors.endpoints(docker)?;
    let mut failures = Vec::new();
    for (i, ep) in endpoints.iter().enumerate() {
        let attempt = endpoint_client(ep, ropts).and_then(|client| {
            let fetcher = Fetcher {
                reference: docker.clone(),
                cache: ropts.cache(warnings)?,
                client: Some(client),
            };
            let served_by = (endpoints.len() > 1 || ep.mirror).then(|| ep.to_string());
            // Digest pulls: a layer this endpoint lacks may come from the ones after it.
            let fallbacks = (docker.digest.is_some() && i + 1 < endpoints.len())
                .then(|| Fallbacks::new(ep, &endpoints[i + 1..], ropts, warnings));
            // The registry and repository that serve the image: where its signatures
            // are looked up.
            let physical = DockerRef {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                ..docker.clone()
            };
            open_with(
                reference, docker, &physical, platform, ropts, fetcher, served_by, fallbacks,
            )
        });
        match attempt {
            Ok(img) => {
                if !failures.is_empty() {
                    warnings.warn(Warning::MirrorFallback {
                        object: docker.to_string(),
                        served_by: ep.to_string(),
                        failed: failures,
                    });
                }
                if ropts.progress != ProgressMode::Quiet && img.info.served_by.is_some() {
                    eprintln!(
                        "{docker}: served by {}{}",
                        ep,
                        if ep.mirror { " (mirror)" } else { " (source)" }
                    );
                }
                return Ok(img);
            }
            // Without mirrors, the source's own error; a policy refusal is no endpoint's.
            Err(e) if endpoints.len() == 1 && !ep.mirror => return Err(e),
            Err(e) if e.downcast_ref::<PolicyRejected>().is_some() => return Err(e),
            Err(e) => failures.push(format!("{ep}: {e:#}")),
        }
    }
    bail!(
        "{docker}: no mirror or source could serve it; tried, in order:\n  {}",
        failures.join("\n  ")
    )
}

/// A client for one endpoint: its own credentials and TLS settings.
fn endpoint_client(ep: &Endpoint, ropts: &RegistryOptions) -> Result<Client> {
    let creds = ropts.auth_files.find(&ep.registry, &ep.repository)?;
    if ep.insecure {
        let mut o = ropts.clone();
        o.tls_verify = false;
        Client::new(&ep.registry, &ep.repository, &o, creds)
    } else {
        Client::new(&ep.registry, &ep.repository, ropts, creds)
    }
}

/// Reads and verifies the manifest and config through one fetcher.
#[allow(clippy::too_many_arguments)]
fn open_with(
    reference: &ImageRef,
    docker: &DockerRef,
    physical: &DockerRef,
    platform: &Platform,
    ropts: &RegistryOptions,
    fetcher: Fetcher,
    served_by: Option<String>,
    fallbacks: Option<Fallbacks>,
) -> Result<Image> {
    let (top_digest, top_bytes) = fetcher.top()?;
    let what = docker.to_string();
    let top_doc = parse_document(&top_bytes, &what)?;
    let top_entry = CachedRef {
        media_type: media_type_of(&top_bytes, &top_doc),
        digest: top_digest.clone(),
        size: top_bytes.len() as u64,
    };
    let (manifest_digest, manifest, manifest_bytes) =
        resolve(&fetcher, top_digest.clone(), top_doc, top_bytes, platform)?;
    // The policy is checked on the image manifest of the platform, with the signatures
    // of its digest, before anything else of the image is read: as containers/image
    // copies one instance of a list (copy.go, `copySingleImage` on the instance
    // `ChooseInstance` picks), a list's own signatures do not vouch for its instances.
    if let Some(p) = &ropts.policy {
        let judged = trust::Judged {
            logical: docker,
            physical,
            digest: &manifest_digest,
            manifest: &manifest_bytes,
            offline: ropts.offline,
        };
        p.check_with(&judged, &fetcher)?;
    }
    let (config_digest, config_bytes) = fetcher.by_digest(
        &descriptor_digest(manifest.config())?,
        Some(manifest.config().size()),
        "config",
    )?;
    let facts: ConfigFacts = serde_json::from_slice(&config_bytes)
        .with_context(|| format!("{what}: malformed image config {config_digest}"))?;
    let layers = layers_of(&manifest)?;
    facts.check_layer_count(
        layers.len(),
        &format!("{what}: image config {config_digest}"),
    )?;
    if !ropts.offline {
        fetcher.cache.tag(&cache_name(docker), &top_entry)?;
    }
    let info = ImageInfo {
        reference: reference.to_string(),
        name: None,
        manifest_digest: Some(manifest_digest),
        tag_digest: Some(top_digest),
        config_digest,
        platform: facts.checked_platform(platform, &what)?,
        layers,
        labels: facts.labels(),
        served_by,
    };
    Ok(Image::new(
        info,
        Box::new(RegistrySource { fetcher, fallbacks }),
    ))
}

/// Follows indexes down to the image manifest for the requested platform: its digest,
/// parsed, and its bytes.
fn resolve(
    fetcher: &Fetcher,
    mut digest: Digest,
    mut doc: Document,
    mut bytes: Vec<u8>,
    platform: &Platform,
) -> Result<(Digest, ImageManifest, Vec<u8>)> {
    let what = fetcher.reference.to_string();
    for _ in 0..MAX_INDEX_DEPTH {
        match doc {
            Document::Manifest(m) => return Ok((digest, *m, bytes)),
            Document::Index(idx) => {
                let desc = choose_platform(
                    idx.manifests(),
                    platform,
                    &format!("{what}: index {digest}"),
                )?;
                let d = descriptor_digest(desc)?;
                let (d, b) = fetcher.by_digest(&d, Some(desc.size()), &format!("manifest {d}"))?;
                doc = parse_document(&b, &format!("{what}: {d}"))?;
                digest = d;
                bytes = b;
            }
        }
    }
    bail!("{what}: indexes nested more than {MAX_INDEX_DEPTH} deep")
}

/// Layers from the cache, else from the registry (teed into the cache); with mirrors,
/// a layer the serving endpoint cannot give is asked of the endpoints after it.
struct RegistrySource {
    fetcher: Fetcher,
    fallbacks: Option<Fallbacks>,
}

/// The endpoints after the one that served an image's manifest, with their clients made
/// when first needed.
struct Fallbacks {
    served_by: String,
    endpoints: Vec<Endpoint>,
    clients: Vec<std::cell::OnceCell<Client>>,
    opts: RegistryOptions,
    warnings: Warnings,
}

impl Fallbacks {
    fn new(
        ep: &Endpoint,
        rest: &[Endpoint],
        opts: &RegistryOptions,
        warnings: &Warnings,
    ) -> Fallbacks {
        Fallbacks {
            served_by: ep.to_string(),
            endpoints: rest.to_vec(),
            clients: rest.iter().map(|_| std::cell::OnceCell::new()).collect(),
            opts: opts.clone(),
            warnings: warnings.clone(),
        }
    }
}

impl BlobSource for RegistrySource {
    fn verifies_blobs(&self) -> bool {
        // Every reader it hands out is a VerifyingReader, or a cached file checked whole.
        true
    }

    fn open_layer(&self, layer: &LayerInfo) -> Result<Box<dyn Read + '_>> {
        let f = &self.fetcher;
        // A cached layer is checked whole before it is used, so that a damaged one is
        // fetched again (online) or reported with how to repair it (offline), rather
        // than failing the run half-way through its decompression.
        if let Some(file) = f.cache.open_verified(&layer.digest, layer.size)? {
            return Ok(Box::new(file));
        }
        let client = f.client(&format!("layer {}", layer.digest))?;
        let err = match client.blob_stream(&layer.digest, layer.size, &f.cache) {
            Ok(stream) => return Ok(Box::new(stream)),
            Err(e) => e,
        };
        let Some(fb) = &self.fallbacks else {
            return Err(err);
        };
        let mut tried = vec![format!("{}: {err:#}", fb.served_by)];
        for (ep, cell) in fb.endpoints.iter().zip(&fb.clients) {
            if cell.get().is_none() {
                match endpoint_client(ep, &fb.opts) {
                    Ok(c) => {
                        let _ = cell.set(c);
                    }
                    Err(e) => {
                        tried.push(format!("{ep}: {e:#}"));
                        continue;
                    }
                }
            }
            let c = cell.get().expect("set above");
            match c.blob_stream(&layer.digest, layer.size, &f.cache) {
                Ok(stream) => {
                    fb.warnings.warn(Warning::MirrorFallback {
                        object: format!("{}: layer {}", f.reference, layer.digest),
                        served_by: ep.to_string(),
                        failed: tried,
                    });
                    if fb.opts.progress != ProgressMode::Quiet {
                        eprintln!(
                            "{}: layer {} served by {ep}{}",
                            f.reference,
                            layer.digest,
                            if ep.mirror { " (mirror)" } else { " (source)" }
                        );
                    }
                    return Ok(Box::new(stream));
                }
                Err(e) => tried.push(format!("{ep}: {e:#}")),
            }
        }
        bail!(
            "{}: no mirror or source could serve layer {}; tried, in order:\n  {}",
            f.reference,
            layer.digest,
            tried.join("\n  ")
        )
    }
}

/// What [`pull`] did.
#[derive(Debug, serde::Serialize)]
pub struct PullReport {
    /// The image, as the cache now holds it.
    pub image: ImageInfo,
    /// Layers downloaded by this run (the others were cached already).
    pub fetched: usize,
    /// The cache directory.
    pub cache: PathBuf,
    /// The warnings of the run.
    #[serde(skip)]
    pub warnings: Vec<Warning>,
}

/// Fills the cache with everything `--offline` runs need for this reference; a cache
/// repair or a mirror fallback on the way is a warning of `warnings`.
pub fn pull(
    reference: &ImageRef,
    platform: &Platform,
    ropts: &RegistryOptions,
    warnings: &Warnings,
) -> Result<PullReport> {
    let ImageRef::Docker(docker) = reference else {
        bail!("{reference}: pull only applies to registry references (docker://...)");
    };
    if ropts.offline {
        bail!("pull cannot run with --offline");
    }
    let image = open(reference, docker, platform, ropts, warnings)?;
    let cache = ropts.cache(warnings)?;
    let mut fetched = 0;
    for layer in &image.info.layers {
        // A cached layer that fails its digest is removed (with a warning) and fetched
        // again: pull is also how a damaged cache is repaired.
        if cache.open_verified(&layer.digest, layer.size)?.is_some() {
            continue;
        }
        let mut r = image.source().open_layer(layer)?;
        io::copy(&mut r, &mut io::sink())
            .with_context(|| format!("{docker}: fetching layer {}", layer.digest))?;
        fetched += 1;
    }
    let name = cache_name(docker);
    let entry = cache
        .lookup(&name)?
        .ok_or_else(|| anyhow::anyhow!("{docker}: the cache lost its entry while pulling"))?;
    cache.publish(&name, &entry)?;
    Ok(PullReport {
        image: image.info.clone(),
        fetched,
        cache: cache.root().to_path_buf(),
        warnings: warnings.list(),
    })
}
