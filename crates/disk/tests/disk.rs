//! Integration tests of iosched-disk: datasheet figures of the built-in profiles, the
//! DiskSim validation bound, profile errors, determinism and the device contract.

use std::sync::Arc;

use iosched_core::{Instant, Op};
use iosched_disk::disksim;
use iosched_disk::hdd::{Hdd, HddParams, Prefetch};
use iosched_disk::info::{SplitMix, closed_loop, random_4k, sequential_rate};
use iosched_disk::profile::parse_profile;
use iosched_disk::{Device, DiskCommand, Profile, ProfileKind, load_profile};

fn hdd_params(p: &Profile) -> Arc<HddParams> {
    match &p.kind {
        ProfileKind::Hdd(h) => h.clone(),
        _ => panic!("not a rotating drive"),
    }
}

fn within(x: f64, target: f64, tol: f64) -> bool {
    (x - target).abs() <= tol * target
}

// ---- ide-2003 against its calibration -----------------------------------------------------

#[test]
fn ide_2003_sustains_26_mib_s_in_the_outer_zones() {
    let p = load_profile("ide-2003").unwrap();
    let outer = sequential_rate(&p, Op::Read, 0, 256, 256, 16) / 1048576.0;
    assert!(within(outer, 26.0, 0.03), "outer sequential read {outer:.2} MiB/s");
    let cap = p.capacity_sectors();
    let inner = sequential_rate(&p, Op::Read, cap - 300 * 256, 256, 256, 16) / 1048576.0;
    assert!(within(inner, 15.6, 0.05), "inner sequential read {inner:.2} MiB/s");
}

#[test]
fn ide_2003_seek_curve_matches_the_datasheet() {
    let p = load_profile("ide-2003").unwrap();
    let h = hdd_params(&p);
    let n = h.layout.cylinders();
    let avg = iosched_disk::hdd::seek::weighted_average_ns(&h.seek, n) / 1e6;
    assert!((avg - 8.9).abs() < 0.02, "average seek {avg}");
    assert!((h.seek.time_ns(1) as f64 / 1e6 - 2.0).abs() < 0.01);
    assert!((h.seek.time_ns(n - 1) as f64 / 1e6 - 21.0).abs() < 0.05);
}

#[test]
fn ide_2003_random_reads_near_the_monte_carlo_target() {
    // disk.md §3.2: 74.8 IOPS for Drive A mechanics at QD 1.
    let p = load_profile("ide-2003").unwrap();
    let (iops, mean) = random_4k(&p, Op::Read, 1, 2000);
    assert!(within(iops, 75.0, 0.05), "{iops:.1} IOPS, {mean:.2} ms");
}

#[test]
fn rotational_latency_is_half_a_revolution_on_random_reads() {
    // Reads of single random sectors of one cylinder, issued at random times: no seek, no
    // cache; what is left over the overhead and the transfer is rotational latency.
    let p = load_profile("ide-2003").unwrap();
    let mut params = (*hdd_params(&p)).clone();
    params.cache.prefetch = Prefetch::None;
    params.cache.enabled = false;
    let params = Arc::new(params);
    let tr = params.layout.track_of(0);
    let mut d = Hdd::new(params.clone(), 7);
    let mut rng = SplitMix::from_state(3);
    let mut t = 0u64;
    let mut sum = 0.0;
    let n = 4000;
    let per_sector = 60e9 / 7200.0 / tr.spt as f64;
    for i in 0..n {
        let lbn = tr.first + rng.below(tr.end - tr.first);
        d.submit(Instant::from_nanos(t), DiskCommand { id: i, op: Op::Read, sector: lbn, len_sectors: 1 });
        let c = loop {
            let w = d.poll_timeout().unwrap();
            if let Some(c) = d.poll_completion(w) {
                break c;
            }
        };
        let svc = (c.at.as_nanos() - t) as f64;
        let o = &params.overheads;
        sum += svc - o.read_miss_after_read as f64 - per_sector - params.bus.read_block_ns as f64;
        t = c.at.as_nanos() + 1_000_000 + rng.below(10_000_000);
    }
    let lat_ms = sum / n as f64 / 1e6;
    let half = 60e3 / 7200.0 / 2.0;
    assert!((lat_ms - half).abs() < 0.15, "mean rotational latency {lat_ms:.3} ms, half a revolution {half:.3} ms");
}

#[test]
fn ide_2003_fast_is_drive_a() {
    let p = load_profile("ide-2003-fast").unwrap();
    let outer = sequential_rate(&p, Op::Read, 0, 256, 256, 16) / 1e6;
    assert!(within(outer, 42.2, 0.03), "outer {outer:.1} MB/s (disk.md: 42.2)");
    let (iops, _) = random_4k(&p, Op::Read, 1, 2000);
    assert!(within(iops, 74.8, 0.05), "{iops:.1} IOPS (disk.md: 74.8)");
    assert!(within(p.capacity_sectors() as f64, 78_165_360.0, 0.001));
}

