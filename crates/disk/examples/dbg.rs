use iosched_disk::disksim;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let dir = disksim::validation_dir();
    let p = disksim::load_parv(&dir.join(format!("{}.parv", a[1]))).unwrap();
    for x in &a[2..] {
        let l: u64 = x.parse().unwrap();
        let t = p.layout.track_of(l);
        let pb = p.layout.ltop(l);
        println!(
            "lbn {l}: {:?} track first {} end {} spt {} rot_off {}",
            pb, t.first, t.end, t.spt, t.rot_offset
        );
    }
}
