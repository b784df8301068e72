//! The main job: choose the MCD build that fits the target bootimage and write an
//! Ignition config that delivers it; and `verify`, which checks such a config.

use std::io::Write;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::choose::rules::{self, Choice};
use crate::choose::target::{Named, OcpVersion, Target, TargetArgs};
use crate::choose::{self, Boots, ClusterHint, Inspection};
use crate::ignition::document::Document;
use crate::ignition::schema::Schema;
use crate::ignition::units::{self, Build, Delivery};
use crate::ignition::{self, merge, Source, SpecVersion};
use crate::image::{ImageInfo, ImageRef};
use crate::io::output::Output;
use crate::io::HashWriter;
use crate::io::Input;
use crate::payload::{compress_whole, threads, Early, Payload};
use crate::release::Release;
use crate::transport::{self, OpenOptions};
use crate::userdata;
use crate::warnings::{UserDataLimit, Warning, Warnings};

/// Spec 2.x inline configs above this size get a warning about Ignition v0.x cost
/// (about 8 s of CPU and 210 MB of RAM at the rates below): every inline config of a
/// real MCD build (18 MB for a 4.12 build, 29 MB for a current one) gets it.
pub const V2_INLINE_WARN_BYTES: u64 = 10_000_000;
/// What Ignition v0.35 (bootimages 4.1-4.5) spends on an inline spec 2.2 config, per
/// byte of config, as `benches/node.sh` measured it (BENCHMARKS.md, "Node cost"): CPU
/// seconds per MB in the `fetch` stage (0.74-0.82 s measured; the `files` stage adds
/// 0.02 s), and peak RSS per config byte (18.2-20.9 measured, Go's collector varying
/// between runs; `files`: 4.3-5.4).
const V0_CPU_S_PER_MB: f64 = 0.8;
const V0_RSS_PER_BYTE: f64 = 21.0;

/// What cloud user data carries at most (AWS user data, Azure custom data, a GCP metadata
/// value), smallest first. A config over the smallest, inline or in remote mode, gets the
/// hand-over warning, listing the limits it exceeds.
pub const USER_DATA_LIMITS: [(&str, u64); 3] = [
    ("AWS", 16 * 1024),
    ("Azure custom data", 64 * 1024),
    ("GCP metadata", 256 * 1024),
];
/// Seconds Ignition's qemu provider spends reading a config of 1 MB (10^6 bytes) from
/// fw_cfg under TCG; the time grows with the square of the size (the driver re-reads
/// from the start of the item for each 4 KiB page). Measured with `benches/fwcfg.sh`
/// (BENCHMARKS.md, "fw_cfg"): 15.0-18.7 s per MB² for items of 0.25-2 MB on a shared
/// 2-core machine; a 28.9 MB inline config had 2.3 MB read after 61 s (11.5).
const FW_CFG_S_PER_MB2: f64 = 15.0;

/// Remote mode: the config references a served copy of the payload.
#[derive(Clone, Debug)]
pub struct Remote {
    /// Where the node downloads the payload (`--payload-url`).
    pub url: String,
    /// Where the payload is written (`--payload-out`).
    pub out: Output,
}

/// Everything `inject` needs, parsed.
#[derive(Clone, Debug)]
pub struct InjectConfig {
    /// The MCO image.
    pub image: ImageRef,
    /// How to open it (platform, registry options, limits).
    pub open: OpenOptions,
    /// The target.
    pub target: TargetArgs,
    /// The build to deliver (`--binary-path`), instead of the one chosen.
    pub binary_path: Option<String>,
    /// Deliver an incompatible `binary_path`, and replace conflicting base entries.
    pub force: bool,
    /// The config to write (`--ign`).
    pub ign: Output,
    /// A config to merge ours into (`--base`): an Ignition config of any spec from 2.0
    /// to 3.6, or the user-data Secret that holds one.
    pub base: Option<Input>,
    /// Also write the config as a user-data Secret (`--secret-out`), under this name
    /// (`--secret-name`, else [`userdata::default_name`]).
    pub secret_out: Option<(Output, Option<String>)>,
    /// Remote mode: the payload is served, not inline.
    pub remote: Option<Remote>,
    /// The release the image was taken from (`--release`).
    pub release: Option<Release>,
}

