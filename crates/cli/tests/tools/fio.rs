//! Our fio output through fio's own tools.

use crate::{TempDir, iosched};
use serde_json::Value;
use std::process::Command;

/// `fio_jsonplus_clat2csv` (fio's `tools/`, in the Debian package) converts our json+
/// output and validates its CSV against it; the CSV's counts are our I/Os.
pub fn fios_jsonplus_script_reads_our_json_plus() {
    let t = TempDir::new("jsonplus");
    let out = t.s("out.json");
    let job = ["--name=mixed", "--rw=randrw", "--size=8M", "--direct=1", "--ioengine=libaio", "--iodepth=8"];
    let mut args = vec!["fio", "--output-format", "json+", "--output", &out, "--"];
    args.extend(job);
    args.extend(["--name=seq", "--rw=write", "--size=4M"]);
    iosched(&args);
    let csv = t.s("lat.csv");
    for extra in [None, Some("--validate")] {
        let mut c = Command::new("fio_jsonplus_clat2csv");
        c.args([&out, &csv]).args(extra);
        let o = c.output().expect("run fio_jsonplus_clat2csv");
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "fio_jsonplus_clat2csv {extra:?}: {text}");
        if extra.is_some() {
            assert_eq!(text.matches("validated").count(), 2, "{text}");
        }
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for (n, job) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let text = std::fs::read_to_string(t.join(&format!("lat_job{n}.csv"))).unwrap();
        let head: Vec<String> = text.lines().next().unwrap().split(',').map(|c| c.trim().to_string()).collect();
        for dir in ["read", "write"] {
            let col = head.iter().position(|c| *c == format!("{dir}_clat_ns_count")).unwrap();
            let sum: u64 = text
                .lines()
                .skip(1)
                .filter_map(|l| l.split(',').nth(col).and_then(|c| c.trim().parse::<u64>().ok()))
                .sum();
            assert_eq!(sum, job[dir]["total_ios"].as_u64().unwrap(), "job {n} {dir}");
        }
    }
}
