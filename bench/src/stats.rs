//! Order statistics over a handful of samples.
//!
//! Percentiles use the nearest-rank method (always an observed sample, never
//! an interpolation), which is the honest choice for 15 samples: a p90 of 15
//! runs is the 14th fastest run. The median of an even count is the mean of
//! the two middle samples.

/// The median, minimum and 90th percentile of one measured quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub p90: f64,
}

impl Summary {
    /// `None` for no samples; NaNs are not expected (times and sizes only).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let sorted = sorted(samples);
        Some(Summary {
            median: median_of_sorted(&sorted)?,
            min: *sorted.first()?,
            p90: nearest_rank_of_sorted(&sorted, 90.0)?,
        })
    }
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// The median of unsorted samples.
pub fn median(samples: &[f64]) -> Option<f64> {
    median_of_sorted(&sorted(samples))
}

fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// The smallest sample such that at least `percent` % of the samples are at
/// or below it.
fn nearest_rank_of_sorted(sorted: &[f64], percent: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((percent / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The `percent` percentile of unsorted samples, by nearest rank.
pub fn percentile(samples: &[f64], percent: f64) -> Option<f64> {
    nearest_rank_of_sorted(&sorted(samples), percent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn p90_is_an_observed_sample_by_nearest_rank() {
        let fifteen: Vec<f64> = (1..=15).rev().map(f64::from).collect();
        let s = Summary::of(&fifteen).expect("samples");
        assert_eq!(s.min, 1.0);
        assert_eq!(s.median, 8.0);
        // ceil(0.9 * 15) = 14th smallest.
        assert_eq!(s.p90, 14.0);

        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(Summary::of(&ten).expect("samples").p90, 9.0);
        assert_eq!(Summary::of(&[5.0]).expect("one").p90, 5.0);
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn p99_of_a_thousand() {
        let thousand: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        assert_eq!(percentile(&thousand, 99.0), Some(990.0));
        assert_eq!(percentile(&thousand, 50.0), Some(500.0));
        assert_eq!(percentile(&[], 99.0), None);
    }
}
