//! `iosched disk list|info|validate`: the disk models.

use iosched_disk::disksim;
use iosched_disk::info;
use iosched_disk::profile::{builtin_profiles, load_profile};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// The built-in disk profiles.
    List {
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// A profile's geometry and measured behaviour (sequential rates, random 4 KiB
    /// service time), computed by running the model.
    Info {
        /// Built-in name or a profile file (.toml, or a DiskSim .parv).
        profile: String,
        /// One JSON document instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Replay DiskSim 4.0's ten validation traces through our model and compare the
    /// service-time distributions with the measured ones (demerit figure).
    Validate {
        /// Only these drives (default: all ten).
        drives: Vec<String>,
        /// All ten drives (the default when no drive is named).
        #[arg(long, conflicts_with = "drives")]
        all: bool,
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Read the validation files (DRIVE.parv, .diskspecs, .model, .seek, .trace) from
        /// DIR instead of the copy of DiskSim 4.0's data built into the binary.
        #[arg(long, value_name = "DIR")]
        data: Option<std::path::PathBuf>,
    },
    /// Replay a trace of your own through a disk model alone (no host, no scheduler): a
    /// DiskSim ascii trace (`arrival_ms devno blkno bcount flags`, open arrivals, first
    /// come first served) or a DiskSim validation trace (closed). Prints each request's
    /// times, then the service-time summary, and with --outv the demerit against the
    /// measured distribution of a DiskSim validation output.
    Replay {
        /// The disk: a built-in profile (`iosched disk list`) or a profile file (.toml,
        /// DiskSim .parv).
        #[arg(long, value_name = "PROFILE")]
        drive: String,
        /// The trace file.
        #[arg(long, value_name = "FILE")]
        trace: std::path::PathBuf,
        /// A DiskSim validation output (.outv) whose measured access-time distribution
        /// the service times are scored against (demerit, DiskSim's rms.c).
        #[arg(long, value_name = "FILE")]
        outv: Option<std::path::PathBuf>,
        /// The spindle's angle at time zero from this seed [default: angle 0, as DiskSim].
        #[arg(long)]
        seed: Option<u64>,
        /// The summary only, without a line per request.
        #[arg(long)]
        summary: bool,
        /// One JSON document: the settings, each request (arrival, issue, done in ns) and
        /// the summary.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(a: Args) -> Result<(), String> {
    match a.cmd {
        Cmd::List { json } => {
            let list = builtin_profiles();
            if json {
                let v: Vec<_> = list.iter().map(|(n, d)| serde_json::json!({ "name": n, "description": d })).collect();
                println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
            } else {
                for (n, d) in list {
                    println!("{n:<16} {d}");
                }
            }
        }
        Cmd::Info { profile, json } => {
            let p = load_profile(&profile).map_err(|e| e.to_string())?;
            let i = info::info(&p);
            if json {
                println!("{}", serde_json::to_string_pretty(&i).map_err(|e| e.to_string())?);
            } else {
                print_info(&i);
            }
        }
        Cmd::Replay { drive, trace, outv, seed, summary, json } => {
            replay(&drive, &trace, outv.as_deref(), seed, summary, json)?
        }
        Cmd::Validate { drives, all, json, data } => {
            if let Some(d) = &data
                && !d.is_dir()
            {
                return Err(format!("--data {}: not a directory", d.display()));
            }
            let names: Vec<String> = if all || drives.is_empty() {
                disksim::validation_drives().iter().map(|s| s.to_string()).collect()
            } else {
                drives
            };
            let mut rows = Vec::new();
            for d in &names {
                let r = match &data {
                    Some(dir) => disksim::validate::validate_in(dir, d),
                    None => disksim::validate(d),
                };
                rows.push(r.map_err(|e| e.to_string())?);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
            } else {
                println!(
                    "{:<12} {:>8} {:>10} {:>10} {:>10} {:>8} {:>12}",
                    "drive", "requests", "meas. ms", "model ms", "demerit", "% mean", "DiskSim dem."
                );
                for r in rows {
                    println!(
                        "{:<12} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>7.1}% {:>12.3}",
                        r.drive,
                        r.requests,
                        r.measured_mean_ms,
                        r.sim_mean_ms,
                        r.demerit_ms,
                        r.demerit_pct,
                        r.disksim_demerit_ms
                    );
                }
            }
        }
    }
    Ok(())
}

fn replay(
    drive: &str,
    trace: &std::path::Path,
    outv: Option<&std::path::Path>,
    seed: Option<u64>,
    summary: bool,
    json: bool,
) -> Result<(), String> {
    use iosched_disk::disksim::replay as r;
    let p = load_profile(drive).map_err(|e| format!("--drive {e}"))?;
    let t = r::read_any(trace).map_err(|e| e.to_string())?;
    let measured = outv.map(|o| r::read_outv_distribution(o).map_err(|e| e.to_string())).transpose()?;
    let mut dev: Box<dyn iosched_disk::device::Device + Send> = match (&p.kind, seed) {
        // DiskSim starts every drive's spindle at angle 0.
        (iosched_disk::profile::ProfileKind::Hdd(h), None) => {
            Box::new(iosched_disk::hdd::Hdd::with_phase(h.clone(), 0))
        }
        (_, s) => p.build_boxed(s.unwrap_or(0)),
    };
    let served = r::replay(dev.as_mut(), &t.requests).map_err(|e| format!("{}: {e}", trace.display()))?;
    let mut svc: Vec<f64> = served.iter().map(|s| s.service_ms()).collect();
    let resp_mean = served.iter().map(|s| s.response_ms()).sum::<f64>() / served.len().max(1) as f64;
    svc.sort_by(f64::total_cmp);
    let q = |p: f64| svc.get(((p * svc.len() as f64).ceil() as usize).clamp(1, svc.len().max(1)) - 1).copied();
    let mean = svc.iter().sum::<f64>() / svc.len().max(1) as f64;
    let traced: Vec<f64> = t.requests.iter().filter_map(|r| r.measured_ms).collect();
    let vs_trace = (traced.len() == served.len() && !traced.is_empty()).then(|| r::score(&served, &traced));
    let vs_outv = measured.as_ref().map(|m| r::score(&served, m));
    let seed_text = match seed {
        Some(s) => format!("seed {s}"),
        None => "spindle at angle 0".to_string(),
    };
    if json {
        let reqs: Vec<_> = t
            .requests
            .iter()
            .zip(&served)
            .map(|(q, s)| {
                serde_json::json!({
                    "write": q.write, "blkno": q.blkno, "bcount": q.bcount,
                    "arrival_ns": s.arrival_ns, "issue_ns": s.issue_ns, "done_ns": s.done_ns,
                    "service_ms": s.service_ms(), "response_ms": s.response_ms(),
                })
            })
            .collect();
        let score = |x: Option<(f64, f64)>| x.map(|(d, pct)| serde_json::json!({"demerit_ms": d, "demerit_pct": pct}));
        let v = serde_json::json!({
            "drive": p.name, "trace": trace, "format": t.format, "seed": seed,
            "requests": reqs,
            "summary": {
                "requests": served.len(), "service_mean_ms": mean, "service_p50_ms": q(0.5),
                "service_p99_ms": q(0.99), "service_max_ms": svc.last(), "response_mean_ms": resp_mean,
                "vs_trace": score(vs_trace), "vs_outv": score(vs_outv),
            },
        });
        println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    let _ = writeln!(out, "{} through {} ({}), {}", trace.display(), p.name, t.format, seed_text);
    if !summary {
        let _ = writeln!(
            out,
            "{:>8} {:>2} {:>12} {:>6} {:>14} {:>14} {:>11} {:>11}",
            "#", "op", "blkno", "bcount", "arrival ms", "issue ms", "service ms", "response ms"
        );
        for (i, (q, s)) in t.requests.iter().zip(&served).enumerate() {
            let _ = writeln!(
                out,
                "{:>8} {:>2} {:>12} {:>6} {:>14.6} {:>14.6} {:>11.6} {:>11.6}",
                i + 1,
                if q.write { "W" } else { "R" },
                q.blkno,
                q.bcount,
                s.arrival_ns as f64 / 1e6,
                s.issue_ns as f64 / 1e6,
                s.service_ms(),
                s.response_ms()
            );
        }
    }
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let _ = writeln!(
        out,
        "{} requests: service mean {mean:.3} ms, p50 {}, p99 {}, max {} ms; response mean {resp_mean:.3} ms",
        served.len(),
        f(q(0.5)),
        f(q(0.99)),
        f(svc.last().copied())
    );
    if let Some((d, pct)) = vs_trace {
        let _ =
            writeln!(out, "against the trace's measured service times: demerit {d:.3} ms ({pct:.1} % of their mean)");
    }
    if let (Some((d, pct)), Some(o)) = (vs_outv, outv) {
        let _ = writeln!(
            out,
            "against {}'s measured distribution: demerit {d:.3} ms ({pct:.1} % of its mean)",
            o.display()
        );
    }
    Ok(())
}

fn print_info(i: &info::DiskInfo) {
    let opt = |v: Option<f64>, unit: &str| v.map(|x| format!("{x:.2} {unit}")).unwrap_or_else(|| "-".into());
    println!("{} ({}): {}", i.name, i.kind, i.description);
    let cap = if i.capacity_gb >= 1.0 {
        format!("{:.1} GB", i.capacity_gb)
    } else {
        format!("{:.1} MB", i.capacity_gb * 1000.0)
    };
    println!("  capacity            {cap} ({} sectors)", i.capacity_sectors);
    println!("  queue depth         {}", i.queue_depth);
    println!("  interface           {}", i.interface);
    if let Some(rpm) = i.rpm {
        println!("  rpm                 {rpm}");
        println!(
            "  geometry            {} cylinders, {} surfaces, {} zones",
            i.cylinders.unwrap_or(0),
            i.surfaces.unwrap_or(0),
            i.zones.unwrap_or(0)
        );
        println!(
            "  media rate          {} outer, {} inner",
            opt(i.media_rate_outer_mb_s, "MB/s"),
            opt(i.media_rate_inner_mb_s, "MB/s")
        );
        println!(
            "  seek                {} track-to-track, {} average, {} full stroke",
            opt(i.track_to_track_seek_ms, "ms"),
            opt(i.avg_seek_ms, "ms"),
            opt(i.full_stroke_seek_ms, "ms")
        );
        println!("  rotational latency  {} average", opt(i.avg_rotational_latency_ms, "ms"));
    }
    println!(
        "  sequential read     {:.1} MB/s ({:.1} MiB/s) outer, {:.1} MB/s inner (128 KiB, QD1)",
        i.seq_read_outer_mb_s, i.seq_read_outer_mib_s, i.seq_read_inner_mb_s
    );
    println!("  sequential write    {:.1} MB/s outer", i.seq_write_outer_mb_s);
    println!(
        "  random 4 KiB read   {:.0} IOPS ({:.2} ms) at QD1, {:.0} IOPS at QD32",
        i.random_4k_read_iops_qd1, i.random_4k_read_mean_ms_qd1, i.random_4k_read_iops_qd32
    );
    println!("  random 4 KiB write  {:.0} IOPS at QD1", i.random_4k_write_iops_qd1);
}
