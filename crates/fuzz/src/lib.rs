//! iosched-fuzz: a fuzz harness over every parser of iosched, in `tests/fuzz.rs`. The
//! crate has no code of its own; see that file and `docs/fuzzing.md`.
