//! aio-stress: stages, batches of io_iter, the depth bound, random offsets, fsync,
//! threads and stonewalling.

use super::{file, machine, spec, task_ops};
use iosched_workloads::aio_stress::{self, AioStressConfig, GlibcRand, Stage, random_byte_offset};

const K: u64 = 1024;
const M: u64 = 1 << 20;

fn small(direct: bool) -> AioStressConfig {
    let mut c = AioStressConfig::new(machine(2));
    c.file_size = 4 * M;
    c.record = 64 * K;
    c.depth = 8;
    c.io_iter = 3;
    c.direct = direct;
    c.record_ops = true;
    c
}

#[test]
fn direct_stages_submit_in_batches_within_the_depth() {
    let c = small(true);
    let r = aio_stress::run(&spec("cfq"), &c).unwrap();
    let ops = task_ops(&r.ops, "aio-stress/0");
    assert_eq!((ops[0].kind, file(ops[0])), ("open", "aio-stress.0"));
    // Split at the stage fsyncs.
    let mut stages = Vec::new();
    let mut cur = Vec::new();
    for o in &ops[1..] {
        if o.kind == "fsync" {
            stages.push(std::mem::take(&mut cur));
        } else {
            cur.push(*o);
        }
    }
    assert_eq!(cur.iter().map(|o| o.kind).collect::<Vec<_>>(), ["close"]);
    assert_eq!(stages.len(), 4);
    let mut rand = GlibcRand::default();
    for (st, stage) in stages.iter().zip(Stage::ALL) {
        let subs: Vec<_> = st.iter().filter(|o| o.kind == "aio-submit").collect();
        assert_eq!(subs.len(), 64, "{stage:?}: (end − start) / record I/Os");
        let want: Vec<u64> = match stage {
            Stage::Write | Stage::Read => (0..64).map(|i| i * 64 * K).collect(),
            _ => (0..64).map(|_| random_byte_offset(&mut rand, 0, 4 * M, 64 * K)).collect(),
        };
        assert_eq!(subs.iter().map(|o| o.offset).collect::<Vec<_>>(), want, "{stage:?}");
        let write = matches!(stage, Stage::Write | Stage::RandomWrite) as u64;
        assert!(subs.iter().all(|o| o.arg == write && o.len == 64 * K));
        // Batches of io_iter (3) iocbs go to one io_submit: the waits for free io units
        // come before a batch, never inside it, so runs of submissions are whole batches
        // (64 = 21 × 3 + a last batch of 1). Never more than depth (8) pending.
        let (mut pending, mut runs, mut run) = (0u64, Vec::new(), 0);
        for o in st {
            match o.kind {
                "aio-submit" => {
                    pending += 1;
                    run += 1;
                    assert!(pending <= 8, "{stage:?}: depth exceeded");
                }
                "aio-wait" => {
                    if run > 0 {
                        runs.push(run);
                    }
                    run = 0;
                    assert!(o.result >= 1, "{stage:?}: a wait returns at least one event");
                    pending -= o.result;
                }
                k => panic!("{k}"),
            }
        }
        let last = runs.pop().unwrap();
        assert!(runs.iter().all(|r| r % 3 == 0), "{stage:?}: {runs:?}");
        assert_eq!(last % 3, 1, "{stage:?}");
        assert_eq!(pending, 0, "{stage:?}: all reaped before the fsync");
    }
    // The output: a line per file and per thread per stage; the totals include the fsync.
    let out = r.output.join("\n");
    assert!(out.contains("file size 4MB, record size 64KB, depth 8, ios per iteration 3"), "{out}");
    assert!(out.contains("Running single thread version "));
    for s in Stage::ALL {
        assert!(out.contains(&format!("{} on aio-stress.0 (", s.name())), "{out}");
        assert!(out.contains(&format!("thread 0 {} totals (", s.name())), "{out}");
    }
    for s in &r.stages {
        assert_eq!(s.thread_mb, [4.0]);
        assert!((s.mb_s() - 4.0 / s.thread_s[0]).abs() < 1e-9);
    }
}