#[test]
fn ncq_sptf_gains_over_fcfs_like_the_monte_carlo() {
    // disk.md §3.3: SPTF at QD 32 gives ~2.4x the QD 1 throughput on 7200 rpm drives.
    let p = load_profile("sata-2004-ncq").unwrap();
    let (q1, _) = random_4k(&p, Op::Read, 1, 1500);
    let (q32, _) = random_4k(&p, Op::Read, 32, 4000);
    let r = q32 / q1;
    assert!((2.1..=2.8).contains(&r), "QD32/QD1 = {r:.2} ({q32:.0}/{q1:.0})");
}

#[test]
fn scsi_15k_near_the_monte_carlo_targets() {
    // disk.md §3.4: 185 IOPS at QD 1, ~470 with SPTF at QD 32.
    let p = load_profile("scsi-15k").unwrap();
    let (q1, _) = random_4k(&p, Op::Read, 1, 2000);
    assert!(within(q1, 185.0, 0.06), "QD1 {q1:.0}");
    let (q32, _) = random_4k(&p, Op::Read, 32, 6000);
    assert!(within(q32, 470.0, 0.1), "QD32 {q32:.0}");
}

#[test]
fn sptf_aging_bounds_the_wait() {
    // Random reads at full depth: nothing waits much longer than the aging bound.
    let p = load_profile("sata-2004-ncq").unwrap();
    let mut d = p.build(1);
    let cap = p.capacity_sectors() / 8;
    let mut rng = SplitMix::from_state(9);
    let (_, lats) = closed_loop(&mut d, 32, 8000, |_| DiskCommand {
        id: 0,
        op: Op::Read,
        sector: rng.below(cap) * 8,
        len_sectors: 8,
    });
    let worst = *lats.iter().max().unwrap() as f64 / 1e9;
    assert!(worst < 1.0 + 0.5, "worst latency {worst:.3} s with a 1 s aging bound");
}

// ---- SSDs: Little's law --------------------------------------------------------------------

#[test]
fn ssds_follow_littles_law_and_hit_their_targets() {
    for (name, qd1_lo, qd1_hi) in [("sata-ssd", 8000.0, 10_500.0), ("nvme-ssd", 10_000.0, 13_000.0)] {
        let p = load_profile(name).unwrap();
        for qd in [1u32, 4, 16] {
            let (iops, mean_ms) = random_4k(&p, Op::Read, qd, 20_000);
            let little = qd as f64 / (mean_ms / 1e3);
            assert!(within(iops, little, 0.05), "{name} QD{qd}: {iops:.0} IOPS vs QD/latency {little:.0}");
            if qd == 1 {
                assert!((qd1_lo..=qd1_hi).contains(&iops), "{name} QD1 {iops:.0}");
            }
        }
    }
    let nvme = load_profile("nvme-ssd").unwrap();
    let (q16, _) = random_4k(&nvme, Op::Read, 16, 50_000);
    assert!((150_000.0..=190_000.0).contains(&q16), "nvme QD16 {q16:.0} (target ~170k)");
    let (q256, _) = random_4k(&nvme, Op::Read, 256, 200_000);
    assert!(q256 >= 450_000.0, "nvme max {q256:.0} (target >= 450k)");
    let sata = load_profile("sata-ssd").unwrap();
    let (w1, _) = random_4k(&sata, Op::Write, 1, 20_000);
    assert!((23_000.0..=32_000.0).contains(&w1), "sata QD1 write {w1:.0}");
    let (q32, _) = random_4k(&sata, Op::Read, 32, 50_000);
    assert!((65_000.0..=100_000.0).contains(&q32), "sata QD32 {q32:.0}");
}

#[test]
fn null_device_has_fixed_latency() {
    let p = load_profile("null").unwrap();
    let (iops, mean) = random_4k(&p, Op::Read, 8, 1000);
    assert!((mean - 0.1).abs() < 1e-9);
    assert!(within(iops, 80_000.0, 0.01));
}

// ---- DiskSim validation ----------------------------------------------------------------------

#[test]
fn disksim_validation_within_bounds_on_every_drive() {
    let mut failures = Vec::new();
    for d in disksim::validation_drives() {
        let r = disksim::validate(d).unwrap_or_else(|e| panic!("{d}: {e}"));
        eprintln!(
            "{:<11} measured {:>7.3} ms  ours {:>7.3} ms  demerit {:.3} ms ({:.2} %)  DiskSim {:.3} ms",
            r.drive, r.measured_mean_ms, r.sim_mean_ms, r.demerit_ms, r.demerit_pct, r.disksim_demerit_ms
        );
        if !(r.demerit_ms <= 1.5 * r.disksim_demerit_ms && r.demerit_pct <= 10.0) {
            failures.push(r.drive.clone());
        }
    }
    assert!(failures.is_empty(), "outside 1.5x DiskSim or 10 %: {failures:?}");
}