/// What `inject` did, for the caller to report.
#[derive(Debug)]
pub struct InjectReport {
    /// The path of the build delivered.
    pub chosen: String,
    /// Its sha256, in hex.
    pub binary_sha256: String,
    /// The target, as settled.
    pub target: Target,
    /// How the bootimage was named (the form given, the file read), which the config
    /// does not record.
    pub bootimage: Named,
    /// The size of the config written.
    pub config_bytes: u64,
    /// Which layers the choice needed, and their share of the image's stored bytes.
    pub layers_read: String,
    /// What merging with the base did (replacements, translations), for stderr.
    pub notes: Vec<String>,
    /// The warnings of the run, the image's opening included.
    pub warnings: Vec<Warning>,
    /// The image the binary came from.
    pub image: ImageInfo,
    /// sha256 of the config as written.
    pub config_sha256: String,
    /// sha512 of the (gzip) payload, as the config checks it.
    pub payload_sha512: String,
    /// The release the image came from (`--release`).
    pub release: Option<Release>,
    /// The boots the builds serve: the first on the bootimage, and the cluster's OS.
    pub boots: BootsReport,
    /// What the base was, when there was one.
    pub base: Option<BaseReport>,
    /// The Secret written (`--secret-out`): its name and file.
    pub secret: Option<(String, String)>,
    /// What an admin of the cluster should know about this bootimage (boot image skew
    /// enforcement), for the JSON report only: it would be noise on every run's stderr.
    pub cluster_notes: Vec<String>,
}

/// The base config as read, and as written.
#[derive(Debug)]
pub struct BaseReport {
    /// The Secret it came from, if any.
    pub secret: Option<userdata::SecretSource>,
    /// `ignition.version` as the base declared it.
    pub spec: String,
    /// The spec it was written in (the output's).
    pub written_spec: SpecVersion,
    /// Whether it was translated from its spec to another.
    pub translated: bool,
}

/// Which build serves which boot, with the verdicts that prove it.
#[derive(Debug)]
pub struct BootsReport {
    /// The first build's verdict on the bootimage (natively, or through its closure).
    pub first_verdict: rules::Verdict,
    /// The first build's closure, when it runs through one: each file's name, path in
    /// the image and sha256.
    pub closure: Vec<(String, String, String)>,
    /// The cluster's OS, when it was learnt.
    pub cluster_os: Option<choose::ClusterOs>,
    /// The first build's verdict on the cluster's OS.
    pub first_on_cluster: Option<rules::Verdict>,
    /// The build for the cluster's OS, when the first does not run there: its path,
    /// sha256, verdict and payload (its file in the config, its sha512).
    pub second: Option<SecondBuild>,
}

/// The second build a config carries.
#[derive(Debug)]
pub struct SecondBuild {
    /// Its path in the image.
    pub path: String,
    /// Its sha256, in hex.
    pub sha256: String,
    /// Its verdict on the cluster's OS.
    pub verdict: rules::Verdict,
    /// Where the config puts it.
    pub payload_path: String,
    /// The URL it is served from (remote mode).
    pub payload_url: Option<String>,
    /// sha512 of its gzip payload.
    pub payload_sha512: String,
}

/// The output spec: `--spec`, else the base's own spec when the bootimage reads it and
/// it is newer than the default, else the table's default.
fn output_spec(t: &TargetArgs, base: Option<&Document>, arch: &str) -> Result<Target> {
    let default = Target::new(t.bootimage.version, t.spec, t.rhel, arch)?;
    if t.spec.is_some() {
        return Ok(default);
    }
    match base.and_then(merge::declared_spec) {
        Some(b) if b > default.spec && default.reads(b) => {
            Ok(Target::new(t.bootimage.version, Some(b), t.rhel, arch)?)
        }
        _ => Ok(default),
    }
}

/// How the provenance names an image: a registry image by its reference as read
/// (`reference`, normalised); an image on disk by its transport and its own name in the
/// layout or archive, never by its path, which is the machine's and not the image's
/// (the digests beside it identify the image). So the same image and options give the
/// same config wherever it lies and however its path was spelt. `None` for a registry
/// image, else the record of one on disk.
fn on_disk(image: &ImageRef, name: Option<&str>) -> Option<Value> {
    image
        .local_transport()
        .map(|transport| json!({ "transport": transport, "name": name }))
}

