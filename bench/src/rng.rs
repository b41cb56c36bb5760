//! A tiny deterministic generator (SplitMix64) for the generated inputs.
//!
//! Invariant: the same seed gives the same sequence on every machine and
//! build, so a generated stream or tree is the same input from run to run
//! (and a cached tree matches what the code would generate now, as long as
//! its version string is unchanged). Not for anything secret.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..high` (`high` > `low`); the tiny modulo bias does
    /// not matter for generated inputs.
    pub fn range(&mut self, low: usize, high: usize) -> usize {
        let span = (high - low).max(1) as u64;
        low + (self.next_u64() % span) as usize
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_deterministic_and_in_range() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            let n = r.range(3, 9);
            assert!((3..9).contains(&n));
        }
    }
}