#[test]
fn demerit_of_identical_samples_is_zero() {
    let a = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(disksim::validate::demerit(&a, &a), 0.0);
    let b = [2.0, 3.0, 4.0, 5.0];
    assert!((disksim::validate::demerit(&a, &b) - 1.0).abs() < 1e-12);
}

#[test]
fn disksim_errors_name_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("iosched-disk-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim");
    for f in ["atlas10k.parv", "atlas10k.diskspecs", "atlas10k.seek"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let model = std::fs::read_to_string(src.join("atlas10k.model")).unwrap();
    let broken = model.replacen("Rotation speed (in rpms) = 10025", "Rotation speed (in rpms) = fast", 1);
    std::fs::write(dir.join("atlas10k.model"), broken).unwrap();
    let e = disksim::load_parv(&dir.join("atlas10k.parv")).unwrap_err().to_string();
    let line = model.lines().position(|l| l.contains("Rotation speed")).unwrap() + 1;
    assert!(e.contains(&format!("atlas10k.model:{line}: field `Rotation speed (in rpms)`: expected a number")), "{e}");
    std::fs::write(dir.join("atlas10k.model"), &model).unwrap();
    // Out-of-range and non-finite values in the disk block are refused, not dropped or kept.
    let specs = std::fs::read_to_string(src.join("atlas10k.diskspecs")).unwrap();
    for (from, to, expect) in [
        (
            "Bulk sector transfer time = 0.099000",
            "Bulk sector transfer time = nan",
            "expected a finite number, got NaN",
        ),
        ("Bulk sector transfer time = 0.099000", "Bulk sector transfer time = -1", "expected a number in 0..="),
        ("High (read) water mark = 0.000000", "High (read) water mark = 5", "expected a number in 0..=1, got 5"),
        ("Maximum number of write segments = 1", "Maximum number of write segments = 99", "in 0..=10, got 99"),
        // A key DiskSim does not define for the block is refused (DiskSim only warns and
        // uses the default), with the nearest valid key when one is close.
        (
            "Bulk sector transfer time = 0.099000",
            "Bulk sector transfr time = 0.099000",
            "field `Bulk sector transfr time`: not a parameter of a `disksim_disk` block in DiskSim (it would be ignored); did you mean `Bulk sector transfer time`?",
        ),
        (
            "Bulk sector transfer time = 0.099000",
            "Spindle colour = 3",
            "field `Spindle colour`: not a parameter of a `disksim_disk` block in DiskSim (it would be ignored)",
        ),
        // Controller overheads in the range a profile allows (0..=100 ms).
        (
            "Read hit over. after read = 0.184000",
            "Read hit over. after read = 1e12",
            "field `Read hit over. after read`: expected at most 100 ms, got 1000000000000",
        ),
        // A key given twice: DiskSim would keep one; we name both lines.
        (
            "Max queue length = 1,",
            "Max queue length = 4,\n  Max queue length = 2,",
            "field `Max queue length`: given twice in this block (first on line 18)",
        ),
    ] {
        assert!(specs.contains(from), "{from}");
        std::fs::write(dir.join("atlas10k.diskspecs"), specs.replacen(from, to, 1)).unwrap();
        let e = disksim::load_parv(&dir.join("atlas10k.parv")).unwrap_err().to_string();
        let line = specs.lines().position(|l| l.contains(from)).unwrap() + 1 + to.matches('\n').count();
        assert!(e.contains(&format!("atlas10k.diskspecs:{line}: field")) && e.contains(expect), "{to}: {e}");
    }
    std::fs::write(dir.join("atlas10k.diskspecs"), &specs).unwrap();
    // An instance of a block nobody defined.
    let parv = std::fs::read_to_string(src.join("atlas10k.parv")).unwrap();
    let from = "instantiate [ ctlr0 ]   as  CTLR0";
    std::fs::write(dir.join("atlas10k.parv"), parv.replacen(from, "instantiate [ ctlr0 ]   as  NOPE", 1)).unwrap();
    let e = disksim::load_parv(&dir.join("atlas10k.parv")).unwrap_err().to_string();
    let line = parv.lines().position(|l| l.contains(from)).unwrap() + 1;
    assert!(e.contains(&format!("atlas10k.parv:{line}: `instantiate … as NOPE`: no block is named `NOPE`")), "{e}");
    std::fs::write(dir.join("atlas10k.parv"), &parv).unwrap();
    // A seek file whose header's count disagrees with its rows (a cut file).
    let seek = std::fs::read_to_string(src.join("atlas10k.seek")).unwrap();
    std::fs::write(dir.join("atlas10k.seek"), seek.replacen("measured: 138", "measured: 500", 1)).unwrap();
    let e = disksim::load_parv(&dir.join("atlas10k.parv")).unwrap_err().to_string();
    assert!(e.contains("atlas10k.seek:1: says 500 seek distances, but the file has 138 rows"), "{e}");
    std::fs::write(dir.join("atlas10k.seek"), &seek).unwrap();
    disksim::load_parv(&dir.join("atlas10k.parv")).expect("the copies are whole again");
    // The same in a nested block: a zone of the layout in the .model file.
    let first = model.lines().position(|l| l.contains("Blocks per track")).unwrap();
    let line = model.lines().nth(first).unwrap();
    let broken: String = model
        .lines()
        .enumerate()
        .map(|(i, l)| if i == first { l.replacen("Blocks per track", "Blocks per trak", 1) } else { l.to_owned() } + "\n")
        .collect();
    assert_ne!(line, broken.lines().nth(first).unwrap());
    std::fs::write(dir.join("atlas10k.model"), broken).unwrap();
    let e = disksim::load_parv(&dir.join("atlas10k.parv")).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "atlas10k.model:{}: field `Blocks per trak`: not a parameter of a `dm_layout_g1_zone` block",
            first + 1
        )) && e.ends_with("did you mean `Blocks per track`?"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

// ---- profile errors ----------------------------------------------------------------------------

fn profile_err(src: &str) -> String {
    parse_profile(src, "profiles/foo.toml").unwrap_err().to_string()
}

#[test]
fn profile_errors_name_file_line_field_and_expectation() {
    let base = load_profile("ide-2003").unwrap();
    assert_eq!(base.name, "ide-2003");
    assert_eq!(base.interface, iosched_disk::profile::Interface::Ide);
    assert_eq!(load_profile("sata-2004-ncq").unwrap().interface, iosched_disk::profile::Interface::Scsi);
    let good = iosched_disk::profile::builtin_source("ide-2003").unwrap();
    let line_of = |s: &str, key: &str| s.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let bad = good.replace("interface = \"ide\"", "interface = \"usb\"");
    assert_eq!(
        profile_err(&bad),
        format!(
            "profiles/foo.toml:{}: field `interface`: expected one of \"ide\", \"scsi\", \"nvme\", got \"usb\"",
            line_of(&bad, "interface")
        )
    );
    // Unsaid, a profile's drive is on SCSI (or libata SATA).
    let plain = good.replace("interface = \"ide\"", "");
    assert_eq!(parse_profile(&plain, "p.toml").unwrap().interface, iosched_disk::profile::Interface::Scsi);

    let bad = good.replace("rpm = 7200", "rpm = -5");
    assert_eq!(
        profile_err(&bad),
        format!("profiles/foo.toml:{}: field `rpm`: expected an integer in 1..=30000, got -5", line_of(&bad, "rpm"))
    );
    // Beyond 64 bits the TOML parser stops first; the error still gives the field's range.
    for big in ["99999999999999999999", "-99_999_999_999_999_999_999"] {
        let bad = good.replace("rpm = 7200", &format!("rpm = {big}"));
        assert_eq!(
            profile_err(&bad),
            format!(
                "profiles/foo.toml:{}: field `rpm`: expected an integer in 1..=30000, got {big}",
                line_of(&bad, "rpm")
            )
        );
    }
    let bad = good.replace("average_seek = \"8.9ms\"", "average_seek = \"8.9\"");
    let e = profile_err(&bad);
    assert!(
        e.starts_with(&format!(
            "profiles/foo.toml:{}: field `average_seek`: expected a duration",
            line_of(&bad, "average_seek")
        )),
        "{e}"
    );
    let bad = good.replace("queue_depth = 1", "queue_depth = 0");
    assert!(profile_err(&bad).contains("field `queue_depth`: expected an integer in 1..=256, got 0"));
    // A section another kind reads is refused, not ignored.
    let bad = good.replace("kind = \"hdd\"", "kind = \"null\"");
    assert_eq!(
        profile_err(&bad),
        format!(
            "profiles/foo.toml:{}: field `disk`: a [disk] section belongs to kind = \"hdd\" profiles; this one is kind = \"null\" (remove the section or change the kind)",
            line_of(&bad, "[disk]")
        )
    );
    let null = "name = \"n\"\nkind = \"null\"\n[null]\nlatency = \"0s\"\n";
    assert!(
        profile_err(null).contains("field `latency`: expected a duration such as \"8.9ms\" in 1ns..=10s, got \"0s\"")
    );
    let bad = good.replace("surfaces = 4", "surfaces = 4\nplatters = 2");
    let e = profile_err(&bad);
    assert!(
        e.starts_with(&format!("profiles/foo.toml:{}:", line_of(&bad, "platters")))
            && e.contains("unknown field `platters`"),
        "{e}"
    );
    let bad = good.replace("read_ahead = \"segment\"", "read_ahead = \"lots\"");
    assert!(profile_err(&bad).contains("field `read_ahead`: expected one of \"none\", \"track\", \"cylinder\", \"segment\", \"one-track\", got \"lots\""));
    let bad = good.replace("destage_high_water = 0.75", "destage_high_water = 1.5");
    assert!(profile_err(&bad).contains("field `destage_high_water`: expected a number in 0..=1, got 1.5"));
    let bad = good.replace("destage_extents = true", "destage_extents = 1");
    let e = profile_err(&bad);
    assert!(
        e.starts_with(&format!("profiles/foo.toml:{}:", line_of(&bad, "destage_extents")))
            && e.contains("field `destage_extents`: expected true or false, got 1"),
        "{e}"
    );
    let bad = good.replace("average_seek = \"8.9ms\"", "average_seek = \"30ms\"");
    assert!(
        profile_err(&bad)
            .contains("field `average_seek`: expected track_to_track_seek < average_seek < full_stroke_seek")
    );
    let bad = good.replace("rpm = 7200\n", "");
    assert!(profile_err(&bad).contains("field `rpm`: missing in [disk]"), "{}", profile_err(&bad));
    let e = load_profile("no-such-profile").unwrap_err().to_string();
    assert!(e.contains("not a built-in profile"), "{e}");
    let e = load_profile("").unwrap_err().to_string();
    assert!(e.starts_with("an empty profile name: expected a built-in profile"), "{e}");
    let e = profile_err(&good.replace("name = \"ide-2003\"", "name = \"\""));
    assert!(e.contains("field `name`: expected a non-empty name"), "{e}");
    let e = profile_err(&good.replace("size = \"2MiB\"", "size = \"2097152\""));
    assert!(e.contains("got \"2097152\" (a unit is required"), "{e}");
    // A null device under 1 MiB is refused like an SSD's (`disk info` measures with 128 KiB
    // commands and 4 KiB random ones).
    let null = iosched_disk::profile::builtin_source("null").unwrap();
    let e = profile_err(&null.replace("capacity = \"1TiB\"", "capacity = \"600B\""));
    assert!(e.contains("field `capacity`: expected a size such as \"128KiB\" in 1048576..="), "{e}");
    // Sizes are exact: no fraction of a byte, and a capacity in whole sectors.
    let e = profile_err(&null.replace("capacity = \"1TiB\"", "capacity = \"1049000B\""));
    assert!(e.contains("field `capacity`: expected a whole number of 512-byte sectors, got 1049000 bytes"), "{e}");
    let e = profile_err(&null.replace("capacity = \"1TiB\"", "capacity = \"1048576.7B\""));
    assert!(e.contains("field `capacity`: expected a whole number of bytes, got \"1048576.7B\""), "{e}");
    // A seek table that extrapolates below zero (or past 200 ms) over the disk's cylinders.
    let datasheet = "track_to_track_seek = \"2.0ms\"\naverage_seek = \"8.9ms\"\nfull_stroke_seek = \"21ms\"\n";
    assert!(good.contains(datasheet));
    let table = |t: &str| good.replace(datasheet, &format!("seek_table = {t}\n"));
    let e = profile_err(&table("[[1, \"5ms\"], [2, \"1ms\"]]"));
    assert!(e.contains("field `seek_table`: extrapolated to distance 29799 (the disk has 29800 cylinders)"), "{e}");
    let e = profile_err(&table("[[1, \"1ms\"], [2, \"300ms\"]]"));
    assert!(e.contains("field `seek_table`: the seek at distance 2 is 300.000 ms"), "{e}");
    load_profile_src(&table("[[1, \"2ms\"], [29799, \"21ms\"]]"));
    // aging belongs to an SPTF controller only.
    let e = profile_err(&good.replace("scheduling = \"fcfs\"", "scheduling = \"fcfs\"\naging = \"0.5ms\""));
    assert!(e.contains("field `aging`: only used with scheduling = \"sptf\""), "{e}");
}

fn load_profile_src(src: &str) {
    parse_profile(src, "profiles/foo.toml").unwrap_or_else(|e| panic!("{e}"));
}

/// `disk info` measures the smallest devices a profile allows without running off their
/// end: it shortens the sequential runs to the capacity.
#[test]
fn disk_info_fits_its_measurements_on_a_small_device() {
    let ssd = iosched_disk::profile::builtin_source("sata-ssd").unwrap();
    for cap in ["1MiB", "1536KiB", "16MiB"] {
        let p =
            parse_profile(&ssd.replace("capacity = \"500GB\"", &format!("capacity = \"{cap}\"")), "tiny.toml").unwrap();
        let i = iosched_disk::info::info(&p);
        assert!(i.seq_read_outer_mb_s > 0.0 && i.random_4k_read_iops_qd1 > 0.0, "{cap}: {i:?}");
    }
    // A rotating disk's capacity comes from its geometry: under 1 MiB it is refused too
    // (200 sectors panicked in disk info).
    let ide = iosched_disk::profile::builtin_source("ide-2003").unwrap();
    let tiny = ide
        .replace("cylinders = 29800", "cylinders = 16")
        .replace("zones = 16", "zones = 1")
        .replace("surfaces = 4", "surfaces = 1")
        .replace("outer_sectors_per_track = 527", "outer_sectors_per_track = 100")
        .replace("inner_sectors_per_track = 316", "inner_sectors_per_track = 100");
    let e = profile_err(&tiny);
    assert!(e.contains("field `cylinders`: the zones hold 1600 sectors; a disk needs at least 1 MiB"), "{e}");
}

#[test]
fn a_profile_file_works_like_a_builtin() {
    let dir = std::env::temp_dir().join(format!("iosched-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    std::fs::write(&path, iosched_disk::profile::builtin_source("scsi-15k").unwrap()).unwrap();
    let p = load_profile(path.to_str().unwrap()).unwrap();
    assert_eq!(p.name, "scsi-15k");
    assert_eq!(p.queue_depth(), 64);
    // Any other name is read as TOML; when it does not parse, the error says so.
    let model = dir.join("atlas10k.model");
    std::fs::write(&model, "disksim_disk atlas10k {\n}\n").unwrap();
    let e = load_profile(model.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("(read as a TOML profile: a profile is a .toml file or a DiskSim .parv)"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
    // A DiskSim model loads as a profile too.
    let parv = disksim::validation_dir().join("ibm18es.parv");
    let p = load_profile(parv.to_str().unwrap()).unwrap();
    assert_eq!(p.capacity_sectors(), 17_916_240);
}

// ---- determinism and the device contract ----------------------------------------------------

fn run_mixed(p: &Profile, seed: u64, qd: u32) -> Vec<(u64, u64)> {
    let mut d = p.build(seed);
    let cap = p.capacity_sectors() / 8;
    let mut rng = SplitMix::from_state(5);
    let mut out = Vec::new();
    let mut next_id = 0u64;
    let mut now = 0u64;
    let mut outstanding = 0u32;
    let total = 3000;
    let mut last_timeout = 0u64;
    while out.len() < total {
        while outstanding < qd && next_id < total as u64 {
            let op = match rng.below(10) {
                0..=5 => Op::Read,
                6..=8 => Op::Write,
                _ => {
                    if rng.below(4) == 0 {
                        Op::Flush
                    } else {
                        Op::Read
                    }
                }
            };
            let seq = rng.below(3) == 0;
            let sector = if seq { (next_id * 64) % (cap * 8 - 64) } else { rng.below(cap) * 8 };
            let len = if op == Op::Flush { 0 } else { 8 * (1 + rng.below(16) as u32) };
            let sector = sector.min(cap * 8 - len as u64);
            d.submit(Instant::from_nanos(now), DiskCommand { id: next_id, op, sector, len_sectors: len });
            next_id += 1;
            outstanding += 1;
            now += rng.below(2_000_000);
        }
        let t = d.poll_timeout().expect("commands outstanding").as_nanos();
        assert!(t >= last_timeout.min(now) || t >= now.saturating_sub(1), "poll_timeout went backwards");
        last_timeout = t;
        now = now.max(t);
        while let Some(c) = d.poll_completion(Instant::from_nanos(now)) {
            assert!(c.at.as_nanos() <= now);
            out.push((c.id, c.at.as_nanos()));
            outstanding -= 1;
        }
    }
    out
}

#[test]
fn same_seed_same_completions() {
    for name in ["ide-2003", "sata-2004-ncq", "scsi-15k", "sata-ssd", "null"] {
        let p = load_profile(name).unwrap();
        let qd = p.queue_depth().min(8);
        let a = run_mixed(&p, 11, qd);
        let b = run_mixed(&p, 11, qd);
        assert_eq!(a, b, "{name}");
        let mut ids: Vec<u64> = a.iter().map(|x| x.0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 3000, "{name}: every command completes exactly once");
        if name.contains('-') && !name.contains("ssd") {
            let c = run_mixed(&p, 12, qd);
            assert_ne!(a, c, "{name}: the seed should move the spindle");
        }
    }
}

#[test]
fn write_cache_completes_on_transfer_and_flush_waits_for_the_media() {
    let p = load_profile("ide-2003").unwrap();
    let mut d = p.build(1);
    let w = DiskCommand { id: 1, op: Op::Write, sector: 1_000_000, len_sectors: 8 };
    d.submit(Instant::ZERO, w);
    let t1 = d.poll_timeout().unwrap();
    let c = d.poll_completion(t1).unwrap();
    assert!(c.at.as_nanos() < 200_000, "a cached write completes after overhead + transfer, got {}", c.at);
    d.submit(c.at, DiskCommand { id: 2, op: Op::Flush, sector: 0, len_sectors: 0 });
    let f = loop {
        let t = d.poll_timeout().unwrap();
        if let Some(c) = d.poll_completion(t) {
            break c;
        }
    };
    assert_eq!(f.id, 2);
    assert!(f.at.as_nanos() > 2_000_000, "the flush waits for the write to reach the media, got {}", f.at);
}

#[test]
fn abutting_cached_writes_are_destaged_as_one_ascending_extent() {
    // An elevator that walks a file backwards sends 124 KiB writes in descending order.
    // With `destage_extents` the drive writes the extent they form from its lowest block
    // up; written one by one in arrival order, each write starts just behind the last one
    // and waits most of a revolution for its first sector.
    let p = load_profile("ide-2003").unwrap();
    let flush_at = |extents: bool| {
        let mut params = (*hdd_params(&p)).clone();
        params.cache.destage_extents = extents;
        let mut d = Hdd::new(Arc::new(params), 1);
        let mut now = Instant::ZERO;
        let submit = |d: &mut Hdd, now: Instant, cmd: DiskCommand| {
            d.submit(now, cmd);
            loop {
                let t = d.poll_timeout().unwrap();
                if let Some(c) = d.poll_completion(t) {
                    assert_eq!(c.id, cmd.id);
                    return c.at;
                }
            }
        };
        for i in 0..6u64 {
            let w = DiskCommand { id: i, op: Op::Write, sector: 2_000_000 - (i + 1) * 248, len_sectors: 248 };
            now = submit(&mut d, now, w);
        }
        let start = now;
        let f = submit(&mut d, now, DiskCommand { id: 9, op: Op::Flush, sector: 0, len_sectors: 0 });
        (f.as_nanos() - start.as_nanos()) as f64 / 1e6
    };
    let (one_pass, one_by_one) = (flush_at(true), flush_at(false));
    // The first write is destaged alone while the others arrive (the drive is idle between
    // commands); the other five (1240 sectors on 527-sector tracks) then take one pass:
    // about 34 ms in all, against about 66 ms one by one.
    assert!(one_pass < 40.0, "one ascending pass, got {one_pass:.1} ms");
    assert!(one_by_one > one_pass + 20.0, "one by one {one_by_one:.1} ms vs one pass {one_pass:.1} ms");
}

#[test]
fn read_ahead_turns_sequential_reads_into_hits_and_yields_to_new_commands() {
    let p = load_profile("ide-2003").unwrap();
    let mut d = p.build(1);
    let mut now = 0u64;
    let mut lat = Vec::new();
    for i in 0..4u64 {
        d.submit(
            Instant::from_nanos(now),
            DiskCommand { id: i, op: Op::Read, sector: 5_000_000 + i * 8, len_sectors: 8 },
        );
        let c = loop {
            let t = d.poll_timeout().unwrap();
            if let Some(c) = d.poll_completion(t) {
                break c;
            }
        };
        lat.push(c.at.as_nanos() - now);
        now = c.at.as_nanos() + 3_000_000;
    }
    assert!(lat[0] > 2_000_000, "first read is a miss");
    for l in &lat[1..] {
        assert!(*l < 200_000, "following reads are buffer hits: {lat:?}");
    }
    // A far read right after a sequential miss does not wait for the read-ahead to finish.
    let t0 = now;
    d.submit(Instant::from_nanos(t0), DiskCommand { id: 9, op: Op::Read, sector: 40_000_000, len_sectors: 8 });
    let c = loop {
        let t = d.poll_timeout().unwrap();
        if let Some(c) = d.poll_completion(t) {
            break c;
        }
    };
    assert!(c.at.as_nanos() - t0 < 35_000_000);
}

#[test]
fn robust_under_mixed_loads_on_every_drive() {
    // Overlapping, sequential and random, small and large, reads, writes, flushes and
    // discards at every queue depth the drive accepts: every command completes once,
    // never before it was submitted, and time moves forward.
    let mut names: Vec<String> =
        ["ide-2003", "ide-2003-fast", "sata-2004-ncq", "scsi-15k", "sata-ssd", "nvme-ssd", "null"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    for d in ["atlas10k", "hp_c2247a", "dec_rz26", "ibm18es"] {
        names.push(disksim::validation_dir().join(format!("{d}.parv")).to_string_lossy().into_owned());
    }
    for name in names {
        let p = load_profile(&name).unwrap();
        for seed in 0..3u64 {
            let qd = p.queue_depth().min(16);
            let mut d = p.build(seed);
            let cap = p.capacity_sectors();
            let mut rng = SplitMix::from_state(seed * 77 + 1);
            let mut submitted = vec![0u64; 1500];
            let mut done = vec![false; 1500];
            let (mut next, mut outstanding, mut completed, mut now) = (0usize, 0u32, 0usize, 0u64);
            let mut hot = rng.below(cap / 2);
            while completed < 1500 {
                while outstanding < qd && next < 1500 {
                    let op = match rng.below(20) {
                        0 => Op::Flush,
                        1 => Op::Discard,
                        2..=9 => Op::Write,
                        _ => Op::Read,
                    };
                    let len = match rng.below(4) {
                        0 => 1 + rng.below(8) as u32,
                        1 => 8,
                        2 => 8 * (1 + rng.below(32) as u32),
                        _ => 8 * (1 + rng.below(256) as u32),
                    };
                    let len = if op == Op::Flush { 0 } else { len };
                    let sector = match rng.below(3) {
                        0 => {
                            hot += len as u64;
                            hot
                        }
                        1 => hot.saturating_sub(rng.below(512)),
                        _ => rng.below(cap),
                    }
                    .min(cap - len.max(1) as u64);
                    submitted[next] = now;
                    d.submit(Instant::from_nanos(now), DiskCommand { id: next as u64, op, sector, len_sectors: len });
                    next += 1;
                    outstanding += 1;
                    if rng.below(3) == 0 {
                        now += rng.below(20_000_000);
                    }
                }
                let t = d
                    .poll_timeout()
                    .unwrap_or_else(|| panic!("{name}: stuck with {outstanding} outstanding"))
                    .as_nanos();
                now = now.max(t);
                while let Some(c) = d.poll_completion(Instant::from_nanos(now)) {
                    let i = c.id as usize;
                    assert!(!done[i], "{name}: {i} completed twice");
                    assert!(c.at.as_nanos() >= submitted[i] && c.at.as_nanos() <= now, "{name}: bad completion time");
                    done[i] = true;
                    completed += 1;
                    outstanding -= 1;
                }
            }
        }
    }
}

#[test]
fn the_profile_format_example_in_the_docs_parses() {
    let doc = include_str!("../../../docs/disk-profiles.md");
    let start = doc.find("```toml\n").expect("an example") + 8;
    let end = start + doc[start..].find("```").unwrap();
    let p = parse_profile(&doc[start..end], "docs/disk-profiles.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.name, "ide-2003");
}

/// Queued sequential reads on an NCQ drive keep the media rate: a command the read-ahead
/// is already fetching is served before commands further along the track (SPTF costing it
/// as a media access made each lose a revolution: ~26 MB/s at depth 4 instead of ~76).
#[test]
fn ncq_sequential_reads_keep_the_media_rate_at_any_depth() {
    let p = iosched_disk::profile::load_profile("sata-2004-ncq").unwrap();
    let rate = |qd: u32| {
        let mut dev = p.build(1);
        let n = 1000;
        let (ends, _) = iosched_disk::info::closed_loop(&mut dev, qd, n, |i| iosched_disk::DiskCommand {
            id: 0,
            op: iosched_core::Op::Read,
            sector: 1_000_000 + i as u64 * 128,
            len_sectors: 128,
        });
        n as f64 * 65536.0 / (*ends.last().unwrap() as f64 / 1e9) / 1e6
    };
    let one = rate(1);
    for qd in [2, 4, 8, 32] {
        let r = rate(qd);
        assert!(r > 0.95 * one, "depth {qd}: {r:.1} MB/s against {one:.1} at depth 1");
    }
}

/// "Nothing is allocated per request in the hot paths" (docs/disk-models.md), measured:
/// after a warm-up of 20,000 commands on the same device, 20,000 more in a closed loop
/// allocate the loop's own three result vectors and, at most, an internal list growing
/// to a new largest size now and then (one in 20,000 commands for the SSD).
#[test]
fn device_models_do_not_allocate_per_request() {
    const N: usize = 20_000;
    let cases: [(&str, u32, Op, bool, u32); 6] = [
        ("ide-2003", 1, Op::Read, false, 8),
        ("ide-2003", 1, Op::Read, true, 256),
        ("ide-2003", 1, Op::Write, false, 8),
        ("ide-2003", 4, Op::Write, true, 8),
        ("sata-2004-ncq", 32, Op::Read, false, 8),
        ("nvme-ssd", 32, Op::Read, false, 8),
    ];
    let mut failures = Vec::new();
    for (prof, qd, op, sequential, len) in cases {
        let p = load_profile(prof).unwrap();
        let mut d = p.build(1);
        let cap = p.capacity_sectors() / len as u64;
        let mut rng = SplitMix::from_state(7);
        let mut next = move |i: usize| {
            let sector = if sequential { (i as u64 % cap) * len as u64 } else { rng.below(cap) * len as u64 };
            DiskCommand { id: 0, op, sector, len_sectors: len }
        };
        closed_loop(&mut d, qd, N, &mut next);
        let n = allocation_counter::measure(|| {
            closed_loop(&mut d, qd, N, &mut next);
        })
        .count_total;
        if n > 3 + (N / 1000) as u64 {
            failures
                .push(format!("{prof}, QD {qd}, {op:?}, sequential {sequential}: {n} allocations for {N} commands"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
