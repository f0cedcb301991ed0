//! The machines' deterministic random numbers.
//!
//! Hand-written on purpose: the sequence is part of the machines' contract (the same seed gives
//! the same request script, retry jitter and generated versions on every platform and in
//! every release, which the conformance tests and recorded runs rely on); `rand`'s generators
//! do not promise a stable sequence across versions and bring more than these ten lines.

/// SplitMix64's increment (the golden ratio in 64-bit fixed point).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64: the small deterministic PRNG machines draw randomness from (retry jitter,
/// generated versions). Same seed, same sequence, on every platform.
///
/// ```
/// use rowkit_statemachines::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The `n`-th output (from 0) of the generator seeded with `seed`, in O(1): SplitMix64's
    /// state after `n` draws is `seed + n * increment`. Lets many threads draw from one logical
    /// stream with a single atomic counter and no lock.
    ///
    /// ```
    /// use rowkit_statemachines::SplitMix64;
    /// let mut g = SplitMix64::new(42);
    /// let third = (0..3).map(|_| g.next_u64()).last().unwrap();
    /// assert_eq!(SplitMix64::nth_output(42, 2), third);
    /// ```
    pub fn nth_output(seed: u64, n: u64) -> u64 {
        SplitMix64::new(seed.wrapping_add(n.wrapping_mul(GOLDEN_GAMMA))).next_u64()
    }

    /// A uniform value in `0..bound` (0 when `bound` is 0), without modulo bias.
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        let zone = u64::MAX - u64::MAX % bound;
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % bound;
            }
        }
    }

    /// A uniform float in `[0, 1)` (53 random bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
