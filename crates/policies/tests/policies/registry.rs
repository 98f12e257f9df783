//! Registry and tunable errors: names, aliases, units, ranges.

use iosched_policies::{SchedSpec, parse_list};

#[test]
fn aliases_resolve_to_kernel_names() {
    assert_eq!(SchedSpec::parse("as").unwrap().name, "anticipatory");
    assert_eq!(SchedSpec::parse("none").unwrap().name, "noop");
    assert_eq!(SchedSpec::parse("CFQ").unwrap().name, "cfq");
    assert_eq!(SchedSpec::parse("cfq-v1").unwrap().name, "cfq-v1");
    assert_eq!(SchedSpec::parse("mq_deadline").unwrap().name, "mq-deadline");
}

#[test]
fn unknown_scheduler_lists_the_available_ones() {
    let e = SchedSpec::parse("bfq-turbo").unwrap_err().to_string();
    assert!(e.contains("unknown scheduler `bfq-turbo`"), "{e}");
    for n in ["noop", "deadline", "anticipatory (alias as)", "cfq", "cfq-v1", "mq-deadline"] {
        assert!(e.contains(n), "{e} should list {n}");
    }
}

#[test]
fn unknown_tunable_lists_the_allowed_ones() {
    let e = SchedSpec::parse("deadline:antic_expire=6").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("has no tunable `antic_expire`"), "{e}");
    assert!(e.contains("read_expire") && e.contains("fifo_batch") && e.contains("nr_requests"), "{e}");
}

#[test]
fn values_with_units_are_converted_and_checked() {
    let (_, s) = SchedSpec::parse("as:antic_expire=0,read_expire=250ms").unwrap().build().unwrap();
    assert_eq!(s.get_tunable("antic_expire"), Some(0));
    assert_eq!(s.get_tunable("read_expire"), Some(250));
    let (_, s) = SchedSpec::parse("cfq:slice_sync=1s").unwrap().build().unwrap();
    assert_eq!(s.get_tunable("slice_sync"), Some(1000));
}

#[test]
fn bad_units_are_rejected() {
    let e = SchedSpec::parse("as:antic_expire=6 parsecs").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("bad value") && e.contains("milliseconds"), "{e}");
    let e = SchedSpec::parse("as:antic_expire=1500us").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("whole number of milliseconds"), "{e}");
}

#[test]
fn out_of_range_values_are_rejected_not_clamped() {
    let e = SchedSpec::parse("cfq:quantum=0").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("out of range") && e.contains("1..="), "{e}");
    let e = SchedSpec::parse("deadline:nr_requests=2").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("out of range") && e.contains("4..="), "{e}");
    let e = SchedSpec::parse("noop:hz=200").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("allowed 100 | 250 | 300 | 1000"), "{e}");
    // Below the smallest, the same list (not a 100..=1000 range that 200 would be in).
    let e = SchedSpec::parse("noop:hz=99").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("allowed 100 | 250 | 300 | 1000"), "{e}");
    // The tunable's list is the tick rates the time layer accepts.
    let hz = iosched_core::QUEUE_TUNABLES.iter().find(|s| s.name == "hz").unwrap();
    let iosched_core::tunable::Kind::Values(vs) = hz.kind else { panic!("hz is a list of values") };
    assert_eq!(vs.iter().map(|&v| v as u32).collect::<Vec<_>>(), iosched_core::Hz::ALLOWED);
    let e = SchedSpec::parse("cfq:defer_slice_start=2").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("0 or 1"), "{e}");
}

#[test]
fn queue_tunables_apply_to_any_scheduler() {
    let (cfg, _) = SchedSpec::parse("as:nr_requests=8192,queue_depth=32,plugging=off").unwrap().build().unwrap();
    assert_eq!(cfg.nr_requests, 8192);
    assert_eq!(cfg.depth, 32);
    assert!(!cfg.plugging);
}

#[test]
fn hz_changes_jiffy_defaults() {
    let (_, s) = SchedSpec::parse("as:hz=250").unwrap().build().unwrap();
    // HZ/150 = 1 jiffy = 4 ms at HZ=250.
    assert_eq!(s.get_tunable("antic_expire"), Some(4));
    let (_, s) = SchedSpec::parse("cfq:hz=100").unwrap().build().unwrap();
    // slice_idle HZ/125 = 0 is forced to 1 jiffy = 10 ms.
    assert_eq!(s.get_tunable("slice_idle"), Some(10));
}

#[test]
fn list_syntax_errors_are_clear() {
    assert!(parse_list("").is_err());
    assert!(parse_list("as,,deadline").unwrap_err().to_string().contains("empty"));
    assert!(parse_list("as:antic_expire").unwrap_err().to_string().contains("key=value"));
    // One knob once per spec: the same name twice, or two names for it in other units.
    let e = parse_list("deadline:fifo_batch=1,fifo_batch=2").unwrap_err().to_string();
    assert!(e.contains("`fifo_batch` is given twice"), "{e}");
    let e = parse_list("bfq:slice_idle=5,slice_idle_us=100").unwrap_err().to_string();
    assert!(e.contains("one of `slice_idle` and `slice_idle_us`"), "{e}");
    let e = parse_list("deadline:max_sectors_kb=64,max_sectors=128").unwrap_err().to_string();
    assert!(e.contains("one of `max_sectors_kb` and `max_sectors`"), "{e}");
    // The same name in two schedulers of a list is fine.
    parse_list("deadline:fifo_batch=1,as:nr_requests=64,cfq:quantum=4,deadline:fifo_batch=2").unwrap();
}

/// `--set` settings show in the spec's label, so a report names what actually ran.
#[test]
fn added_settings_show_in_the_label() {
    let s = SchedSpec::parse("as").unwrap().with_setting("antic_expire", "0");
    assert_eq!(s.text, "as:antic_expire=0");
    let s = SchedSpec::parse("as:antic_expire=0").unwrap().with_setting("antic_expire", "6");
    assert_eq!(s.text, "as:antic_expire=0,antic_expire=6");
    let (_, p) = s.build().unwrap();
    assert_eq!(p.get_tunable("antic_expire"), Some(6), "later settings win");
}

/// Kyber's targets are nanoseconds in sysfs; human units convert exactly.
#[test]
fn nanosecond_tunables_take_units() {
    let (_, k) = SchedSpec::parse("kyber:read_lat_nsec=1.5ms,write_lat_nsec=250us").unwrap().build().unwrap();
    assert_eq!(k.get_tunable("read_lat_nsec"), Some(1_500_000));
    assert_eq!(k.get_tunable("write_lat_nsec"), Some(250_000));
    let e = SchedSpec::parse("kyber:read_lat_nsec=0.5ns").unwrap().build().err().unwrap().to_string();
    assert!(e.contains("nanoseconds"), "{e}");
}
