//! SIGINT and SIGTERM. The binary owns them, not the libraries (as ripgrep does): the first
//! signal sets one flag and says so on stderr; every run watches that flag — a simulated
//! run through [`iosched_workloads::machine::Limits::interrupt`], a real one through
//! [`iosched_rt::workload::Control::stop`] — and stops at its next step, printing what a
//! partial report can hold. A second signal exits at once with status 130.
//!
//! SIGTERM behaves as SIGINT so that `timeout 10 iosched real …` keeps its report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The flag the first SIGINT or SIGTERM sets; the handler is installed on the first call.
pub fn interrupt_flag() -> Result<Arc<AtomicBool>, String> {
    static FLAG: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            eprintln!("\niosched: stopping (a second Ctrl-C or SIGTERM aborts at once)");
        })
        .map_err(|e| format!("cannot install the SIGINT/SIGTERM handler: {e}"))?;
        Ok(flag)
    })
    .clone()
}

/// Whether a SIGINT or SIGTERM has arrived (false before the handler is installed).
pub fn interrupted() -> bool {
    interrupt_flag().map(|f| f.load(Ordering::SeqCst)).unwrap_or(false)
}