fn provenance(
    ins: &Inspection,
    image: &ImageRef,
    plan: &Plan,
    release: Option<&Release>,
    named: &Named,
) -> Vec<u8> {
    let target = &plan.target;
    let first = plan.chosen();
    let (path, sha256) = (first.path.as_str(), first.sha256.hex().to_string());
    let (os_key, os_major) = target.os.key();
    let (key, recorded) = match on_disk(image, ins.image.name.as_deref()) {
        Some(d) => ("image_on_disk", d),
        None => ("image", json!(ins.image.reference)),
    };
    let mut p = json!({
        key: recorded,
        "manifest_digest": ins.image.manifest_digest.as_ref().map(|d| d.to_string()),
        "config_digest": ins.image.config_digest.to_string(),
        "platform": ins.image.platform.to_string(),
        "binary_path": path,
        "binary_sha256": sha256,
        "target": {
            "bootimage": target.bootimage.to_string(),
            os_key: os_major,
            "spec": target.spec.as_str(),
        },
        "tool": format!("mcd-inject {}", env!("CARGO_PKG_VERSION")),
    });
    if !named.range.is_empty() {
        // A name several releases share: each of them gives this config.
        p["target"]["bootimage_range"] = json!(named
            .range
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>());
    }
    // Which build each host gets: the install script's choice, recorded.
    let mut builds = vec![json!({
        "payload": units::PAYLOAD_PATH,
        "binary_path": path,
        "binary_sha256": sha256,
        os_key: os_major,
    })];
    if let Some(c) = &ins.closure {
        // The loader and libraries it runs with on hosts whose own are too old for it.
        builds[0]["closure"] = json!(c
            .files
            .iter()
            .map(|f| json!({
                "name": f.name,
                "path": f.path,
                "sha256": f.sha256.hex(),
                "payload": units::closure_payload_path(&f.name),
            }))
            .collect::<Vec<_>>());
    }
    if let Some((rhel, b)) = plan.second() {
        builds.push(json!({
            "payload": units::other_payload_path(rhel),
            "binary_path": b.path,
            "binary_sha256": b.sha256.hex().to_string(),
            "rhel": rhel,
        }));
    }
    p["builds"] = json!(builds);
    if let Some(c) = &plan.boots.cluster_os {
        p["cluster_os"] = json!(c);
    }
    if let Some(r) = release {
        let disk = r
            .reference
            .parse::<ImageRef>()
            .ok()
            .and_then(|i| on_disk(&i, r.name.as_deref()));
        let (key, recorded) = match disk {
            Some(d) => ("on_disk", d),
            None => ("reference", json!(r.reference)),
        };
        p["release"] = json!({
            key: recorded,
            "digest": r.digest.as_ref().map(|d| d.to_string()),
            "version": r.version,
            "mco_digest": r.mco_digest.to_string(),
        });
    }
    ignition::to_bytes(&p)
}

/// Runs `inject`, in the stages of a config generator: plan (read the base, open the
/// image, fix the target, choose the build) → render (the payload and our config) →
/// merge (with the base) → validate → write. Nothing is written unless every stage
/// succeeded.
pub fn inject(cfg: &InjectConfig, warnings: &Warnings) -> Result<InjectReport> {
    // The base stays as read; its entries are parsed one at a time (docs/inject.md).
    let (base_bytes, base_secret) = match &cfg.base {
        Some(input) => {
            let (bytes, secret) =
                userdata::config_of(input.read()?).with_context(|| format!("--base {input}"))?;
            (Some(bytes), secret)
        }
        None => (None, None),
    };
    let base = match (&cfg.base, &base_bytes) {
        (Some(input), Some(bytes)) => {
            let name = match &base_secret {
                Some(s) => format!("{input} ({})", s.key),
                None => input.to_string(),
            };
            Some(Document::parse(&name, bytes)?)
        }
        _ => None,
    };
    let base_spec = base.as_ref().and_then(|b| b.version().map(str::to_string));
    let mut plan = plan(cfg, base.as_ref(), warnings)?;
    let Rendered {
        config,
        payloads,
        staged,
    } = render(cfg, &mut plan)?;
    let (config, notes) = merge_base(cfg, &plan, base, config, warnings)?;
    validate(&config, plan.target.spec)?;
    let secret_name = cfg.secret_out.as_ref().map(|(_, name)| {
        name.clone()
            .unwrap_or_else(|| userdata::default_name(base_secret.as_ref()))
    });
    let written = write(
        cfg,
        &plan,
        staged,
        &payloads,
        &config,
        secret_name.as_deref(),
        warnings,
    )?;
    let second_sha512 = payloads.get(1).map(|p| p.sha512.clone());
    let payload = &payloads[0];
    let bin = plan.chosen();
    Ok(InjectReport {
        chosen: bin.path.clone(),
        binary_sha256: bin.sha256.hex().to_string(),
        config_bytes: written.size,
        bootimage: cfg.target.bootimage.clone(),
        layers_read: plan.ins.read_summary(),
        notes,
        warnings: warnings.list(),
        image: plan.ins.image.clone(),
        config_sha256: written.sha256,
        payload_sha512: payload.sha512.clone(),
        release: cfg.release.clone(),
        boots: BootsReport {
            first_verdict: plan.choice.verdict.clone(),
            closure: plan
                .ins
                .closure
                .iter()
                .flat_map(|c| &c.files)
                .map(|f| (f.name.clone(), f.path.clone(), f.sha256.hex().to_string()))
                .collect(),
            cluster_os: plan.boots.cluster_os.clone(),
            first_on_cluster: plan.boots.first_on_cluster.clone(),
            second: plan.second().map(|(rhel, b)| SecondBuild {
                path: b.path.clone(),
                sha256: b.sha256.hex().to_string(),
                verdict: plan
                    .boots
                    .second
                    .as_ref()
                    .expect("a second build has a choice")
                    .verdict
                    .clone(),
                payload_path: units::other_payload_path(rhel),
                payload_url: cfg.remote.as_ref().map(|r| units::other_name(&r.url, rhel)),
                payload_sha512: second_sha512.clone().unwrap_or_default(),
            }),
        },
        base: base_spec.map(|spec| BaseReport {
            secret: base_secret,
            translated: spec != plan.target.spec.as_str(),
            spec,
            written_spec: plan.target.spec,
        }),
        secret: cfg
            .secret_out
            .as_ref()
            .zip(secret_name)
            .map(|((out, _), name)| (name, out.to_string())),
        cluster_notes: skew_notes(&plan.target),
        target: plan.target,
    })
}

