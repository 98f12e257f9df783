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