#[test]
fn buffered_aio_is_synchronous_reads_and_writes() {
    let mut c = small(false);
    c.stages = vec![Stage::Read, Stage::Write];
    let r = aio_stress::run(&spec("cfq"), &c).unwrap();
    let ops = task_ops(&r.ops, "aio-stress/0");
    // -o picks stages but they run in aio-stress's order: write, then read.
    let kinds: Vec<&str> = ops.iter().map(|o| o.kind).filter(|k| *k == "read" || *k == "write").collect();
    assert_eq!(kinds.len(), 128);
    assert!(kinds[..64].iter().all(|k| *k == "write") && kinds[64..].iter().all(|k| *k == "read"));
    assert_eq!(ops.iter().filter(|o| o.kind == "aio-submit").count(), 0);
    assert_eq!(r.stages.iter().map(|s| s.stage).collect::<Vec<_>>(), [Stage::Write, Stage::Read]);
    assert!(r.output[0] == "adding stage read" && r.output[1] == "adding stage write", "{:?}", r.output);
    assert_eq!(r.output[2], "starting with write");
}

#[test]
fn threads_meet_at_barriers_and_report_the_combined_throughput() {
    let mut c = small(true);
    c.threads = 2;
    c.stages = vec![Stage::Write, Stage::Read];
    let r = aio_stress::run(&spec("cfq"), &c).unwrap();
    for t in 0..2 {
        let ops = task_ops(&r.ops, &format!("aio-stress/{t}"));
        assert_eq!(file(ops[0]), format!("aio-stress.{t}"));
    }
    let out = r.output.join("\n");
    assert!(out.contains("Running multi thread version num_threads:2"));
    assert!(out.contains("write throughput ("), "{out}");
    assert!(out.contains(" min transfer "), "{out}");
    let g = r.stages[0].global.unwrap();
    assert!(g.0 > 0.0 && g.0 <= 8.0 && g.1 > 0.0);
    // Stonewalling: once one thread finished a stage the other stops submitting, so the
    // combined amount may fall short of 2 × 4 MB but each thread moved something.
    assert!(r.stages[0].thread_mb.iter().all(|&mb| mb > 0.0));
}

#[test]
fn same_offsets_every_seed() {
    let mut c = small(true);
    c.stages = vec![Stage::RandomRead];
    let a = aio_stress::run(&spec("cfq"), &c).unwrap();
    c.machine.seed = 99;
    let b = aio_stress::run(&spec("cfq"), &c).unwrap();
    let offs = |r: &aio_stress::AioStressReport| -> Vec<u64> {
        r.ops.iter().filter(|o| o.kind == "aio-submit").map(|o| o.offset).collect()
    };
    assert_eq!(offs(&a), offs(&b), "unseeded rand(): a rerun repeats the offsets");
}

#[test]
fn bad_options_are_refused() {
    let base = AioStressConfig::new(machine(1));
    let err = |f: &dyn Fn(&mut AioStressConfig)| {
        let mut c = base.clone();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert!(err(&|c| c.file_size = 0).contains("-s 0"));
    assert!(err(&|c| c.record = 0).contains("-r 0"));
    assert!(err(&|c| c.record = 2 << 30).contains("larger than the file"));
    assert!(err(&|c| c.depth = 0).contains("-d 0"));
    assert!(err(&|c| c.threads = 0).contains("-t 0"));
    assert!(
        err(&|c| {
            c.direct = true;
            c.record = 6000;
        })
        .contains("O_DIRECT")
    );
    assert!(err(&|c| c.file_size = M).contains("at least 2 MiB"));
    assert!(Stage::from_number(4).unwrap_err().contains("-o 4"));
}

/// The echoed command line gives sizes in a unit aio-stress reads back exactly (a bare
/// number would be MiB after -s and KiB after -r).
#[test]
fn command_line_sizes_read_back_exactly() {
    let mut c = small(false);
    assert!(c.command_line().starts_with("aio-stress -s 4m -r 64k "), "{}", c.command_line());
    c.file_size = 4100 * K;
    c.record = 1500;
    assert!(c.command_line().starts_with("aio-stress -s 4100k -r 1500b "), "{}", c.command_line());
    c.record = M;
    assert!(c.command_line().contains(" -r 1024k "), "{}", c.command_line());
}