/// The OpenShift release from which boot image skew enforcement (MCO 4.22 and later)
/// holds a cluster's bootimages to be new enough: older ones keep the cluster from
/// upgrading unless an admin acts.
pub const SKEW_LIMIT: OcpVersion = OcpVersion {
    major: 4,
    minor: 13,
};

/// What the admin of a cluster that serves this bootimage must set, for the JSON report
/// (docs/current-clusters.md says more).
fn skew_notes(target: &Target) -> Vec<String> {
    match target.bootimage.ocp() {
        Some(v) if v < SKEW_LIMIT => vec![format!(
            "boot image skew enforcement (MCO 4.22 and later) counts a {v} bootimage as older than 4.13.0 (RHCOS 9.2): a cluster on a platform without automated boot image updates records its boot image (mode Manual) and is Upgradeable=False until the recorded one is 4.13 or newer, or until the admin sets spec.bootImageSkewEnforcement.mode to None on the MachineConfiguration named cluster (MCO then no longer checks the skew, and the cluster may fail to scale with bootimages it cannot boot); mode Manual must record the oldest bootimage the cluster still boots (manual.ocpVersion or manual.rhcosVersion), which here is this one"
        )],
        _ => Vec::new(),
    }
}

/// What `inject` settled before rendering anything.
struct Plan {
    target: Target,
    ins: Inspection,
    choice: Choice,
    /// The builds for the boots after the first.
    boots: Boots,
    /// Spool for the binary and its compressed copy, beside the output.
    spool: tempfile::TempDir,
    /// The likely build, compressed while its layer streamed.
    early: Option<Early>,
}

impl Plan {
    fn chosen(&self) -> &choose::Binary {
        &self.ins.binaries[self.choice.index]
    }

    /// The build for hosts of the cluster's RHEL, when the first does not run there.
    fn second(&self) -> Option<(u32, &choose::Binary)> {
        let c = self.boots.second.as_ref()?;
        let rhel = self.boots.cluster_os.as_ref()?.os.rhel()?;
        Some((rhel, &self.ins.binaries[c.index]))
    }
}

/// What the command line says of the cluster before the image is read.
fn cluster_hint(cfg: &InjectConfig) -> ClusterHint {
    ClusterHint {
        rhel: cfg.target.cluster_rhel,
        release_version: cfg.release.as_ref().map(|r| r.version.clone()),
    }
}

