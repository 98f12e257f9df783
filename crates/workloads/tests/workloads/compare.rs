//! The A/B study engine on small benchmark items.

use super::{machine, spec};
use iosched_workloads::aio_stress::{AioStressConfig, Stage};
use iosched_workloads::compare::{self, CompareConfig, Item};
use iosched_workloads::stats;
use iosched_workloads::sysbench::{SysbenchConfig, TestMode};

fn items() -> Vec<Item> {
    let mut s = SysbenchConfig::new(TestMode::RndRw, machine(1));
    s.file_num = 4;
    s.file_total_size = 4 << 20;
    s.time = None;
    s.events = 100;
    let mut a = AioStressConfig::new(machine(1));
    a.file_size = 4 << 20;
    a.direct = true;
    a.stages = vec![Stage::Write, Stage::RandomRead];
    vec![Box::new(s), Box::new(a)]
}

#[test]
fn rows_per_test_with_means_and_deviations_over_the_seeds() {
    let cfg = CompareConfig { a: spec("cfq"), b: spec("deadline"), items: items(), runs: 3, first_seed: 7 };
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let r = compare::run(&cfg, &|_, total, _| {
        assert_eq!(total, 2 * 2 * 3);
        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(calls.into_inner(), 12);
    assert_eq!(r.seeds, [7, 8, 9]);
    let names: Vec<(&str, &str)> = r.rows.iter().map(|x| (x.bench.as_str(), x.test.as_str())).collect();
    assert_eq!(names, [("sysbench", "rndrw"), ("aio-stress", "direct write"), ("aio-stress", "direct random read")]);
    // Each row is the arithmetic of the per-seed runs.
    let item = &cfg.items[0];
    let a: Vec<f64> = cfg_seeds(&cfg).iter().map(|&s| item.measure(&cfg.a, s).unwrap()[0].value).collect();
    let b: Vec<f64> = cfg_seeds(&cfg).iter().map(|&s| item.measure(&cfg.b, s).unwrap()[0].value).collect();
    let row = &r.rows[0];
    assert_eq!(row.a_mean, stats::mean(&a));
    assert_eq!(row.b_mean, stats::mean(&b));
    assert_eq!(row.a_cv_pct, stats::cv_pct(&a));
    assert_eq!(row.change_pct, stats::change_pct(row.a_mean, row.b_mean));
    assert_eq!(row.within_variation, stats::within_variation(row.change_pct, row.a_cv_pct, row.b_cv_pct));
    assert_eq!(row.unit, "MiB/s");
    // sysbench's offsets vary with the seed, so its runs differ.
    assert!(row.a_cv_pct > 0.0);
    let text = compare::render(&r);
    assert!(text.contains("A = cfq, B = deadline; 3 run(s) each, seeds 7..9"), "{text}");
}

fn cfg_seeds(c: &CompareConfig) -> Vec<u64> {
    (0..c.runs as u64).map(|k| c.first_seed + k).collect()
}

#[test]
fn a_against_itself_changes_nothing() {
    let cfg = CompareConfig { a: spec("cfq"), b: spec("cfq"), items: items(), runs: 2, first_seed: 1 };
    let r = compare::run(&cfg, &|_, _, _| {}).unwrap();
    for row in &r.rows {
        assert_eq!(row.a_mean, row.b_mean);
        assert_eq!(row.change_pct, 0.0);
    }
}

#[test]
fn bad_study_options() {
    let cfg = CompareConfig { a: spec("cfq"), b: spec("cfq"), items: items(), runs: 0, first_seed: 1 };
    assert!(compare::run(&cfg, &|_, _, _| {}).unwrap_err().to_string().contains("--runs 0"));
    let cfg = CompareConfig { runs: 1, items: vec![], ..cfg };
    assert!(compare::run(&cfg, &|_, _, _| {}).unwrap_err().to_string().contains("--bench"));
    let e = compare::items("seed-2008", &machine(1)).unwrap_err();
    assert!(e.contains("seed-2008") && e.contains("seed-2007"), "{e}");
}
