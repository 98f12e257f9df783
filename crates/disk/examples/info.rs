//! Print `info()` for every built-in profile (or the ones named).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<String> = if args.is_empty() {
        iosched_disk::builtin_profiles().into_iter().map(|(n, _)| n.to_string()).collect()
    } else {
        args
    };
    for n in names {
        let p = iosched_disk::load_profile(&n).unwrap_or_else(|e| panic!("{e}"));
        let t = std::time::Instant::now();
        let i = iosched_disk::info(&p);
        println!("{}", serde_json::to_string_pretty(&i).unwrap());
        eprintln!("({n}: {:.2} s)", t.elapsed().as_secs_f64());
    }
}