/// The plan: the target (the base may raise its spec), the image and the build chosen
/// for the target.
fn plan(cfg: &InjectConfig, base: Option<&Document>, warnings: &Warnings) -> Result<Plan> {
    let arch = cfg.open.platform.architecture.clone();
    let target = output_spec(&cfg.target, base, &arch)?;
    let img = transport::open(&cfg.image, &cfg.open, warnings)?;
    // The MCO release says which builds the image ships: its version label, else the
    // release named.
    let release = choose::boots::label_version(&img.info.labels)
        .map(|(v, _)| v)
        .or_else(|| choose::target::OcpVersion::of_release(&cfg.release.as_ref()?.version));
    let likely = choose::likely(cfg.binary_path.as_deref(), &target, release)?;
    // Spool beside the output, not in a possibly memory-backed /tmp: the binary and its
    // compressed copy are as big as the MCD.
    let spool_in = cfg.ign.spool_dir()?;
    let spool = crate::io::tempfiles::dir_in(&spool_in)
        .with_context(|| format!("creating a spool directory in {}", spool_in.display()))?;
    let early = Early::start(&likely, spool.path());
    // The choice of the full view, from as few layers as settle it; the build it is
    // likely to settle on is compressed while its layer streams.
    let hint = cluster_hint(cfg);
    let query = choose::Query {
        target: &target,
        hint: &hint,
        binary_path: cfg.binary_path.as_deref(),
        force: cfg.force,
    };
    let (ins, boots) = choose::select_boots(
        &img,
        spool.path(),
        &query,
        choose::Reading::Lazy,
        Some(&early),
    )?;
    let choice = boots.first.clone();
    let bin = &ins.binaries[choice.index];
    if choice.forced {
        warnings.warn(Warning::ForcedIncompatible {
            binary: bin.path.clone(),
            target: rules::describe(&target),
            reasons: choice.verdict.because(),
        });
    }
    log::info!("chose {}", bin.path);
    if let (Some(v), None, Some(c)) = (&boots.first_on_cluster, &boots.second, &boots.cluster_os) {
        if !v.compatible && !choice.forced {
            // --force, and no build runs on the cluster's OS: the first goes alone.
            warnings.warn(Warning::ForcedIncompatible {
                binary: bin.path.clone(),
                target: format!(
                    "the cluster's OS ({}, from {}), from the second boot on",
                    c.os, c.source
                ),
                reasons: v.because(),
            });
        }
    }
    if let Some(c) = &boots.second {
        log::info!(
            "chose {} for the cluster's OS too: {} does not run there",
            ins.binaries[c.index].path,
            bin.path
        );
    }
    shared_name_agrees(cfg, base, &target, &img, &ins, &boots, spool.path())?;
    Ok(Plan {
        target,
        ins,
        choice,
        boots,
        spool,
        early: Some(early),
    })
}

/// A name that several releases share (an RHCOS build ID of 4.19 on) is taken for the
/// first of them when each gives the same target, apart from its name, and the same
/// builds, chosen again from the image for each; else it is refused, naming what
/// differs.
#[allow(clippy::too_many_arguments)]
fn shared_name_agrees(
    cfg: &InjectConfig,
    base: Option<&Document>,
    first: &Target,
    img: &crate::image::Image,
    ins: &Inspection,
    boots: &Boots,
    spool: &std::path::Path,
) -> Result<()> {
    let named = &cfg.target.bootimage;
    let builds = |ins: &Inspection, b: &Boots| {
        let path = |c: &Choice| ins.binaries[c.index].path.clone();
        (path(&b.first), b.first.closure, b.second.as_ref().map(path))
    };
    let want = builds(ins, boots);
    for &other in named.range.iter().filter(|&&r| r != first.bootimage) {
        let args = TargetArgs {
            bootimage: Named {
                version: other,
                ..named.clone()
            },
            ..cfg.target.clone()
        };
        let t = output_spec(&args, base, &first.arch)?;
        let mut differs = first.differences(&t);
        if differs.is_empty() {
            let hint = cluster_hint(cfg);
            let query = choose::Query {
                target: &t,
                hint: &hint,
                binary_path: cfg.binary_path.as_deref(),
                force: cfg.force,
            };
            let dir = tempfile::tempdir_in(spool).context("creating a spool directory")?;
            let (i, b) =
                choose::select_boots(img, dir.path(), &query, choose::Reading::Lazy, None)?;
            let got = builds(&i, &b);
            if got != want {
                differs.push(format!(
                    "the build chosen: {} on {}, {} on {other}",
                    want.0, first.bootimage, got.0
                ));
            }
        }
        if !differs.is_empty() {
            bail!(
                "bootimage {:?}: it may be the bootimage of OpenShift {}, which do not give \
                 the same config: {}; give the release the cluster was installed with as \
                 --bootimage X.Y",
                named.value,
                named.versions(),
                differs.join("; ")
            );
        }
    }
    Ok(())
}

/// Our config, before merging, and what it delivers.
struct Rendered {
    config: Value,
    /// The builds' payloads, the bootimage's first.
    payloads: Vec<Payload>,
    /// Remote mode: the payload files, staged, committed with the config.
    staged: Vec<(Output, tempfile::NamedTempFile)>,
}

