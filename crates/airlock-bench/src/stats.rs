//! Order statistics over timing samples: the medians and tails every figure reports.

/// What a set of samples comes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Summarises `samples` (sorted in place). Percentiles are nearest-rank; an empty set
/// summarises to zeros.
pub fn summarize(samples: &mut [u64]) -> Summary {
    samples.sort_unstable();
    Summary {
        count: samples.len(),
        p50: percentile(samples, 50.0),
        p99: percentile(samples, 99.0),
        max: samples.last().copied().unwrap_or(0) as f64,
    }
}

/// The nearest-rank `p`th percentile of sorted `samples`.
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

/// The median of a few repeated measurements (compile times, rates).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<u64> = (1..=100).rev().collect();
        let summary = summarize(&mut samples);
        assert_eq!(summary.count, 100);
        assert_eq!(summary.p50, 50.0);
        assert_eq!(summary.p99, 99.0);
        assert_eq!(summary.max, 100.0);
        assert_eq!(summarize(&mut []).p99, 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
