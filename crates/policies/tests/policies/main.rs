//! Integration tests of iosched-policies (one binary): golden scenarios, property tests
//! of the invariants every policy keeps, and registry errors.

mod bfq;
mod golden;
mod kyber;
mod props;
mod registry;
mod request_alloc;
mod steady_alloc;