/// The payloads, compressed, and our config for the target's spec.
fn render(cfg: &InjectConfig, plan: &mut Plan) -> Result<Rendered> {
    let early = plan.early.take().expect("render runs once per plan");
    let bin = plan.chosen();
    let gz = early.finish(bin.file(), bin.size, plan.spool.path(), threads())?;
    log::info!("payload: {} bytes of gzip", gz.len);
    let mut payloads = vec![gz];
    if let Some((_, b)) = plan.second() {
        let gz = compress_whole(b.file(), b.size, plan.spool.path(), threads())?;
        log::info!("payload for the cluster's OS: {} bytes of gzip", gz.len);
        payloads.push(gz);
    }
    let closure_files = plan
        .ins
        .closure
        .as_ref()
        .map(|c| &c.files[..])
        .unwrap_or(&[]);
    for f in closure_files {
        payloads.push(compress_whole(
            f.file(),
            f.size,
            plan.spool.path(),
            threads(),
        )?);
    }
    let mut staged = Vec::new();
    let mut builds = Vec::new();
    let shas = std::iter::once(bin.sha256.hex().to_string())
        .chain(plan.second().map(|(_, b)| b.sha256.hex().to_string()));
    for (i, (gz, sha256)) in payloads.iter().zip(shas).enumerate() {
        let rename = plan
            .second()
            .map(|(r, _)| r)
            .filter(|_| i > 0)
            .map(|rhel| move |first: &str| units::other_name(first, rhel));
        let (payload, stage) = stage_payload(cfg, gz, i, rename.as_ref().map(|f| f as _))?;
        staged.extend(stage);
        builds.push(Build {
            payload,
            payload_sha512: gz.sha512.clone(),
            binary_sha256: sha256,
        });
    }
    let mut closure = Vec::new();
    let first_closure = builds.len();
    for (n, f) in closure_files.iter().enumerate() {
        let i = first_closure + n;
        let rename = |first: &str| units::closure_name(first, &f.name);
        let (payload, stage) = stage_payload(cfg, &payloads[i], i, Some(&rename))?;
        staged.extend(stage);
        closure.push(units::ClosurePayload {
            name: f.name.clone(),
            payload,
            payload_sha512: payloads[i].sha512.clone(),
            sha256: f.sha256.hex().to_string(),
        });
    }
    let first = builds.remove(0);
    let other = plan.second().map(|(r, _)| r).zip(builds.pop());
    let delivery = Delivery {
        first,
        other,
        closure: (!closure.is_empty()).then(|| units::ClosureDelivery {
            files: closure,
            native_rhel: bin
                .elf
                .as_ref()
                .map(|f| crate::choose::boots::native_rhels(f, &plan.target))
                .unwrap_or_default(),
        }),
        provenance: provenance(
            &plan.ins,
            &cfg.image,
            plan,
            cfg.release.as_ref(),
            &cfg.target.bootimage,
        ),
        legacy_firstboot: plan.target.has_legacy_firstboot(),
    };
    Ok(Rendered {
        config: units::config(&delivery).render(plan.target.spec)?,
        payloads,
        staged,
    })
}

/// Remote mode stages a payload file now (the second build's and the closure's beside
/// the first's, named by `rename` from the first's: [`units::other_name`],
/// [`units::closure_name`]); inline mode streams it into the config when that is
/// written.
fn stage_payload(
    cfg: &InjectConfig,
    gz: &Payload,
    index: usize,
    rename: Option<&dyn Fn(&str) -> String>,
) -> Result<(Source, Vec<(Output, tempfile::NamedTempFile)>)> {
    let Some(r) = &cfg.remote else {
        return Ok((Source::Streamed(index), Vec::new()));
    };
    if r.out == Output::Stdout || r.out == cfg.ign {
        bail!("--payload-out must be a file other than --ign");
    }
    let (out, url) = match (rename, &r.out) {
        (Some(rename), Output::File(p)) => {
            let out = Output::File(rename(&p.to_string_lossy()).into());
            if out == cfg.ign {
                bail!("--payload-out: a payload beside it would be {out}, which is --ign");
            }
            (out, rename(&r.url))
        }
        _ => (r.out.clone(), r.url.clone()),
    };
    let mut t = out.temp_file()?;
    std::io::copy(&mut gz.file.reopen()?, t.as_file_mut())
        .with_context(|| format!("writing {out}"))?;
    Ok((Source::Url(url), vec![(out, t)]))
}

