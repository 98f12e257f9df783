//! DiskSim 4.0's validation data (`data/disksim/`, with its COPYING there), embedded in
//! the binary so that `iosched disk validate` works wherever the binary is — installed,
//! moved, or without the source tree. 4.6 MB: the parameter, model, seek and trace files
//! of the ten drives (not DiskSim's own `.outv` outputs).
//!
//! The files are reached through the virtual directory [`DIR`]: the DiskSim parser and the
//! trace reader look a path under it up here instead of on disk, so `source` statements
//! between the files resolve as they do in the repository.

use std::path::Path;

/// The virtual directory the embedded files are read from.
pub const DIR: &str = "<built-in>/disksim";

/// (file name, contents).
static FILES: &[(&str, &str)] = &[
    ("atlas10k.diskspecs", include_str!("../../../../data/disksim/atlas10k.diskspecs")),
    ("atlas10k.model", include_str!("../../../../data/disksim/atlas10k.model")),
    ("atlas10k.parv", include_str!("../../../../data/disksim/atlas10k.parv")),
    ("atlas10k.seek", include_str!("../../../../data/disksim/atlas10k.seek")),
    ("atlas10k.trace", include_str!("../../../../data/disksim/atlas10k.trace")),
    ("atlas_III.diskspecs", include_str!("../../../../data/disksim/atlas_III.diskspecs")),
    ("atlas_III.model", include_str!("../../../../data/disksim/atlas_III.model")),
    ("atlas_III.parv", include_str!("../../../../data/disksim/atlas_III.parv")),
    ("atlas_III.seek", include_str!("../../../../data/disksim/atlas_III.seek")),
    ("atlas_III.trace", include_str!("../../../../data/disksim/atlas_III.trace")),
    ("barracuda.diskspecs", include_str!("../../../../data/disksim/barracuda.diskspecs")),
    ("barracuda.model", include_str!("../../../../data/disksim/barracuda.model")),
    ("barracuda.parv", include_str!("../../../../data/disksim/barracuda.parv")),
    ("barracuda.seek", include_str!("../../../../data/disksim/barracuda.seek")),
    ("barracuda.trace", include_str!("../../../../data/disksim/barracuda.trace")),
    ("cheetah4LP.diskspecs", include_str!("../../../../data/disksim/cheetah4LP.diskspecs")),
    ("cheetah4LP.model", include_str!("../../../../data/disksim/cheetah4LP.model")),
    ("cheetah4LP.parv", include_str!("../../../../data/disksim/cheetah4LP.parv")),
    ("cheetah4LP.seek", include_str!("../../../../data/disksim/cheetah4LP.seek")),
    ("cheetah4LP.trace", include_str!("../../../../data/disksim/cheetah4LP.trace")),
    ("cheetah9LP.diskspecs", include_str!("../../../../data/disksim/cheetah9LP.diskspecs")),
    ("cheetah9LP.model", include_str!("../../../../data/disksim/cheetah9LP.model")),
    ("cheetah9LP.parv", include_str!("../../../../data/disksim/cheetah9LP.parv")),
    ("cheetah9LP.seek", include_str!("../../../../data/disksim/cheetah9LP.seek")),
    ("cheetah9LP.trace", include_str!("../../../../data/disksim/cheetah9LP.trace")),
    ("dec_rz26.diskspecs", include_str!("../../../../data/disksim/dec_rz26.diskspecs")),
    ("dec_rz26.parv", include_str!("../../../../data/disksim/dec_rz26.parv")),
    ("dec_rz26.trace", include_str!("../../../../data/disksim/dec_rz26.trace")),
    ("dec_rz26_validate.model", include_str!("../../../../data/disksim/dec_rz26_validate.model")),
    ("dec_rz26_validate.seek", include_str!("../../../../data/disksim/dec_rz26_validate.seek")),
    ("hp_c2247a.diskspecs", include_str!("../../../../data/disksim/hp_c2247a.diskspecs")),
    ("hp_c2247a.parv", include_str!("../../../../data/disksim/hp_c2247a.parv")),
    ("hp_c2247a.trace", include_str!("../../../../data/disksim/hp_c2247a.trace")),
    ("hp_c2247a_validate.model", include_str!("../../../../data/disksim/hp_c2247a_validate.model")),
    ("hp_c2490a.diskspecs", include_str!("../../../../data/disksim/hp_c2490a.diskspecs")),
    ("hp_c2490a.parv", include_str!("../../../../data/disksim/hp_c2490a.parv")),
    ("hp_c2490a.trace", include_str!("../../../../data/disksim/hp_c2490a.trace")),
    ("hp_c2490a_validate.model", include_str!("../../../../data/disksim/hp_c2490a_validate.model")),
    ("hp_c2490a_validate.seek", include_str!("../../../../data/disksim/hp_c2490a_validate.seek")),
    ("hp_c3323a.diskspecs", include_str!("../../../../data/disksim/hp_c3323a.diskspecs")),
    ("hp_c3323a.model", include_str!("../../../../data/disksim/hp_c3323a.model")),
    ("hp_c3323a.parv", include_str!("../../../../data/disksim/hp_c3323a.parv")),
    ("hp_c3323a.seek", include_str!("../../../../data/disksim/hp_c3323a.seek")),
    ("hp_c3323a.trace", include_str!("../../../../data/disksim/hp_c3323a.trace")),
    ("hp_c3323a_validate.diskspecs", include_str!("../../../../data/disksim/hp_c3323a_validate.diskspecs")),
    ("hp_c3323a_validate.model", include_str!("../../../../data/disksim/hp_c3323a_validate.model")),
    ("hp_c3323a_validate.seek", include_str!("../../../../data/disksim/hp_c3323a_validate.seek")),
    ("ibm18es.diskspecs", include_str!("../../../../data/disksim/ibm18es.diskspecs")),
    ("ibm18es.model", include_str!("../../../../data/disksim/ibm18es.model")),
    ("ibm18es.parv", include_str!("../../../../data/disksim/ibm18es.parv")),
    ("ibm18es.seek", include_str!("../../../../data/disksim/ibm18es.seek")),
    ("ibm18es.trace", include_str!("../../../../data/disksim/ibm18es.trace")),
];

/// The embedded file at `path`, if `path` is under [`DIR`] and names one.
pub fn lookup(path: &Path) -> Option<&'static str> {
    let name = path.strip_prefix(DIR).ok()?.to_str()?;
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every embedded file is byte for byte the repository's.
    #[test]
    fn embedded_files_are_the_repositorys() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim");
        for (name, text) in FILES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text, "{name}");
        }
        assert!(lookup(&Path::new(DIR).join("atlas10k.parv")).is_some());
        assert!(lookup(Path::new("data/disksim/atlas10k.parv")).is_none());
    }
}
