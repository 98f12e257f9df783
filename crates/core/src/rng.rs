//! A small deterministic random number generator (SplitMix64): the same seed gives the
//! same sequence on every platform. The one generator of the project — workloads, the
//! disk model's measurements and the real runtime's offsets all use it. Not for
//! cryptography.

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (the seed is mixed before use).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    /// A generator whose internal state is exactly `state` (no mixing).
    pub const fn from_state(state: u64) -> Self {
        Rng(state)
    }
    /// A generator derived from this seed for stream `n` (independent sequences).
    pub fn derive(seed: u64, n: u64) -> Self {
        let mut r = Rng::new(seed.wrapping_add(n.wrapping_mul(0xD1B5_4A32_D192_ED03)));
        r.next_u64();
        r
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