/// Our config merged into the base, if any, with merge's notes; the base entries
/// `--force` replaced are warnings.
fn merge_base<'a>(
    cfg: &InjectConfig,
    plan: &Plan,
    base: Option<Document<'a>>,
    ours: Value,
    warnings: &Warnings,
) -> Result<(Document<'a>, Vec<String>)> {
    let Some(base) = base else {
        return Ok((Document::from_value(ours), Vec::new()));
    };
    let (merged, notes) =
        merge::merge(base, &ours, plan.target.spec, cfg.force).with_context(|| {
            let input = cfg
                .base
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("--base {input} for bootimage {}", plan.target.bootimage)
        })?;
    for change in notes.forced {
        warnings.warn(Warning::ForcedBaseChange { change });
    }
    let notes = notes.info;
    Ok((merged, notes))
}

/// The config against its spec's schema: a failure is a bug of ours.
fn validate(config: &Document, spec: SpecVersion) -> Result<()> {
    let report = config.validate(&Schema::load(spec));
    if !report.is_clean() {
        bail!("internal error: the config is not valid spec {spec}: {report:?}");
    }
    Ok(())
}

/// What `write` wrote.
struct Written {
    size: u64,
    sha256: String,
}

/// Writes the config (the payload streamed into it inline), warns about a config too big
/// for user data and about a big inline spec 2.x config, then commits the staged payload
/// and the config, unless `--strict` turns a warning of the run into failure.
fn write(
    cfg: &InjectConfig,
    plan: &Plan,
    mut staged: Vec<(Output, tempfile::NamedTempFile)>,
    payloads: &[Payload],
    config: &Document,
    secret_name: Option<&str>,
    warnings: &Warnings,
) -> Result<Written> {
    let mut t = cfg.ign.temp_file()?;
    // The config's sha256 is taken as it is written.
    let mut w: HashWriter<_, sha2::Sha256> = HashWriter::new(std::io::BufWriter::with_capacity(
        crate::io::WIDE_BUF,
        t.as_file_mut(),
    ));
    match cfg.remote {
        None => {
            let write = |s: &mut ignition::Splice<_>| config.write(s).map_err(Into::into);
            let streams = payloads
                .iter()
                .map(|p| {
                    Ok(ignition::Streamed {
                        read: Box::new(p.file.reopen()?),
                        len: p.len,
                    })
                })
                .collect::<std::io::Result<Vec<_>>>()?;
            ignition::write_streamed(write, streams, &mut w).map(drop)
        }
        Some(_) => config.write(&mut w).map_err(Into::into),
    }
    .and_then(|()| Ok(w.flush()?))
    .with_context(|| format!("writing {}", cfg.ign))?;
    let size = w.len;
    let sha256 = w.hex();
    log::info!("config written: {size} bytes");
    // What user data carries is the config itself, payload inline or served: a
    // remote-mode config with a closure's entries is over AWS's limit too.
    if size > USER_DATA_LIMITS[0].1 {
        warnings.warn(hand_over_warning(size, cfg.remote.is_some()));
    }
    if plan.target.spec.is_v2() && cfg.remote.is_none() && size > V2_INLINE_WARN_BYTES {
        warnings.warn(v2_size_warning(size));
    }

    if let (Some((out, _)), Some(name)) = (&cfg.secret_out, secret_name) {
        staged.push((out.clone(), secret_file(out, t.path(), size, name)?));
    }

    // Everything is ready: commit the payload (remote mode), then the config.
    warnings.check_strict()?;
    staged.push((cfg.ign.clone(), t));
    for (out, t) in staged {
        out.commit(t, 0o644)?;
    }
    Ok(Written { size, sha256 })
}

/// The config written at `config` (of `size` bytes) as the user-data Secret `name`,
/// staged beside `out`.
fn secret_file(
    out: &Output,
    config: &std::path::Path,
    size: u64,
    name: &str,
) -> Result<tempfile::NamedTempFile> {
    if size > userdata::MAX_SECRET_BYTES as u64 {
        return Err(userdata::SecretOutError::TooBig {
            size: size as usize,
        })
        .with_context(|| format!("--secret-out {out}"));
    }
    let bytes =
        std::fs::read(config).with_context(|| format!("reading back {}", config.display()))?;
    let yaml =
        userdata::secret_yaml(name, &bytes).with_context(|| format!("--secret-out {out}"))?;
    let mut t = out.temp_file()?;
    t.as_file_mut()
        .write_all(&yaml)
        .with_context(|| format!("writing {out}"))?;
    Ok(t)
}

