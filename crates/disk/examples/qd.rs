use iosched_core::Op;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let p = iosched_disk::load_profile(&a[1]).unwrap();
    for qd in [1u32, 2, 4, 8, 16, 32, 64, 128, 256] {
        let (iops, ms) = iosched_disk::info::random_4k(&p, Op::Read, qd, 50_000);
        println!("QD{qd}: {iops:.0} IOPS, {:.1} us", ms * 1000.0);
    }
}