/// The warning for configs too big to hand over, inline or in remote mode (`remote`):
/// the user-data limits the config exceeds, and what reading it from fw_cfg costs.
pub fn hand_over_warning(len: u64, remote: bool) -> Warning {
    let mb = len as f64 / 1e6;
    Warning::InlineConfigTooBigToHandOver {
        bytes: len,
        remote,
        user_data_exceeded: USER_DATA_LIMITS
            .iter()
            .filter(|(_, limit)| len > *limit)
            .map(|(platform, limit)| UserDataLimit {
                platform: platform.to_string(),
                bytes: *limit,
            })
            .collect(),
        fw_cfg_seconds_per_mb_squared: FW_CFG_S_PER_MB2,
        fw_cfg_seconds: FW_CFG_S_PER_MB2 * mb * mb,
    }
}

/// The warning for big inline spec 2.x configs: what Ignition v0.x will spend on it,
/// at the rates `benches/node.sh` measured with v0.35.
pub fn v2_size_warning(len: u64) -> Warning {
    Warning::LargeInlineConfig {
        bytes: len,
        cpu_seconds_per_mb: V0_CPU_S_PER_MB,
        ram_per_byte: V0_RSS_PER_BYTE,
        cpu_seconds: len as f64 / 1e6 * V0_CPU_S_PER_MB,
        ram_bytes: (len as f64 * V0_RSS_PER_BYTE) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_warning_gives_the_cost_and_points_to_remote_mode() {
        // A current MCD's inline config, as benches/node.sh measured it: 28.87 MB,
        // 21.25-21.96 s of CPU and 500-539 MiB (up to 0.57 GB) in the fetch stage.
        let w = v2_size_warning(28_870_000).to_string();
        assert!(w.contains("28.9 MB"), "{w}");
        assert!(w.contains("about 23 s of CPU"), "{w}");
        assert!(w.contains("0.61 GB"), "{w}");
        assert!(w.contains("--payload-url"), "{w}");
        const { assert!(V2_INLINE_WARN_BYTES < 18_000_000) };
    }

    #[test]
    fn hand_over_warning_names_the_limits_fw_cfg_and_remote_mode() {
        let w = hand_over_warning(28_870_000, false).to_string();
        assert!(w.contains("28.9 MB"), "{w}");
        assert!(
            w.contains("AWS 16 KB, Azure custom data 64 KB, GCP metadata 256 KB"),
            "{w}"
        );
        assert!(w.contains("fw_cfg") && w.contains("hours"), "{w}");
        assert!(w.contains("--payload-url"), "{w}");
        // Between the limits: only those exceeded are named.
        let Warning::InlineConfigTooBigToHandOver {
            user_data_exceeded, ..
        } = hand_over_warning(100_000, false)
        else {
            unreachable!()
        };
        let names: Vec<&str> = user_data_exceeded
            .iter()
            .map(|l| l.platform.as_str())
            .collect();
        assert_eq!(names, ["AWS", "Azure custom data"]);
        // In remote mode: the same limits, and no pointing to remote mode.
        let w = hand_over_warning(21_000, true).to_string();
        assert!(
            w.starts_with(
                "the config is 21 kB with the payload served (remote mode): over the \
                 user-data limit of AWS 16 KB."
            ),
            "{w}"
        );
        assert!(!w.contains("--payload-url") && !w.contains("fw_cfg"), "{w}");
    }

    #[test]
    fn forced_merge_changes_come_apart_from_the_notes() {
        let ours = serde_json::json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"links": [{"path": "/usr/local/bin/machine-config-daemon",
                                   "target": "/run/bin/machine-config-daemon"}]},
            "systemd": {"units": [{"name": "machine-config-daemon-firstboot.service",
                                   "contents": "new", "dropins": [{"name": "99-mcd-inject.conf",
                                                                   "contents": "x"}]}]}
        });
        let base = serde_json::json!({
            "ignition": {"version": "3.1.0"},
            "storage": {"files": [{"path": "/usr/local/bin/machine-config-daemon",
                                   "contents": {"source": "data:,b"}}]},
            "systemd": {"units": [{"name": "machine-config-daemon-firstboot.service",
                                   "mask": true}]}
        });
        let (_, notes) =
            merge::merge(Document::from_value(base), &ours, SpecVersion::V3_2, true).unwrap();
        // Unmasked the unit, replaced the file: two warnings; translated, added the
        // drop-in: two notes.
        assert_eq!(notes.forced.len(), 2, "{notes:?}");
        assert_eq!(notes.info.len(), 2, "{notes:?}");
        assert!(notes.forced.iter().all(|w| w.contains("from the base")));
    }
}
